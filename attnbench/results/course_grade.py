"""The course's correctness grade, as its specs publish it (2024 and 2025): max(0, 60 - 3k) for k failed
cases of t01-t30. Every verdict but PASS fails a case (a time over the limit included); a program that did
not build fails all 30. Only a run that judged every one of t01-t30, each under a time limit, has a grade: a partial run has none, and
neither has a run without limits (`--time-limits none`), where no case can fail by its time as the course's can.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

COURSE_CASES = tuple(f"t{i:02d}" for i in range(1, 31))
FULL_MARKS, PER_FAILED_CASE = 60, 3
GRADE_RULE = (f"the course's correctness grade: max(0, {FULL_MARKS} - {PER_FAILED_CASE}k) for k failed cases of "
              "t01-t30 (every verdict but PASS fails, OVER LIMIT included; a failed build fails all 30)")
PASS = "PASS"


def grades_cases(cases: Iterable[str]) -> bool:
    """Whether a run of these cases judged all of t01-t30, so its rows have a grade."""
    return set(COURSE_CASES) <= set(cases)


def limited_throughout(limit_for: Callable[[str], float | None]) -> bool:
    """Whether every one of t01-t30 has a time limit (`limit_for` a case's, None for none): a grade made without
    one counted a case over the course's limit as passed."""
    return all(limit_for(case) is not None for case in COURSE_CASES)


def course_grade(verdicts: Mapping[str, str]) -> int | None:
    """The grade of one program from its verdicts by case, or None when t01-t30 were not all judged."""
    if not grades_cases(verdicts):
        return None
    failed = sum(1 for case in COURSE_CASES if verdicts[case] != PASS)
    return max(0, FULL_MARKS - PER_FAILED_CASE * failed)
