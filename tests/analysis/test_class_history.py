"""attnbench.analysis.class_history: a submission's runs over saved scoreboards."""

from attnbench.analysis.class_history import history
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow


def test_a_row_not_judged_is_no_run_of_its_submission():
    """A CUDA program judged on a laptop (NOT JUDGED: no GPU there) neither adds a run nor hides its real ones."""
    judged = Scoreboard(["t01"], [SubmissionRow("cu", "cu.cu", True, rank=1,
                                                entries={"t01": CaseEntry("PASS", runs_s=[0.5])})],
                        metadata={"date": "2026-11-01"})
    laptop = Scoreboard(["t01"], [SubmissionRow("cu", "cu.cu", True, not_judged="no NVIDIA GPU here (x)"),
                                  SubmissionRow("c", "c.c", True, entries={"t01": CaseEntry("WRONG")})],
                        metadata={"date": "2026-11-02"})
    rows = {row.name: row for row in history([judged, laptop])}
    assert rows["cu"].runs == 1 and rows["cu"].latest.passed == 1 and rows["c"].runs == 1
