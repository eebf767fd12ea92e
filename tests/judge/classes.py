"""A small class of C submissions for the class judge's tests: right, slow, wrong, crashing, unbuildable,
and one in the course's layout (a Makefile)."""

from __future__ import annotations

import shutil
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cpu_program" / "attention.c"
CASES = "odd_17x48,odd_100x32"
ORDER = ["alice", "bob", "carol", "dave", "erin"]  # the scoreboard's order for this class
RANKS = {"alice": 1, "bob": 2, "carol": None, "dave": None, "erin": None}


def wrapping(body_before_main: str, before_call: str = "") -> str:
    """A C file that is the example program (its text inlined: a judged build sees only its own files), with
    something added before it runs."""
    return (f"#include <unistd.h>\n#include <stdlib.h>\n{body_before_main}\n#define main attention_main\n"
            f"{EXAMPLE.read_text()}\n#undef main\n"
            f"int main(int argc, char **argv) {{ {before_call} return attention_main(argc, argv); }}\n")


def _class_mode() -> str:
    """required where a bubblewrap sandbox can be made here, else none (a class refuses auto's fallback)."""
    from attnbench.sandbox.room import Sandbox, SandboxSettings, SandboxUnavailable

    try:
        Sandbox.open(None, SandboxSettings("required")).close()
        return "required"
    except SandboxUnavailable:
        return "none"


CLASS_MODE = _class_mode()


def class_sandbox():
    """The sandbox settings the class tests judge with (see _class_mode)."""
    from attnbench.sandbox.room import SandboxSettings

    return SandboxSettings(CLASS_MODE)


def can_build() -> bool:
    return shutil.which("cc") is not None and shutil.which("make") is not None


def make_class(folder: Path) -> Path:
    """Write the class into folder; returns it."""
    alice = folder / "alice"  # the course's layout: a Makefile that builds hw4
    alice.mkdir()
    shutil.copy(EXAMPLE, alice / "attention.c")
    (alice / "Makefile").write_text("hw4: attention.c\n\tcc -O2 -o hw4 attention.c -lm\n")
    (folder / "bob.c").write_text(wrapping("", "usleep(400000);"))  # right, but 0.4 s slower per case
    (folder / "carol.c").write_text(wrapping("#define OFF_BY_ONE"))  # one element off in every output
    (folder / "dave.c").write_text("#include <stdlib.h>\nint main(void) { abort(); }\n")  # crashes
    (folder / "erin.c").write_text("int main(void) { return 0 }\n")  # does not build
    (folder / "notes.txt").write_text("not a submission")
    return folder


def verdicts(board) -> dict[str, dict[str, str]]:
    return {row.name: {case: e.verdict for case, e in row.entries.items()} for row in board.rows}


def thief(class_folder: Path) -> str:
    """A submission that runs another submission's program instead of its own: it looks where the class's
    built programs and their sandboxes' copies live, and in the class folder, and runs the first it finds."""
    return f'''#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {{
    const char *patterns[] = {{"{class_folder}/*/hw4", "/tmp/attnbench-class-*/*/hw4",
                               "/tmp/attnbench-class-*/*/*/hw4", "/tmp/attnbench-judge-*/program/*", NULL}};
    char self[PATH_MAX];
    if (!realpath(argv[0], self)) self[0] = 0;
    for (int p = 0; patterns[p]; ++p) {{
        glob_t found;
        if (glob(patterns[p], 0, NULL, &found) != 0) continue;
        for (size_t i = 0; i < found.gl_pathc; ++i) {{
            char other[PATH_MAX];
            if (realpath(found.gl_pathv[i], other) && strcmp(other, self) != 0 && access(other, X_OK) == 0) {{
                execv(other, argv);
            }}
        }}
    }}
    fprintf(stderr, "thief: found no other submission to run\\n");
    return 3;
}}
'''
