"""A class's submissions: finding them in what the user named, and building each into a program.

A submission is one of:
- a folder holding the course's files (a `Makefile`, or `hw4.cu`, and `modules.list` if present) or an
  executable;
- a `.cu` file (built with nvcc) or a `.c` file (built with cc);
- an executable file.
A folder that is none of these is a folder OF submissions: each entry in it is one. Builds run in a
copy of the submission, in the judge's sandbox (`attnbench.judge.sandbox`: the build sees its own files
and the system's, not the other submissions or the suite), under a time limit and resource limits; a
failed build is one line with the compiler's first error lines, and never stops the others.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from attnbench.backends.program import ProcessLimits, ProgramError, run_process
from attnbench.judge.sandbox import Sandbox, SandboxSettings
from attnbench.kernels.nvcc import first_error_lines

COURSE_EXECUTABLE = "hw4"  # the course's Makefile builds hw4 from hw4.cu
BUILD_TIMEOUT_S = 300.0
ERROR_LINES = 3
BUILD_FILE_BYTES = 1 << 30  # object files and a fat binary: far above a program's own output limit


@dataclass(frozen=True)
class Submission:
    """One submission as found: its name, where it came from, and how it is built."""

    name: str
    source: Path
    how: str  # "make", "nvcc", "cc" or "ready" (an executable already)

    def describe(self) -> str:
        return {"make": "built with make", "nvcc": "built with nvcc", "cc": "built with cc",
                "ready": "an executable"}[self.how]


@dataclass(frozen=True)
class Built:
    """A submission's build: the program to judge, or why there is none."""

    submission: Submission
    program: Path | None
    message: str  # the first error lines of a failed build, or a short note on a good one

    @property
    def ok(self) -> bool:
        return self.program is not None


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _how_folder(folder: Path) -> str | None:
    """How a folder builds, if it is a submission itself."""
    if (folder / "Makefile").is_file() or (folder / "makefile").is_file():
        return "make"
    if (folder / f"{COURSE_EXECUTABLE}.cu").is_file():
        return "nvcc"
    if _executable(folder / COURSE_EXECUTABLE):
        return "ready"
    return None


def _how_file(path: Path) -> str | None:
    if path.suffix == ".cu":
        return "nvcc"
    if path.suffix == ".c":
        return "cc"
    return "ready" if _executable(path) else None


def _name(path: Path) -> str:
    return path.name if path.is_dir() else path.stem if path.suffix in (".cu", ".c") else path.name


def find_submissions(named: Sequence[str | Path]) -> list[Submission]:
    """Every submission in what was named (files, submission folders, or folders of submissions)."""
    found: list[Submission] = []
    for item in map(Path, named):
        if not item.exists():
            raise ProgramError(f"{item}: no such file or folder")
        how = _how_folder(item) if item.is_dir() else _how_file(item)
        if how is not None:
            found.append(Submission(_name(item), item.resolve(), how))
            continue
        if not item.is_dir():
            raise ProgramError(f"{item}: not a submission (an executable, a .cu or .c file, or a folder)")
        for entry in sorted(p for p in item.iterdir() if not p.name.startswith(".")):
            entry_how = _how_folder(entry) if entry.is_dir() else _how_file(entry)
            if entry_how is not None:
                found.append(Submission(_name(entry), entry.resolve(), entry_how))
    names = [s.name for s in found]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise ProgramError(f"two submissions are named {duplicate!r}: give them distinct names")
    if not found:
        raise ProgramError(f"{', '.join(map(str, named))}: no submission found (an executable, a .cu or .c file, "
                           "or a folder with a Makefile, hw4.cu or hw4)")
    return found



def _tool(how: str) -> str | None:
    return shutil.which({"make": "make", "nvcc": "nvcc", "cc": "cc"}[how])


def _command(submission: Submission, tool: str) -> list[str]:
    """The build, as it runs in the case folder (inside the sandbox, or in the fallback's folder)."""
    if submission.how == "make":
        return [tool]
    source = f"{COURSE_EXECUTABLE}.cu" if submission.source.is_dir() else submission.source.name
    if submission.how == "nvcc":
        return [tool, "-O3", "-o", COURSE_EXECUTABLE, source]
    return [tool, "-O2", "-o", COURSE_EXECUTABLE, source, "-lm"]


def _build_path() -> str:
    """PATH for the build: where make, nvcc and cc are on the host (under /usr they are in the sandbox too)."""
    found = [str(Path(t).parent) for t in (shutil.which(n) for n in ("nvcc", "cc", "make")) if t]
    return ":".join(dict.fromkeys([*found, "/usr/local/bin", "/usr/bin", "/bin"]))


def _program_after_build(folder: Path, before: set[str]) -> Path | None:
    """The course's hw4 if the build made it, else the one new executable it made."""
    if _executable(folder / COURSE_EXECUTABLE):
        return folder / COURSE_EXECUTABLE
    made = [p for p in folder.iterdir() if p.name not in before and _executable(p)]
    return made[0] if len(made) == 1 else None


def _staged(submission: Submission, build_root: Path) -> Path:
    """A copy of the submission's files in build_root/NAME (the submission itself is never touched)."""
    folder = build_root / submission.name
    if submission.source.is_dir():
        shutil.copytree(submission.source, folder, symlinks=True)
    else:
        folder.mkdir(parents=True)
        shutil.copy2(submission.source, folder / submission.source.name)
    return folder


def build(submission: Submission, build_root: Path, timeout_s: float = BUILD_TIMEOUT_S,
          settings: SandboxSettings | None = None) -> Built:
    """Build the submission in the sandbox; its program lands in build_root/NAME. Never raises for a bad
    submission (SandboxUnavailable, for --sandbox required, does)."""
    folder = _staged(submission, build_root)
    if submission.how == "ready":
        program = folder / (COURSE_EXECUTABLE if submission.source.is_dir() else submission.source.name)
        return Built(submission, program, "an executable, not built")
    tool = _tool(submission.how)
    if tool is None:
        return Built(submission, None, f"{submission.how} is not on this machine's PATH, so it could not be built")
    settings = settings or SandboxSettings()
    sandbox = Sandbox.open(None, settings)
    try:
        paths = sandbox.prepare(submission.name, None, files=folder)
        before = {p.name for p in paths.folder.iterdir()}
        inside = ["/usr/bin/env", f"PATH={_build_path()}", *_command(submission, tool)]
        limits = ProcessLimits(BUILD_FILE_BYTES, settings.processes, None, int(4 * timeout_s))
        outcome = run_process(sandbox.command(inside, paths), paths.folder, timeout_s, limits=limits,
                              user=sandbox.user, env=sandbox.case_env(paths), logs=paths.logs)
        made = _program_after_build(paths.folder, before) if outcome.returncode == 0 else None
        if made is not None:
            shutil.copy2(made, folder / COURSE_EXECUTABLE)
        sandbox.finish(paths)
    finally:
        sandbox.close()
    if outcome.timed_out:
        return Built(submission, None, f"the build ran past {timeout_s:g} s and was stopped")
    if outcome.returncode != 0:
        return Built(submission, None, f"the build failed (exit {outcome.returncode}): "
                                       f"{first_error_lines(outcome.stderr_tail, ERROR_LINES)}")
    if made is None:
        return Built(submission, None, f"the build made no {COURSE_EXECUTABLE} (nor one other executable)")
    return Built(submission, folder / COURSE_EXECUTABLE, f"{submission.describe()} in {outcome.wall_s:.1f} s")

