"""attnbench.results.scoreboard: a row's totals, strict JSON, and a saved scoreboard read back."""

import json

import pytest

from attnbench.errors import ResultsError
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow, load_scoreboard


def board():
    good = SubmissionRow("good", "/s/good", True, gpu="H200", rank=1, reruns=3,
                         entries={"t01": CaseEntry("PASS", runs_s=[1.0, 3.0, 2.0]), "t02": CaseEntry("PASS", runs_s=[0.5]),
                                  "t03": CaseEntry("WRONG", "1 of 4 elements off")})
    broken = SubmissionRow("broken", "/s/broken.c", False, "the build failed (exit 1): error: x")
    return Scoreboard(["t01", "t02", "t03"], [good, broken], {"date": "2026-11-24"}, {"ranking": "rule"})


def test_totals_count_passed_cases_at_their_median():
    good = board().rows[0]
    assert good.passed == 2 and good.total_s == pytest.approx(2.5)
    assert good.entries["t03"].time_s is None


def test_strict_json_round_trip(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(board().to_json())

    def refuse(constant):
        raise ValueError(constant)

    data = json.loads(path.read_text(), parse_constant=refuse)
    assert data["rows"][0]["total_s"] == pytest.approx(2.5) and data["rows"][1]["total_s"] == 0
    again = load_scoreboard(path)
    assert again.to_dict() == board().to_dict()


def test_a_file_that_is_not_a_scoreboard_is_one_line(tmp_path):
    # JSON nested 100,000 deep (`judge --history` over it ended in a RecursionError traceback)
    for content in (b"\x89PNG\r\n", b'{"kind": "compare"}', b"[]", b"[" * 100_000 + b"]" * 100_000):
        path = tmp_path / "x.json"
        path.write_bytes(content)
        with pytest.raises(ResultsError, match="not a saved scoreboard"):
            load_scoreboard(path)


def test_an_older_board_without_program_times_reads_its_passed_runs_as_them():
    board = Scoreboard(["t01"], [SubmissionRow("a", "a.c", True, entries={"t01": CaseEntry("PASS", "", [0.5, 0.25])})])
    saved = board.to_dict()
    for row in saved["rows"]:
        del row["warm_ups_s"]
        for entry in row["entries"].values():
            del entry["program_s"]
    older = Scoreboard.from_dict(saved)
    assert older.rows[0].entries["t01"].program_s == 0.75 and older.rows[0].warm_ups_s == 0.0


def test_a_rows_filler_runs_are_its_program_time_and_read_back_and_an_older_board_has_none():
    row = SubmissionRow("a", "a.c", True, entries={"t01": CaseEntry("PASS", "", [0.5], program_s=0.5)}, warm_ups_s=0.25,
                        fillers_s=2.0)
    board = Scoreboard(["t01"], [row])
    assert row.program_s == 2.75 and Scoreboard.from_dict(board.to_dict()).rows[0].fillers_s == 2.0
    saved = board.to_dict()
    del saved["rows"][0]["fillers_s"]
    assert Scoreboard.from_dict(saved).rows[0].program_s == 0.75


def test_a_row_not_judged_has_no_grade_and_reads_back_and_an_older_board_has_none():
    """A CUDA program where no GPU was is NOT JUDGED: neither passed nor failed, so no grade of 0 on a graded run."""
    from attnbench.results.course_grade import COURSE_CASES

    cases = list(COURSE_CASES)
    judged = SubmissionRow("c", "c.c", True, entries={case: CaseEntry("PASS", "", [0.1]) for case in cases})
    cuda = SubmissionRow("cu", "cu.cu", True, not_judged="no NVIDIA GPU here (nvidia-smi lists no GPU)")
    board = Scoreboard(cases, [judged, cuda])
    assert board.grade(judged) == 60 and board.grade(cuda) is None
    saved = board.to_dict()
    assert saved["rows"][1]["not_judged"].startswith("no NVIDIA GPU here") and saved["rows"][1]["grade"] is None
    assert Scoreboard.from_dict(saved).rows[1].not_judged == cuda.not_judged
    del saved["rows"][1]["not_judged"]
    assert Scoreboard.from_dict(saved).rows[1].not_judged == ""
