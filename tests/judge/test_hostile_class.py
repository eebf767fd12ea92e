"""A class of hostile submissions against the class judge (attnbench.sandbox.staging, .submissions,
.classroom): links of every kind, names that break folders and terminals, a tree too deep. Each gets the
verdict it should, the honest submission ranks first, nothing on the host changes (checksums and modes
of planted targets), and the scoreboard is made and saved."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

import pytest

from attnbench.api import programs as api_programs
from tests.judge.classes import CLASS_MODE, EXAMPLE, can_build, class_sandbox

CASE = "odd_17x48"
TINY_MAIN = "int main(void) { return 0; }\n"


@pytest.fixture(autouse=True)
def _needs_a_compiler():
    if not can_build():
        pytest.skip("no C compiler or make")


def _honest(folder: Path, name: str = "alice") -> None:
    (folder / name).mkdir()
    shutil.copy(EXAMPLE, folder / name / "attention.c")
    (folder / name / "Makefile").write_text("hw4: attention.c\n\tcc -O2 -o hw4 attention.c -lm\n")


def _state(path: Path) -> tuple[str, int] | None:
    """A host file's checksum and mode (None when it does not exist)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest(), info.st_mode


def _rows(board) -> dict:
    return {row.name: row for row in board.rows}


def test_links_of_every_kind_are_refused_and_the_host_is_untouched(tmp_path):
    host = tmp_path / "host"  # stands in for the host's own files, outside the class
    host.mkdir()
    secret = host / "root_only"
    secret.write_text("root's own file\n")
    secret.chmod(0o600)
    linked = host / "hard_target"
    linked.write_text("another host file\n")
    linked.chmod(0o600)
    planted = host / "planted"  # a dangling link's target: must never come to exist
    before = {p: _state(p) for p in (secret, linked, planted)}

    submissions = tmp_path / "class"
    submissions.mkdir()
    _honest(submissions)
    # hw4 a link to a root-only file: a judge that copies the build onto it overwrites the file
    (submissions / "link_root").mkdir()
    (submissions / "link_root" / "x.c").write_text(TINY_MAIN)
    (submissions / "link_root" / "Makefile").write_text("hw4: x.c\n\tcc -o hw4 x.c\n")
    (submissions / "link_root" / "hw4").symlink_to(secret)
    # hw4 a dangling link, and a build that makes its program setuid
    (submissions / "dangling").mkdir()
    (submissions / "dangling" / "x.c").write_text(TINY_MAIN)
    (submissions / "dangling" / "Makefile").write_text("hw4: x.c\n\tcc -o hw4 x.c && chmod 4755 hw4\n")
    (submissions / "dangling" / "hw4").symlink_to(planted)
    # a hard link to a host file, which the build appends to
    (submissions / "hardy").mkdir()
    os.link(linked, submissions / "hardy" / "notes.txt")
    (submissions / "hardy" / "x.c").write_text(TINY_MAIN)
    (submissions / "hardy" / "Makefile").write_text("hw4: x.c\n\techo pwned >> notes.txt; cc -o hw4 x.c\n")
    # a link in a subfolder, which the build reads
    (submissions / "deeplink" / "inc").mkdir(parents=True)
    (submissions / "deeplink" / "inc" / "leak.h").symlink_to(secret)
    (submissions / "deeplink" / "x.c").write_text('#include "inc/leak.h"\n' + TINY_MAIN)
    (submissions / "deeplink" / "Makefile").write_text("hw4: x.c\n\tcc -o hw4 x.c\n")
    # the whole submission a link to a folder elsewhere
    (submissions / "elsewhere").symlink_to(host, target_is_directory=True)
    (submissions / "file_link.c").symlink_to(secret)

    board = api_programs.judge_class([submissions], CASE, time_limits="none", rerun_top=0,
                                     sandbox=class_sandbox())
    rows = _rows(board)
    assert rows["alice"].rank == 1 and rows["alice"].passed == 1
    for name, words in [("link_root", "hw4: a symbolic link"), ("dangling", "hw4: a symbolic link"),
                        ("hardy", "notes.txt: a hard link to a file outside"),
                        ("deeplink", "inc/leak.h: a symbolic link"), ("elsewhere", "a symbolic link"),
                        ("file_link", "a symbolic link")]:
        assert not rows[name].built and rows[name].rank is None, name
        assert rows[name].build_message.startswith("refused: ") and words in rows[name].build_message, \
            rows[name].build_message
    assert {p: _state(p) for p in (secret, linked, planted)} == before
    assert not any(os.lstat(p).st_mode & (stat.S_ISUID | stat.S_ISGID) for p in host.iterdir())


def test_a_borrowed_program_is_refused(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    _honest(submissions)
    (submissions / "zed").mkdir()  # ships a ready program of its own
    shutil.copy(EXAMPLE, tmp_path / "attention.c")
    os.system(f"cc -O2 -o {submissions / 'zed' / 'hw4'} {tmp_path / 'attention.c'} -lm")
    (submissions / "borrow").mkdir()
    (submissions / "borrow" / "hw4").symlink_to("../zed/hw4")
    (submissions / "borrow_abs").mkdir()
    (submissions / "borrow_abs" / "hw4").symlink_to(submissions / "zed" / "hw4")
    board = api_programs.judge_class([submissions], CASE, time_limits="none", rerun_top=0,
                                     sandbox=class_sandbox())
    rows = _rows(board)
    assert rows["zed"].passed == 1 and rows["alice"].passed == 1
    for name in ("borrow", "borrow_abs"):
        assert not rows[name].built and "hw4: a symbolic link" in rows[name].build_message


ESC_NAME = "evil\x1b[2J\x1b]0;owned\x07"
FAKE_ROW = r"\033[2K\r\033[32m    1  mallory  PASS  0.001 s\033[0m"


def _strangers(folder: Path) -> None:
    """Submissions whose names and words are built to break the judge's folders and the terminal."""
    _honest(folder)
    (folder / ESC_NAME).mkdir()
    shutil.copy(EXAMPLE, folder / ESC_NAME / "attention.c")
    (folder / ESC_NAME / "Makefile").write_text("hw4: attention.c\n\tcc -O2 -o hw4 attention.c -lm\n")
    (folder / ("long" * 62)).mkdir()  # 248 characters: with the judge's own prefixes, past NAME_MAX
    (folder / ("long" * 62) / "hw4.c").write_text(TINY_MAIN)
    (folder / ("long" * 62) / "Makefile").write_text("hw4: hw4.c\n\tcc -o hw4 hw4.c\n")
    bad_name = os.fsdecode(b"caf\xe9\xff")  # not UTF-8
    (folder / bad_name).mkdir()
    (folder / bad_name / "Makefile").write_text("hw4:\n\tprintf 'int main(void){return 0;}' > x.c && cc -o hw4 x.c\n")
    deep = folder / "deep"
    deep.mkdir()
    (deep / "Makefile").write_text("hw4:\n\tcc -o hw4 -x c /dev/null\n")
    below = os.open(deep, os.O_RDONLY)
    for _ in range(3000):  # deeper than a path may be long: made by descriptors
        os.mkdir("d", dir_fd=below)
        inner = os.open("d", os.O_RDONLY, dir_fd=below)
        os.close(below)
        below = inner
    os.close(below)
    (folder / "builderr").mkdir()  # a build whose error draws a fake PASS row
    (folder / "builderr" / "Makefile").write_text(f"hw4:\n\t@printf 'x.c:1: error: {FAKE_ROW}\\n' >&2; exit 1\n")
    (folder / "stderr.c").write_text('#include <stdio.h>\nint main(void) { fprintf(stderr, "'
                                     + FAKE_ROW + '\\n"); return 1; }\n')


def test_strange_names_deep_trees_and_escape_sequences_never_stop_the_class(tmp_path, request):
    from click.testing import CliRunner

    from attnbench.cli import main
    from attnbench.results.scoreboard import load_scoreboard
    from attnbench.sandbox.staging import remove_tree

    submissions = tmp_path / "class"
    submissions.mkdir()
    request.addfinalizer(lambda: remove_tree(submissions / "deep"))  # pytest's own cleanup recurses
    _strangers(submissions)
    out = tmp_path / "results"
    result = CliRunner().invoke(main, ["judge", str(submissions), "--cases", CASE, "--time-limits", "none",
                                       "--rerun-top", "0", "--sandbox", CLASS_MODE, "--results-dir", str(out)])
    assert result.exit_code == 0, result.output
    shown = result.output
    assert "\x1b" not in shown and "\x07" not in shown and "\r" not in shown
    saved = sorted(out.glob("*.json"))
    assert len(saved) == 1 and not any("\x1b" in p.read_text() for p in out.iterdir())
    rows = _rows(load_scoreboard(saved[0]))
    escaped = rows[r"evil\x1b[2J\x1b]0;owned\x07"]  # the honest program under a name full of escapes
    assert rows["alice"].passed == escaped.passed == 1 and {rows["alice"].rank, escaped.rank} <= {1, 2}
    assert rows["long" * 62].built and rows[r"caf\xe9\xff"].built
    assert "nested deeper than 64" in rows["deep"].build_message
    assert r"\x1b[2K" in rows["builderr"].build_message
    assert all(r"\x1b[32m" in e.message for e in rows["stderr"].entries.values())


ADVERSARIAL = Path(__file__).resolve().parents[1] / "adversarial" / "programs"
SANDBOX_MODES = ["required", "none"]


def _sandboxed() -> bool:
    from attnbench.judge.classroom import ClassSettings, confinement
    from attnbench.judge.course_judge import load_time_limits
    from attnbench.sandbox.room import SandboxSettings

    try:
        return confinement(ClassSettings(load_time_limits("none"), sandbox=SandboxSettings("required"))).sandboxed
    except Exception:  # noqa: BLE001 - no sandbox here
        return False


@pytest.mark.parametrize("mode", SANDBOX_MODES)
def test_a_replayed_rerun_buys_no_rank(tmp_path, mode):
    from attnbench.sandbox.room import SandboxSettings
    from tests.judge.classes import wrapping

    if mode == "required" and not _sandboxed():
        pytest.skip("no bubblewrap sandbox here")
    if mode == "none" and os.geteuid() != 0:
        pytest.skip("the fallback keeps runs apart only as root (a uid of their own)")
    submissions = tmp_path / "class"
    submissions.mkdir()
    _honest(submissions)
    replayer = wrapping((ADVERSARIAL / "cache_replayer.h").read_text(),
                        "if (argc > 2 && replay(argv[1], argv[2])) return 0; usleep(500000);"
                        "{ int rc = attention_main(argc, argv); if (argc > 2) replay_store(argv[1], argv[2]); "
                        "return rc; }")
    (submissions / "replayer.c").write_text(replayer)
    board = api_programs.judge_class([submissions], CASE, time_limits="none", rerun_top=3,
                                     sandbox=SandboxSettings(mode))
    rows = _rows(board)
    assert rows["replayer"].passed == 1 and rows["replayer"].entries[CASE].runs_s
    assert min(rows["replayer"].entries[CASE].runs_s) > 0.45, rows["replayer"].entries[CASE].runs_s  # no hit
    assert rows["alice"].rank == 1 and not rows["alice"].tied and rows["replayer"].rank == 2


def _precomputed(folder: Path) -> None:
    """A submission that carries the suite's answer for CASE (its table made now, from the suite's seed)."""
    from attnbench.judge import course_judge as judging

    reference = judging.prepare_case(judging.cases_for(CASE)[0]).reference.astype("<f4").ravel()
    folder.mkdir()
    shutil.copy(ADVERSARIAL / "precomputed.c", folder / "precomputed.c")
    (folder / "table.h").write_text(f"#define ANSWER_FLOATS {reference.size}\nstatic const float ANSWER[] = {{"
                                    + ",".join(f"{float(x)!r}f" for x in reference) + "};\n")
    (folder / "Makefile").write_text("hw4: precomputed.c table.h\n\tcc -O2 -o hw4 precomputed.c\n")


@pytest.mark.parametrize("fresh", [True, False])
def test_precomputed_answers_fail_on_fresh_inputs(tmp_path, fresh):
    submissions = tmp_path / "class"
    submissions.mkdir()
    _honest(submissions)
    _precomputed(submissions / "answers")
    board = api_programs.judge_class([submissions], CASE, time_limits="none", rerun_top=1,
                                     sandbox=class_sandbox(), fresh_inputs=fresh)
    rows = _rows(board)
    if not fresh:  # on the suite's public inputs the trick works: that is why fresh inputs are the default
        assert rows["answers"].passed == 1
        return
    assert rows["answers"].entries[CASE].verdict == "WRONG" and rows["answers"].rank is None
    assert rows["alice"].rank == 1 and rows["alice"].reruns == 3
    seeds = board.settings["seeds"]
    assert set(seeds) == {"first", "rerun 2", "rerun 3"} and len({s[CASE] for s in seeds.values()}) == 3
    assert all(s[CASE].startswith("0x") and len(s[CASE]) == 34 for s in seeds.values())


def test_a_slower_row_that_idles_on_some_runs_buys_no_tie(tmp_path):
    from tests.judge.classes import wrapping

    submissions = tmp_path / "class"
    submissions.mkdir()
    _honest(submissions)
    # 0.1 s slower on every run, and 0.4 s more on about half of them: a wide spread of its own
    idle = ("unsigned char coin = 0; FILE *r = fopen(\"/dev/urandom\", \"rb\"); if (r) { fread(&coin, 1, 1, r); "
            "fclose(r); } usleep(100000 + (coin & 1) * 400000);")
    (submissions / "idler.c").write_text(wrapping("#include <stdio.h>", idle))
    board = api_programs.judge_class([submissions], CASE, time_limits="none", rerun_top=2, sandbox=class_sandbox())
    rows = _rows(board)
    assert rows["idler"].reruns == 3 and len(rows["idler"].entries[CASE].runs_s) == 3
    assert rows["alice"].rank == 1 and not rows["alice"].tied and rows["idler"].rank == 2


def test_a_row_spread_over_gpu_kinds_is_ranked_with_the_kind_that_ran_most():
    from attnbench.analysis.ranking import rank
    from attnbench.judge.class_work import device_of
    from attnbench.output.tables.scoreboard_table import scoreboard_rows
    from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow

    mixed = SubmissionRow("mixed", "m", True, entries={
        "t01": CaseEntry("PASS", runs_s=[1.0], device="H100"), "t02": CaseEntry("PASS", runs_s=[1.0], device="H200"),
        "t03": CaseEntry("PASS", runs_s=[1.0], device="H100")}, reruns=1)
    other = SubmissionRow("other", "o", True, gpu="H100", entries={
        t: CaseEntry("PASS", runs_s=[0.5], device="H100") for t in ("t01", "t02", "t03")}, reruns=1)
    device_of(mixed)
    assert mixed.gpu == "H100" and "H100 (2), H200 (1): ranked with H100" in mixed.gpu_note
    board = rank(Scoreboard(["t01", "t02", "t03"], [mixed, other]))
    assert [(r.name, r.rank) for r in board.rows] == [("other", 1), ("mixed", 2)]  # one group, not two
    assert "ranked with H100" in scoreboard_rows(board)[1][1][-1].text
