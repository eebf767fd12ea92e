"""attnbench.judge.classroom and `api.judge_class`: a small class of C submissions built and judged on the
CPU: correct, slow, wrong, crashing, one that does not build, one with a Makefile; the order is asserted."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from attnbench.api import programs as api_programs
from attnbench.cases.testcase import Shape
from attnbench.judge import classroom as classroom_module
from attnbench.judge.course_judge import CRASH, WRONG_ANSWER
from attnbench.judge.time_limits import load_time_limits
from attnbench.results.judge_events import SubmissionBuilt
from attnbench.results.scoreboard import CaseEntry, SubmissionRow
from attnbench.sandbox.program_run import WarmUp
from tests.judge.classes import CASES, CLASS_MODE, ORDER, RANKS, can_build, class_sandbox

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"





def test_a_class_is_built_judged_ranked_and_the_top_rerun(classroom):
    events = []
    board = api_programs.judge_class([classroom], CASES, time_limits="none", sandbox=class_sandbox(),
                                     listener=events.append)
    assert [row.name for row in board.rows] == ORDER
    assert {row.name: row.rank for row in board.rows} == RANKS
    rows = {row.name: row for row in board.rows}
    assert rows["alice"].passed == rows["bob"].passed == 2
    assert rows["bob"].total_s > rows["alice"].total_s + 0.6
    assert {e.verdict for e in rows["carol"].entries.values()} == {WRONG_ANSWER}
    assert {e.verdict for e in rows["dave"].entries.values()} == {CRASH}
    assert not rows["erin"].built and "error" in rows["erin"].build_message and rows["erin"].entries == {}
    # the top rows ran every passed case three times; their case time is the median of the three
    for name in ("alice", "bob"):
        assert rows[name].reruns == 3 and all(len(e.runs_s) == 3 for e in rows[name].entries.values())
    assert rows["carol"].reruns == 1
    assert SubmissionBuilt("erin", False) in events
    assert board.cases == ["odd_17x48", "odd_100x32"] and not board.interrupted
    assert "passed first" in board.settings["ranking"]


def test_the_scoreboard_saves_as_strict_json(classroom, tmp_path):
    from attnbench.output.export.scoreboard_export import save_scoreboard
    from attnbench.results.scoreboard import load_scoreboard

    board = api_programs.judge_class([classroom / "alice", classroom / "dave.c"], ["odd_17x48"],
                                     time_limits="none", rerun_top=0, sandbox=class_sandbox())
    paths = save_scoreboard(board, tmp_path, "class", with_html=True)
    assert [p.suffix for p in paths] == [".json", ".csv", ".md", ".html"]

    def refuse(constant):
        raise ValueError(constant)

    json.loads(paths[0].read_text(), parse_constant=refuse)
    again = load_scoreboard(paths[0])
    assert [r.name for r in again.rows] == ["alice", "dave"] and again.rows[0].rank == 1
    assert "alice" in paths[1].read_text() and "<table>" in paths[3].read_text()


def test_bad_arguments_are_one_line(tmp_path):
    from attnbench.errors import AttnbenchError

    with pytest.raises(AttnbenchError, match="no such file"):
        api_programs.judge_class([tmp_path / "missing"], "odd_17x48")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AttnbenchError, match="no submission found"):
        api_programs.judge_class([tmp_path / "empty"], "odd_17x48")


def test_one_worker_or_two_give_the_same_verdicts(classroom, monkeypatch):
    from tests.judge.classes import verdicts

    monkeypatch.setenv("ATTNBENCH_CPU_WORKERS", "2")
    one = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, gpus="0",
                                    sandbox=class_sandbox())
    two = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, gpus="all",
                                    sandbox=class_sandbox())
    assert verdicts(one) == verdicts(two) and [r.name for r in two.rows] == ORDER
    assert {r.name: r.rank for r in two.rows} == RANKS
    assert one.settings["workers"] == ["cpu worker 0"] and two.settings["workers"] == ["cpu worker 0", "cpu worker 1"]
    top = next(r for r in two.rows if r.name == "alice")
    assert top.reruns == 3 and all(len(e.runs_s) == 3 for e in top.entries.values())
    assert {r.gpu for r in two.rows if r.built} == {"cpu worker (standing in for a GPU)"}


def test_a_submission_cannot_run_another_submissions_program(tmp_path):
    import shutil as sh

    from attnbench.judge.classroom import ClassSettings, confinement
    from attnbench.judge.course_judge import load_time_limits
    from tests.judge.classes import EXAMPLE, thief

    if not can_build():
        pytest.skip("no C compiler or make")
    if not confinement(ClassSettings(load_time_limits("none"))).sandboxed:
        pytest.skip("no bubblewrap sandbox here: the fallback does not keep a class's programs apart")
    alice = tmp_path / "alice"
    alice.mkdir()
    sh.copy(EXAMPLE, alice / "attention.c")
    (alice / "Makefile").write_text("hw4: attention.c\n\tcc -O2 -o hw4 attention.c -lm\n")
    sh.copy(tmp_path / "alice" / "attention.c", tmp_path / "ready.c")
    (tmp_path / "frank.c").write_text(thief(tmp_path))
    board = api_programs.judge_class([tmp_path], CASES, time_limits="none", rerun_top=0, sandbox=class_sandbox())
    rows = {r.name: r for r in board.rows}
    assert rows["alice"].passed == 2 and rows["ready"].passed == 2
    assert rows["frank"].passed == 0 and {e.verdict for e in rows["frank"].entries.values()} == {CRASH}
    assert all("found no other submission" in e.message for e in rows["frank"].entries.values())


def test_the_command_line_judges_a_class_prints_and_saves_its_scoreboard(classroom, tmp_path):
    from click.testing import CliRunner

    from attnbench.cli import main

    runner = CliRunner()
    result = runner.invoke(main, ["judge", str(classroom), "--cases", CASES, "--time-limits", "none",
                                  "--rerun-top", "1", "--sandbox", CLASS_MODE, "--results-dir", str(tmp_path), "--html"])
    assert result.exit_code == 0, result.output
    assert "scoreboard: 5 submissions, 2 cases" in result.output and "ranks: ranked within each GPU kind" in result.output
    assert re.search(r"judging took \d+\.\d\dx the programs' runs: [\d.]+ s for [\d.]+ s of runs "
                     r"\(first runs, reruns and warm-ups, passed or not; builds", result.output)
    # saved row by row, then whole: a file the atomic writer replaced is unlinked by a thread joined at exit
    saved = sorted(p.suffix for p in tmp_path.iterdir() if not p.name.startswith("."))
    assert saved == [".csv", ".html", ".json", ".md"]
    refused = runner.invoke(main, ["judge", str(classroom), "--launcher", "env", "--cases", CASES])
    assert refused.exit_code == 2 and "--launcher and --args are for one program" in refused.output


def test_workers_get_cpu_cores_of_their_own_and_the_parent_keeps_a_share():
    from attnbench.judge.class_work import core_plan

    parent, workers = core_plan(2, range(16))
    assert parent == [0, 1, 2, 3, 4] and workers == [[5, 6, 7, 8, 9], [10, 11, 12, 13, 14, 15]]
    every = parent + [c for w in workers for c in w]
    assert sorted(every) == list(range(16)) and len(set(every)) == 16  # disjoint, none lost
    assert core_plan(8, range(128))[1][0] == list(range(14, 28))
    assert core_plan(2, [0, 1]) == ([0], [[0], [1]])  # too few: shared, said by the saved plan


def test_each_run_adds_to_the_class_history_which_shows_best_and_latest(classroom, tmp_path):
    from click.testing import CliRunner

    from attnbench.cli import main

    runner = CliRunner()
    args = ["judge", str(classroom / "alice"), str(classroom / "bob.c"), str(classroom / "dave.c"), "--cases",
            "odd_17x48", "--time-limits", "none", "--rerun-top", "0", "--sandbox", CLASS_MODE,
            "--results-dir", str(tmp_path)]
    for _ in range(2):
        assert runner.invoke(main, args).exit_code == 0
    assert runner.invoke(main, [*args, "--html"]).exit_code == 0
    assert len(list(tmp_path.glob("*.json"))) == 3  # each run added, none replaced
    past = {h.name: h for h in api_programs.class_history(tmp_path)}
    assert past["alice"].runs == past["bob"].runs == past["dave"].runs == 3
    assert past["alice"].best.passed == 1 and past["alice"].best.total_s <= past["alice"].latest.total_s
    assert past["dave"].best.passed == 0
    shown = runner.invoke(main, ["judge", "--history", str(tmp_path)])
    assert shown.exit_code == 0 and "history of 3 submissions" in shown.output and "alice" in shown.output
    page = next(tmp_path.glob("*.html")).read_text()
    assert "History: best and latest" in page and page.count("<tr>") == 4 + 4  # the board, then the history


def test_the_scoreboard_is_saved_after_each_case_so_a_killed_judge_leaves_the_cases_done(classroom, tmp_path):
    from attnbench.output.export.scoreboard_export import RowByRow
    from attnbench.results.scoreboard import load_scoreboard

    saver = RowByRow(tmp_path, lambda board: "class")
    seen = []

    def checkpoint(board):
        saver(board)
        saved = load_scoreboard(saver.paths[0])  # what a judge killed right now would leave
        seen.append(([r.name for r in saved.rows], sum(len(r.entries) for r in saved.rows), saved.interrupted))
        # the fresh inputs' seeds are the judge's until the class ends: a later program could read this file
        assert isinstance(board.settings["seeds"], dict) and "0x" not in saver.paths[0].read_text()

    board = api_programs.judge_class([classroom / "alice", classroom / "dave.c"], ["odd_17x48"],
                                     time_limits="none", rerun_top=0, sandbox=class_sandbox(), checkpoint=checkpoint)
    # after the builds, then after each case judged, whatever the executor
    assert seen == [(["alice", "dave"], 0, True), (["alice", "dave"], 1, True), (["alice", "dave"], 2, True)]
    paths = saver.finish(board)
    shown = sorted(p for p in tmp_path.iterdir() if not p.name.startswith("."))  # a replaced file is unlinked later
    assert paths == saver.paths and shown == sorted(paths)  # one set of files, rewritten
    final = load_scoreboard(paths[0])
    assert not final.interrupted and final.rows[0].rank == 1
    assert final.settings["oom_killer"].startswith("programs 1000")
    assert isinstance(final.settings["seeds"], dict) and final.settings["seeds"]  # saved once it ended


def test_a_class_judged_on_all_of_t01_to_t30_shows_the_courses_grade_and_a_partial_one_none(tmp_path, monkeypatch):
    """The suite's t01-t30 shrunk to small shapes (the real ones are gigabytes with hours of CPU references):
    a right program is graded 60, one wrong wherever N = 5 loses 3 for each such case."""
    if not can_build():
        pytest.skip("no C compiler or make")
    from dataclasses import replace

    from attnbench.cases import suite
    from attnbench.cases.testcase import Shape
    from attnbench.output.tables.scoreboard_table import scoreboard_lines, scoreboard_rows
    from tests.judge.classes import wrapping

    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "data"))  # shrunk shapes: files of their own

    for i in range(1, 31):
        name = f"t{i:02d}"
        small = replace(suite.SUITE[name], shape=Shape(1 + i % 2, 4 + i % 3, 8), input_sha256=None)
        monkeypatch.setitem(suite.SUITE, name, small)
    wrong_at_5 = sum(1 for i in range(1, 31) if 4 + i % 3 == 5)
    (tmp_path / "right.c").write_text(wrapping(""))
    spoil = ("int B_N_d[3]; FILE *in = fopen(argv[1], \"rb\"); fread(B_N_d, 4, 3, in); fclose(in); "
             "int code = attention_main(argc, argv); if (B_N_d[1] == 5) { FILE *out = fopen(argv[2], \"r+b\"); "
             "float big = 1000.0f; fwrite(&big, 4, 1, out); fclose(out); } return code;")
    (tmp_path / "n5.c").write_text(wrapping("#include <stdio.h>").replace(
        "return attention_main(argc, argv); }", spoil + " }"))
    board = api_programs.judge_class([tmp_path / "right.c", tmp_path / "n5.c"], "t01-t30", time_limits="course",
                                     rerun_top=0, sandbox=class_sandbox(), fresh_inputs=False)
    grades = {row.name: board.grade(row) for row in board.rows}
    assert grades == {"right": 60, "n5": 60 - 3 * wrong_at_5}
    header, rows = scoreboard_rows(board)
    assert header[3] == "grade" and [r[3].text for r in rows] == ["60", str(60 - 3 * wrong_at_5)]
    assert any(line.startswith("grade: the course's correctness grade") for line in scoreboard_lines(board))
    partial = api_programs.judge_class([tmp_path / "right.c"], "t01-t29", time_limits="none", rerun_top=0,
                                       sandbox=class_sandbox(), fresh_inputs=False)
    assert "grade" not in scoreboard_rows(partial)[0] and partial.grade(partial.rows[0]) is None


def test_at_80_columns_every_unranked_row_says_why_under_the_table(classroom, tmp_path, monkeypatch):
    import io

    from click.testing import CliRunner
    from rich.console import Console

    from attnbench.cli import judge_commands, main
    from attnbench.output.render import terminal

    narrow = Console(file=io.StringIO(), width=80, emoji=False)
    monkeypatch.setattr(terminal, "console", narrow)
    monkeypatch.setattr(judge_commands, "console", narrow)
    result = CliRunner().invoke(main, ["judge", str(classroom), "--cases", "odd_17x48", "--time-limits", "none",
                                       "--rerun-top", "0", "--sandbox", CLASS_MODE, "--no-save"])
    assert result.exit_code == 0, result.output
    printed = narrow.file.getvalue()
    joined = " ".join(printed.split())  # the lines under the table are whole (the terminal wraps them)
    assert "erin: not judged: the build failed: cc -O2 -o hw4 erin.c -lm (exit 1): erin.c:1:" in joined
    assert "dave: unranked: it passed no case; first failed case odd_17x48: CRASH" in joined
    assert "carol: unranked: it passed no case; first failed case odd_17x48: WRONG" in joined


def test_the_history_keeps_a_failed_build_and_refuses_options_it_would_ignore(classroom, tmp_path):
    from click.testing import CliRunner

    from attnbench.cli import main

    runner = CliRunner()
    args = ["judge", str(classroom / "alice"), str(classroom / "erin.c"), "--cases", "odd_17x48", "--time-limits",
            "none", "--rerun-top", "0", "--sandbox", CLASS_MODE, "--results-dir", str(tmp_path)]
    assert runner.invoke(main, args).exit_code == 0
    past = {h.name: h for h in api_programs.class_history(tmp_path)}
    assert set(past) == {"alice", "erin"} and not past["erin"].latest.built
    shown = runner.invoke(main, ["judge", "--history", str(tmp_path)])
    assert shown.exit_code == 0 and "build failed" in shown.output, shown.output
    for extra in (["--json"], [str(classroom / "alice")], ["--gpus", "all"]):
        refused = runner.invoke(main, ["judge", "--history", str(tmp_path), *extra])
        assert refused.exit_code == 2 and "--history" in refused.output, refused.output


def test_one_program_refuses_gpus_and_checks_its_results_folder_before_judging(classroom, tmp_path):
    from click.testing import CliRunner

    from attnbench.cli import main

    program = tmp_path / "prog"
    program.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    program.chmod(0o700)
    (tmp_path / "afile").write_text("")
    for extra in (["--gpus", "all"], ["--results-dir", str(tmp_path / "afile")]):
        result = CliRunner().invoke(main, ["judge", str(program), "--cases", "odd_17x48", "--sandbox", "none", *extra])
        assert result.exit_code == 2 and "error:" in result.output, result.output
    assert not (tmp_path / "ran").exists()  # refused before the program ran


def test_a_submission_whose_warm_up_sealed_an_empty_cache_is_not_warmed_up_again(monkeypatch, tmp_path):
    """A rerun round warms each row up again so that no run can tell how long ago its cache was written; a cache
    its warm-up left empty tells nothing, so the round's warm-up (a whole run of the program) is skipped. One
    that holds anything is warmed up again every round."""
    warmed: list[str] = []

    class Room:
        settings = None

        def __init__(self, cache):
            self.cache = cache

        @classmethod
        def open(cls, program, settings, cuda_cache=None, cache_writable=False):
            cuda_cache.mkdir(exist_ok=True)  # as the room makes it
            return cls(cuda_cache)

        def close(self):
            pass

    def warm(program, shape, sandbox, timeout):
        warmed.append(sandbox.cache.name)
        if sandbox.cache.name == "writes":
            (sandbox.cache / "stamp").write_text("sealed")
        return WarmUp()

    monkeypatch.setattr(classroom_module, "Sandbox", Room)
    monkeypatch.setattr(classroom_module, "warm_up", warm)
    settings = classroom_module.ClassSettings(load_time_limits("none"))
    for _ in range(3):  # the first round and two reruns
        for name in ("empty", "writes"):
            assert classroom_module.warm_up_entry(tmp_path / "hw4", Shape(1, 4, 8), "t01", settings,
                                                  tmp_path / name) == classroom_module.WarmedUp()
    assert warmed == ["empty", "writes", "writes", "writes"]



@pytest.mark.gpu
@pytest.mark.gpu_alone
def test_a_ptx_program_is_warmed_up_every_round_and_one_built_for_this_gpu_once(gpu, tmp_path, monkeypatch):
    """On a GPU: a program built as PTX only compiles its kernels in its warm-up, which fills its cache, so each
    rerun round warms it up again; one built for this GPU leaves its cache empty and is warmed up once. Both pass
    with three runs a case."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    source = EXAMPLES / "course_program" / "hw4.cu"
    virtual = gpu.arch.replace("sm_", "compute_")
    for name, flags in (("ptx", f"-arch={virtual} -code={virtual}"), ("native", f"-arch={gpu.arch}")):
        folder = tmp_path / "class" / name
        folder.mkdir(parents=True)
        shutil.copy(source, folder / "hw4.cu")
        (folder / "Makefile").write_text(f"hw4: hw4.cu\n\t{nvcc} -O3 {flags} -o hw4 hw4.cu\n")
    warmed: list[str] = []
    real = classroom_module.warm_up

    def counted(program, shape, sandbox, timeout):
        warmed.append(program.path.parent.parent.name.rsplit("-", 1)[0])  # builds/<slug>-<hash>/program/hw4
        return real(program, shape, sandbox, timeout)

    monkeypatch.setattr(classroom_module, "warm_up", counted)
    board = api_programs.judge_class([str(tmp_path / "class")], "t01,t02", time_limits="none", rerun_top=2,
                                     sandbox=class_sandbox())
    rows = {row.name: row for row in board.rows}
    for name in ("ptx", "native"):
        assert all(entry.passed and len(entry.runs_s) == 3 for entry in rows[name].entries.values()), rows[name]
    assert sorted(warmed) == ["native", "ptx", "ptx", "ptx"], warmed


def test_a_lost_rerun_round_keeps_the_rows_runs_with_a_note_and_says_so_on_the_board():
    from attnbench.judge.classroom import lose_round
    from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow

    row = SubmissionRow("alice", "alice.c", True, entries={"t01": CaseEntry("PASS", runs_s=[1.0, 1.2])}, reruns=3)
    board = Scoreboard(["t01"], [row])
    lose_round(board, [row], 3, "OSError: [Errno 28] No space left on device")
    assert board.settings["lost_rounds"] == {"rerun 3": "OSError: [Errno 28] No space left on device"}
    assert row.entries["t01"].runs_s == [1.0, 1.2] and row.reruns == 2 and "rerun round 3 was not run" in row.build_message


HANGS_IN_WARM_UP = """#include <stdio.h>
#include <string.h>
static void hang_in_warm_up(int argc, char **argv) {
    if (argc > 1 && strstr(argv[1], "warmup")) {  /* the warm-up's input is warmup.in */
        const char *cache = getenv("CUDA_CACHE_PATH");
        if (cache) {  /* a cache that is not empty: warmed up again every round */
            char path[4096];
            snprintf(path, sizeof path, "%s/keep", cache);
            FILE *kept = fopen(path, "w");
            if (kept) { fputs("x", kept); fclose(kept); }
        }
        for (;;) pause();
    }
}"""


def test_a_row_whose_warm_up_hangs_costs_one_timeout_a_class_says_so_and_the_honest_row_is_judged_as_before(
        tmp_path, monkeypatch):
    """Red team (issue 48): a program that hangs only in its untimed warm-up, leaving a file in its CUDA cache so
    that every rerun round warms it up again, cost the judge a whole timeout per round, and no row said which.
    Its warm-up's timeout forfeits its warm-ups (its runs start cold): one timeout a class, said on its row."""
    if not can_build():
        pytest.skip("no C compiler or make")
    from tests.judge.classes import EXAMPLE, wrapping

    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "hang.c").write_text(wrapping(HANGS_IN_WARM_UP, "hang_in_warm_up(argc, argv);"))
    (tmp_path / "class" / "honest.c").write_text(EXAMPLE.read_text())
    warm_ups: list[tuple[str, str | None]] = []
    real = classroom_module.warm_up

    def counted(program, shape, sandbox, timeout):
        warmed = real(program, shape, sandbox, timeout)
        built = program.path.parent.parent.name  # <class>/<name>.c-<hash>/program/hw4
        warm_ups.append((built.rsplit("-", 1)[0].removesuffix(".c"), warmed.ending))
        return warmed

    monkeypatch.setattr(classroom_module, "warm_up", counted)
    board = api_programs.judge_class([str(tmp_path / "class")], "odd_17x48", time_limits="none", timeout=2.0,
                                     rerun_top=2, sandbox=class_sandbox())
    rows = {row.name: row for row in board.rows}
    assert all(row.reruns == 3 and row.entries["odd_17x48"].passed for row in rows.values()), rows  # 3 rounds
    assert [ending for name, ending in warm_ups if name == "hang"] == ["TIMEOUT"]  # one warm-up, not three
    assert [ending for name, ending in warm_ups if name == "honest"] == [None]  # an empty cache: warmed up once
    assert "its warm-up ended TIMEOUT" in rows["hang"].build_message and "not warmed up again" in \
        rows["hang"].build_message
    assert "warm-up" not in rows["honest"].build_message and rows["hang"].warm_ups_s >= 2.0  # its hang: its time
    assert rows["honest"].rank is not None and rows["hang"].entries["odd_17x48"].program_s > 0


def test_a_failed_rerun_keeps_the_earlier_runs_program_time():
    """Red team (issue 49): a failed rerun replaced the case's entry, and its earlier runs left the programs' time
    in the judge's cost."""
    row = SubmissionRow("bob", "bob.c", True, entries={"t01": CaseEntry("PASS", "", [0.5], program_s=0.5)})
    assert classroom_module.add_run(row, "t01", CaseEntry("PASS", "", [0.25], program_s=0.25))
    assert not classroom_module.add_run(row, "t01", CaseEntry("WRONG", "wrong", [], program_s=3.0))
    assert row.entries["t01"].verdict == "WRONG" and row.entries["t01"].program_s == 3.75
    row.warm_ups_s = 1.0
    assert row.program_s == 4.75


def test_a_folder_that_is_no_submission_is_heard_as_not_judged_not_as_a_failed_build(tmp_path):
    """A class's empty folder printed "empty build: build failed" while it ran, though no build ran."""
    from attnbench.judge.submissions import Built, build, find_submissions

    (tmp_path / "empty").mkdir()
    (submission,) = find_submissions([tmp_path])
    events = []
    classroom_module.row_of(build(submission, tmp_path / "builds"), None, events.append)
    (heard,) = events
    assert not heard.ok and heard.not_built.startswith("not a submission: no Makefile")
    failed = []
    classroom_module.row_of(Built(submission, None, "the build failed: cc (exit 1)"), None, failed.append)
    assert failed == [SubmissionBuilt("empty", False)]  # a build that ran and failed is still "build failed"
    two = []
    classroom_module.row_of(Built(submission, None, "make hw4 ran, but it made two executables (a, b) and no hw4"),
                            None, two.append)
    assert two == [SubmissionBuilt("empty", False, "", "make hw4 ran, but it made two executables (a, b) and no hw4")]


def test_the_judges_failure_line_shows_attnbenchs_own_errors_as_their_sentence_and_others_with_their_type():
    """"the judge could not finish this: SlurmUnavailable: sbatch refused ..." showed a Python class name."""
    from attnbench.errors import AttnbenchError
    from attnbench.judge.classroom import failure_text

    assert failure_text(AttnbenchError("sbatch refused the jobs: \x1b[31mno partition")) == (
        "the judge could not finish this: sbatch refused the jobs: \\x1b[31mno partition")
    assert failure_text(OSError(28, "No space left on device")) == (
        "the judge could not finish this: OSError: [Errno 28] No space left on device")
