"""From a judged program's run in the room to one verdict.

Each case ends in exactly one verdict, with one line that says why. The room (attnbench.sandbox.outcome)
says how the process ended and reads the output file only when it is safe to; the judge checks the values
against the float64 reference by the course's rule.
"""

from __future__ import annotations

import numpy as np

from attnbench.bench.verify import COURSE_ATOL, compare_outputs
from attnbench.results.verification import VerifyReport
from attnbench.sandbox.outcome import CRASH, NO_OUTPUT, RESOURCE, SIZE, TIMEOUT, ProgramOutcome

# Verdicts, in the order the checks run: the first that applies is the case's verdict (the room's first).
__all__ = ["CRASH", "JUDGE_ERROR", "NAN", "NO_OUTPUT", "PASS", "RESOURCE", "SIZE", "SLOW", "TIMEOUT", "Verdict",
           "WRONG_ANSWER", "judge_outcome"]
NAN, WRONG_ANSWER, SLOW, PASS = "NaN", "WRONG", "OVER LIMIT", "PASS"
# Not the program's doing: the judge itself failed on this case (a folder it could not make or remove, say);
# a class keeps going, and the row says what went wrong.
JUDGE_ERROR = "JUDGE ERROR"

Verdict = tuple[str, str, "VerifyReport | None"]


def check_values(values: np.ndarray, reference: np.ndarray) -> Verdict:
    """Verdict, message and check of the output's values."""
    report = compare_outputs(values, reference, COURSE_ATOL)
    if report.nan_count or report.inf_count:
        first = f"; first at {report.first_failures[0]}" if report.first_failures else ""
        return NAN, f"{report.nan_count} NaN and {report.inf_count} Inf in the output{first}", report
    if not report.passed:
        return WRONG_ANSWER, (f"{_what_it_looks_like(values)}{report.failing} of {report.elements} elements off by "
                              f"more than {report.atol:g}; worst {report.worst}"), report
    return PASS, f"max error {report.max_abs_error:.2g}", report


def _what_it_looks_like(values: np.ndarray) -> str:
    """What a wrong output says of the run, before the numbers: a program that checks no CUDA error and whose
    kernel never ran leaves its output buffer as it found it, zeros in the course's programs."""
    if values.size and not np.any(values):
        return "every element is 0: a kernel may have failed to launch; "
    return ""


def judge_outcome(outcome: ProgramOutcome, reference: np.ndarray) -> Verdict:
    """The case's verdict from the run's ending and its output; the kill's result is always said true."""
    if outcome.ending is not None:
        verdict: Verdict = (outcome.ending, outcome.message, None)
    else:
        assert outcome.output is not None
        verdict = check_values(outcome.output, reference)
    return verdict[0], verdict[1] + outcome.survivors, verdict[2]
