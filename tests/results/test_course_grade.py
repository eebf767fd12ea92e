"""attnbench.results.course_grade: the course's grade, max(0, 60 - 3k) over t01-t30, and none on a partial run."""

from attnbench.results.course_grade import COURSE_CASES, course_grade, grades_cases, limited_throughout
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow


def _verdicts(failed: int, verdict: str = "WRONG") -> dict[str, str]:
    return {case: verdict if i < failed else "PASS" for i, case in enumerate(COURSE_CASES)}


def test_each_failed_case_costs_three_of_sixty_and_the_grade_stops_at_zero():
    assert course_grade(_verdicts(0)) == 60
    assert course_grade(_verdicts(1)) == 57
    assert course_grade(_verdicts(7, "OVER LIMIT")) == 39  # a time over the limit fails the case too
    assert course_grade(_verdicts(20)) == 0 and course_grade(_verdicts(30)) == 0


def test_a_partial_run_has_no_grade_and_extra_cases_do_not_count():
    partial = _verdicts(0)
    del partial["t17"]
    assert course_grade(partial) is None and not grades_cases(partial)
    assert course_grade({**_verdicts(2), "odd_17x48": "WRONG"}) == 54


def test_a_scoreboard_grades_its_rows_only_when_it_judged_t01_to_t30_whole():
    ran = SubmissionRow("a", "/a", True, entries={c: CaseEntry("PASS", runs_s=[0.1]) for c in COURSE_CASES})
    ran.entries["t03"] = CaseEntry("CRASH")
    broken = SubmissionRow("b", "/b", False, "the build failed")
    board = Scoreboard(list(COURSE_CASES), [ran, broken])
    assert board.graded and board.grade(ran) == 57 and board.grade(broken) == 0  # a failed build fails all 30
    assert [row["grade"] for row in board.to_dict()["rows"]] == [57, 0]
    board.interrupted = True
    assert not board.graded and board.grade(ran) is None
    short = Scoreboard(list(COURSE_CASES[:10]), [ran])
    assert short.grade(ran) is None and short.to_dict()["rows"][0]["grade"] is None


def test_a_run_without_a_time_limit_on_every_course_case_has_no_grade():
    """`--time-limits none` on t01-t30 said "the course's grade 60 of 60": no case could fail by its time."""
    from attnbench.judge.classroom import ClassSettings, new_board
    from attnbench.judge.time_limits import load_time_limits

    assert limited_throughout(load_time_limits("course").limit_for)
    assert limited_throughout(load_time_limits("course-rtx3070").limit_for)
    assert not limited_throughout(load_time_limits("none").limit_for)
    assert not limited_throughout(lambda case: None if case == "t17" else 2.0)
    ran = SubmissionRow("a", "/a", True, entries={c: CaseEntry("PASS", runs_s=[0.1]) for c in COURSE_CASES})
    assert Scoreboard(list(COURSE_CASES), [ran]).graded  # a board saved before `ungraded` was: graded as ever

    class Named:
        def __init__(self, label):
            self.label = label

    inputs = [Named(c) for c in COURSE_CASES]
    unlimited = new_board(inputs, ClassSettings(load_time_limits("none")), None)
    unlimited.rows.append(ran)
    assert not unlimited.graded and unlimited.grade(ran) is None and "no time limit" in unlimited.settings["ungraded"]
    limited = new_board(inputs, ClassSettings(load_time_limits("course")), None)
    limited.rows.append(ran)
    assert limited.graded and limited.grade(ran) == 60 and "ungraded" not in limited.settings
