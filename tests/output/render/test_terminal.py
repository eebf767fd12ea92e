"""The terminal renderer's progress lines: the noise written as the tables write it."""

import pytest

from attnbench.cases.testcase import Shape
from attnbench.output.render.terminal import cell_line
from attnbench.results.measurement import Measurement
from attnbench.results.resultset import OK, Cell
from attnbench.results.stats import KernelStats


def cell_of(samples: list[float]) -> Cell:
    measurement = Measurement(variant="cpu", case="t02", shape=Shape(2, 8, 4), device="CPU", compute_s=0.1,
                              kernel=KernelStats(samples))
    return Cell("cpu", "t02", OK, "", measurement)


def test_an_unknown_noise_is_a_question_mark_not_nan():
    line = cell_line(cell_of([1.0, 1.1, 0.9]))
    assert "±?" in line and "nan" not in line.lower()
    assert "±?" not in cell_line(cell_of([1.0 + i / 1000 for i in range(12)]))


def _printed(monkeypatch, model, width: int, wide: bool | None = None) -> str:
    import io

    from rich.console import Console

    from attnbench.output.render import terminal

    capture = Console(file=io.StringIO(), width=width)
    monkeypatch.setattr(terminal, "console", capture)
    terminal.print_table(model, wide=wide)
    return capture.file.getvalue()


CASES = ["odd_1000x128", "odd_1000x64", "odd_100x32", "odd_100x80", "odd_17x48", "odd_33x64"]


def test_no_name_is_cut_at_80_columns_side_by_side_or_vertical(monkeypatch):
    from attnbench.output.tables.table_model import Column, TableModel

    matrix = TableModel("kernel time", [Column("variant")] + [Column(c, right=True) for c in CASES])
    matrix.add_row("cpu", *["51.317 ms ±?"] * len(CASES))
    listing = TableModel("variants", [Column("variant"), Column("constraints", wide=True), Column("report")])
    listing.add_row("qreg:fulltiles", "d in {32, 64}; N a multiple of 128 " * 4, "004 §3.10")
    sweep = TableModel("sweep", [Column("variant"), Column("B2048_N256_d32", right=True)])
    sweep.add_row("gemm", "1.0 ms")
    for model, names in ((matrix, CASES + ["variant"]), (listing, ["constraints", "qreg:fulltiles"]),
                         (sweep, ["B2048_N256_d32"])):
        for width in (40, 80, 200):
            text = _printed(monkeypatch, model, width, wide=True)
            words = text.split()
            assert all(name in words for name in names), f"{model.title} at {width}:\n{text}"
            assert max(len(line.rstrip()) for line in text.splitlines()) <= width


def test_a_cells_own_lines_print_as_lines_and_a_control_character_within_one_is_escaped(monkeypatch):
    from attnbench.output.tables.table_model import Column, TableModel

    model = TableModel("variants", [Column("variant"), Column("kernel")])
    model.add_row("kernels", "QKDotAndScalar\nRowMax\x1b[2J")
    text = _printed(monkeypatch, model, 120)
    assert "\\n" not in text and "\x1b[2J" not in text
    assert "RowMax\\x1b[2J" in text.split()
    assert sum("QKDotAndScalar" in line for line in text.splitlines()) == 1


@pytest.mark.parametrize("width", [200, 20], ids=["side-by-side", "vertical"])
def test_a_control_character_in_a_column_name_is_escaped(monkeypatch, width):
    """A saved run's variant is a column of `roof --saved`: one named with ESC printed it raw."""
    from attnbench.output.tables.table_model import Column, TableModel

    model = TableModel("roof", [Column("input"), Column("\x1b]0;pwn\x07", right=True), Column("[b]x")])
    model.add_row("t02", "55%", "y")
    text = _printed(monkeypatch, model, width)
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b" in text and "[b]x" in text


def test_the_matrix_progress_hears_the_runs_events(monkeypatch):
    """One listener shape: the executor's events (start, started, cell, a job's bars) become the bars and
    the lines; a refused cell is counted, not printed."""
    import io
    from contextlib import contextmanager

    from rich.console import Console

    from attnbench.output.render import terminal

    capture = Console(file=io.StringIO(), width=200)
    monkeypatch.setattr(terminal, "err_console", capture)
    bars: list[tuple] = []

    class Recording(terminal.MatrixProgress):
        @contextmanager
        def progress(self, description, total):
            bars.append(("open", description, total))
            yield lambda n: bars.append(("advance", description, n))
            bars.append(("close", description))

    from attnbench.results.matrix_events import (
        BarAdvanced,
        BarClosed,
        BarOpened,
        CellFinished,
        CellStarted,
        MatrixBegun,
    )

    refused = Cell("cpu32", "t02", "refused", "cpu32 needs d in {32}")
    with Recording("compare") as listener:
        for heard in (MatrixBegun(2, 10.0), BarOpened("generating t02", 3, 0), BarAdvanced("generating t02", 3, 0),
                      BarAdvanced("generating t02", 1, 1),  # another job's bar, never opened: nothing
                      BarClosed("generating t02", 0), CellStarted("cpu", "t02"),
                      CellFinished(cell_of([1.0, 1.1, 0.9]), 10.0), CellFinished(refused, 0.0)):
            listener(heard)
    assert bars == [("open", "generating t02", 3), ("advance", "generating t02", 3), ("close", "generating t02")]
    assert capture.file.getvalue() == cell_line(cell_of([1.0, 1.1, 0.9])) + "\n"
    assert listener._done == 2
    capture.file.seek(0)
    capture.file.truncate()
    named = cell_of([1.0, 1.1, 0.9])
    named.case = "e\x1b[31mvil.in"  # a user's input file, its name the case's label
    with Recording("compare") as listener:
        listener(MatrixBegun(1, 1.0))
        listener(CellFinished(named, 1.0))
    said = capture.file.getvalue()
    assert "\x1b" not in said and "e\\x1b[31mvil.in" in said, said


def test_the_judge_progress_prints_one_line_per_event_as_the_judge_always_has(monkeypatch):
    """The judge's adapter, by the event's type: one program's case judged; a class's build, case, failed rerun
    (a passed one prints nothing); text a submission wrote is printed escaped, on one line."""
    import io

    from rich.console import Console

    from attnbench.output.render import terminal
    from attnbench.results.judge_events import CaseJudged, ProgramCaseJudged, RerunJudged, SubmissionBuilt
    from attnbench.results.scoreboard import CaseEntry

    capture = Console(file=io.StringIO(), width=200)
    monkeypatch.setattr(terminal, "err_console", capture)
    passed, wrong = CaseEntry("PASS", "", [0.1]), CaseEntry("WRONG", "max error 0.2")
    for event in (ProgramCaseJudged(3, 10, "t03", "OVER LIMIT", 2.5), SubmissionBuilt("alice", True),
                  SubmissionBuilt("erin\x1b[2J", False), SubmissionBuilt("frank", False, "not a submission: \x1b[2J"),
                  SubmissionBuilt("gus", False, "", "make ran, but it made two executables (a, b\x1b[2J) and no hw4"),
                  CaseJudged("alice", "t01", passed),
                  RerunJudged("alice", "t01", passed), RerunJudged("alice", "t02", wrong), "an event of no type it knows"):
        terminal.judge_progress(event)
    assert capture.file.getvalue().splitlines() == [
        "[3/10] t03: OVER LIMIT 2.500 s", "alice build: built", "erin\\x1b[2J build: build failed",
        "frank: not judged: not a submission: \\x1b[2J",
        "gus build: make ran, but it made two executables (a, b\\x1b[2J) and no hw4", "alice t01: PASS",
        "alice t02: rerun WRONG"]


def test_a_class_phase_is_said_as_it_begins_then_every_tenth_of_it_with_the_time_left():
    from attnbench.analysis.time_left import ClassProgress
    from attnbench.output.render.terminal import judge_line, plan_line

    assert plan_line(ClassProgress("builds", 0, 8, 0.5, None, "8 submissions, 8 at a time")) == \
        "builds: 8 submissions, 8 at a time"
    assert plan_line(ClassProgress("builds", 3, 8, 2.0)) == "builds 3/8"  # of eight, each is a tenth or more
    said = [plan_line(ClassProgress("first runs", done, 240, 10.0, 750.4)) for done in range(241)]
    assert said[0] == "first runs, about 0:12:30 left"
    assert [line for line in said[1:] if line] == [f"first runs {n}/240, about 0:12:30 left" for n in range(24, 241, 24)]
    assert plan_line(ClassProgress("reruns, round 2 of 3", 7, 7, 90.0, 0.0)) == "reruns, round 2 of 3 7/7, about 0:00:00 left"
    assert judge_line(ClassProgress("first runs", 0, 2, 1.0, 3725.0, "1 submissions x 2 cases")) \
        == "first runs: 1 submissions x 2 cases, about 1:02:05 left"


def test_cuda_programs_not_judged_here_are_one_line_naming_the_first_few():
    from attnbench.output.render.terminal import judge_line
    from attnbench.results.judge_events import NotJudgedHere

    line = judge_line(NotJudgedHere(("ada", "bo"), "no NVIDIA GPU here (nvidia-smi lists no GPU)", 1))
    assert line == ("not judged: 2 CUDA programs (ada, bo), no NVIDIA GPU here (nvidia-smi lists no GPU); 1 other "
                    "submission judged as ever; judge them on a machine with a GPU, or on Slurm's nodes "
                    "(--executor slurm)")
    many = judge_line(NotJudgedHere(tuple(f"s{i}" for i in range(12)), "no NVIDIA GPU here (x)", 0))
    assert "12 CUDA programs (s0, s1, s2, s3, s4 and 7 more)" in many and "nothing else to judge" in many


def test_columns_0_is_taken_as_no_width_given_not_as_nothing_to_draw():
    """With COLUMNS=0 (some CI runners set it) every table and every error line came out empty: `cases` printed
    nothing with exit 0, a refused input nothing with exit 2."""
    import io

    from attnbench.output.render import terminal

    for columns in ("0", "00"):
        capture = terminal._Console(file=io.StringIO(), emoji=False, _environ={"COLUMNS": columns})
        capture.print("error: short.bin: 100 bytes", highlight=False)
        assert capture.width == 80 and capture.file.getvalue() == "error: short.bin: 100 bytes\n"
    narrow = terminal._Console(file=io.StringIO(), _environ={"COLUMNS": "30"})
    assert narrow.width == 30


def test_a_reader_that_stops_early_leaves_the_command_its_results_and_its_exit_status(tmp_path):
    """`attnbench judge ./crashes ... | head -1`: exit 0 and no results saved, the command ended at its first
    line that found the pipe closed."""
    import subprocess
    import sys
    from pathlib import Path

    import attnbench

    program = tmp_path / "crashes"
    program.write_text("#!/bin/sh\nexit 3\n")
    program.chmod(0o700)
    root = Path(attnbench.__file__).resolve().parents[1]
    command = [sys.executable, "-m", "attnbench", "judge", str(program), "--cases", "odd_17x48", "--time-limits",
               "none", "--sandbox", "none", "--results-dir", str(tmp_path / "res")]
    process = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**__import__("os").environ, "ATTNBENCH_DATA": str(tmp_path / "data")})
    process.stdout.close()  # as `| head -0` would
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 1, stderr.decode()  # its program crashed: the verdict's status, not 0
    assert len(list((tmp_path / "res").glob("*.json"))) == 1  # and its results saved


def test_a_judges_sentence_wraps_between_words_on_a_terminal_and_stays_one_line_in_a_pipe():
    """A TA's 80-column terminal cut the legend and the rows' notes mid-word ("totals wit / hin a fixed 2%")."""
    import io

    from rich.console import Console

    from attnbench.output.render import terminal
    from attnbench.printable import printable

    sentence = ("ranks: ranked within each GPU kind (a row by the kind that ran most of its cases): more cases passed "
                "first, then less total time of the cases passed; totals within a fixed 2% of the fastest \x1b[2J")
    tty = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    terminal.print_prose(sentence, tty)
    lines = tty.file.getvalue().splitlines()
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    assert " ".join(line.strip() for line in lines).split() == printable(sentence).split()  # no word cut
    pipe = Console(file=io.StringIO(), width=80, force_terminal=False)
    terminal.print_prose(sentence, pipe)
    assert pipe.file.getvalue() == printable(sentence) + "\n"


def test_vertical_blocks_without_a_box_are_parted_by_an_empty_line(monkeypatch):
    """Piped or plain at 80 columns the scoreboard goes vertical with no box, and its rows ran together (a TA's
    trial): one row's last field and the next row's first were read as one block."""
    from attnbench.output.tables.table_model import Column, TableModel

    model = TableModel("board", [Column(f"column number {i}") for i in range(6)])
    model.add_row(*[f"first{i}" for i in range(6)])
    model.add_row(*[f"second{i}" for i in range(6)])
    lines = _printed(monkeypatch, model, 30).splitlines()
    last_of_first = next(i for i, line in enumerate(lines) if "first5" in line)
    first_of_second = next(i for i, line in enumerate(lines) if "second0" in line)
    assert first_of_second == last_of_first + 2 and lines[last_of_first + 1].strip() == ""
