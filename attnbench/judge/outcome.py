"""From how a judged program's process ended, and what it left in its case folder, to one verdict.

Each case ends in exactly one verdict, with one line that says why. The output is read only when it
is a plain file of its own (not a symbolic or hard link a program made to reach a file it cannot
read), and only after every process the program started is dead, so nothing changes it while it is
checked.
"""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import numpy as np

from attnbench.sandbox.process import ProcessLimits, ProcessOutcome, exit_text, last_line
from attnbench.bench.verify import COURSE_ATOL, compare_outputs
from attnbench.cases.testcase import Shape, read_output
from attnbench.results.verification import VerifyReport

# Verdicts, in the order the checks run: the first that applies is the case's verdict.
TIMEOUT, RESOURCE, CRASH, NO_OUTPUT, SIZE, NAN, WRONG_ANSWER, SLOW, PASS = (
    "TIMEOUT", "RESOURCE LIMIT", "CRASH", "NO OUTPUT", "WRONG SIZE", "NaN", "WRONG", "OVER LIMIT", "PASS")
# Not the program's doing: the judge itself failed on this case (a folder it could not make or remove, say);
# a class keeps going, and the row says what went wrong.
JUDGE_ERROR = "JUDGE ERROR"

Verdict = tuple[str, str, "VerifyReport | None"]


def _size(count: int) -> str:
    return f"{count / (1 << 20):g} MiB" if count >= 1 << 20 else f"{count} bytes"


def signal_of(returncode: int | None, sandboxed: bool) -> int | None:
    """The signal that ended the program, if one did. bwrap's init reports a signal death as 128+N."""
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    if sandboxed and 128 < returncode <= 128 + 64:
        return returncode - 128
    return None


def survivors_note(outcome: ProcessOutcome) -> str:
    """'' when every process the program started was dead after the kill; else which were not."""
    if outcome.all_ended:
        return ""
    named = ", ".join(f"{p.pid} ({p.command})" for p in outcome.left_running[:3])
    return f"; {len(outcome.left_running)} of its processes were still alive after the kill: {named}"


def _limit_verdict(signum: int | None, output: Path, limits: ProcessLimits) -> Verdict | None:
    """RESOURCE LIMIT when a limit stopped the program (by its signal, or an output at the size cap)."""
    if signum == signal.SIGXFSZ or (limits.file_bytes is not None and _file_size(output) >= limits.file_bytes):
        return RESOURCE, f"wrote more than the {_size(limits.file_bytes or 0)} file-size limit: stopped", None
    if signum == signal.SIGXCPU:
        return RESOURCE, f"used more than {limits.cpu_s} s of CPU time (its limit): stopped", None
    return None


def _file_size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def check_output(output: Path, shape: Shape, reference: np.ndarray) -> Verdict:
    """Verdict, message and check of what the program wrote."""
    try:
        info = os.lstat(output)
    except OSError:
        return NO_OUTPUT, "the program exited normally but wrote no output file", None
    if not stat.S_ISREG(info.st_mode):
        return NO_OUTPUT, "the output is a symbolic link or not a plain file: not read", None
    if info.st_nlink != 1:
        return NO_OUTPUT, "the output is a hard link to another file: not read", None
    if info.st_size != shape.output_bytes:
        return SIZE, (f"the output is {info.st_size} bytes; {shape} needs 4*B*N*d = {shape.output_bytes} "
                      "(B*N*d float32, no header)"), None
    try:
        values = read_output(output, shape)
    except OSError as exc:
        return NO_OUTPUT, f"the output cannot be read ({exc.strerror}): not judged", None
    report = compare_outputs(values, reference, COURSE_ATOL)
    if report.nan_count or report.inf_count:
        first = f"; first at {report.first_failures[0]}" if report.first_failures else ""
        return NAN, f"{report.nan_count} NaN and {report.inf_count} Inf in the output{first}", report
    if not report.passed:
        return WRONG_ANSWER, (f"{report.failing} of {report.elements} elements off by more than {report.atol:g}; "
                              f"worst {report.worst}"), report
    return PASS, f"max error {report.max_abs_error:.2g}", report


def judge_outcome(outcome: ProcessOutcome, output: Path, shape: Shape, reference: np.ndarray,
                  limits: ProcessLimits, sandboxed: bool, timeout_s: float) -> Verdict:
    """The case's verdict from the process's end and its output; the kill's result is always said true."""
    survivors = survivors_note(outcome)
    if outcome.timed_out:
        if survivors:
            return TIMEOUT, f"still running after {timeout_s:g} s: killed{survivors}", None
        return TIMEOUT, f"still running after {timeout_s:g} s: killed (with every process it started)", None
    signum = signal_of(outcome.returncode, sandboxed)
    verdict = _limit_verdict(signum, output, limits)
    if verdict is None and outcome.returncode != 0:
        assert outcome.returncode is not None
        last = last_line(outcome.stderr_tail)
        ended = exit_text(-signum) if signum is not None else exit_text(outcome.returncode)
        verdict = CRASH, ended + (f"; its last words: {last}" if last else ""), None
    if verdict is None:
        verdict = check_output(output, shape, reference)
    return verdict[0], verdict[1] + survivors, verdict[2]
