"""`--diagnose`: a failed case run once more under compute-sanitizer, its first error line added to the row.

Course programs check no CUDA error, so a kernel that never ran leaves an output of zeros and nothing says
why; compute-sanitizer's memcheck says it in one line ("Invalid __shared__ write of size 16 bytes ... at
hw4.cu:93", with the source line when the build kept line information). The run is neither timed nor
judged: it happens after the verdict, in a room of its own, under the case's own name (a program cannot tell it
from a judged run by its files), with a timeout of its own (the tool slows a program many times over), and
only for a submission's first failed case (a red team's program slept in every diagnosis: hours for a class).
The tool's report is read from the run's output, which the program writes too: the note says so, and it is
never a verdict.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

from attnbench.printable import printable
from attnbench.sandbox import run_program
from attnbench.sandbox.program_run import ProgramSpec
from attnbench.sandbox.room import Sandbox, SandboxSettings

SANITIZER = "compute-sanitizer"
DIAGNOSED = ("WRONG", "NaN", "CRASH", "NO OUTPUT", "WRONG SIZE")  # the verdicts a memory or launch error explains


SLOWDOWN = 20.0  # the run's timeout: this many times the case's, within the bounds below
TIMEOUT_BOUNDS_S = (60.0, 600.0)
_PREFIX = re.compile(r"^=+ ?")
_SOURCE_LINE = re.compile(r"\bin (\S+:\d+)\s*$")


def sanitizer_path() -> str | None:
    """compute-sanitizer on PATH, or in the CUDA toolkit beside nvcc."""
    found = shutil.which(SANITIZER)
    if found:
        return found
    nvcc = shutil.which("nvcc")
    beside = Path(nvcc).parent / SANITIZER if nvcc else None
    return str(beside) if beside is not None and beside.is_file() else None


def first_error(report: str) -> str | None:
    """The first error compute-sanitizer reports, in one line, with its source line where it names one:
    'Invalid __shared__ write of size 16 bytes at attention(...) in hw4.cu:93'. None when it found none."""
    lines = [_PREFIX.sub("", line).strip() for line in report.splitlines() if line.startswith("=")]
    lines = [line for line in lines if line]
    for index, line in enumerate(lines):
        if line.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "Target application returned", "LEAK SUMMARY")):
            continue
        where = ""
        for follow in lines[index + 1: index + 4]:
            source = _SOURCE_LINE.search(follow)
            if follow.startswith("at ") and source:
                where = f" at {Path(source.group(1)).name}"
                break
        return printable(f"{line}{where}")[:300]
    return None


def diagnosis(program: Path, spec: ProgramSpec, settings: SandboxSettings) -> str:
    """The row's note for a failed case: compute-sanitizer's first error on a run of the same case, that it
    found none, or why it did not run."""
    tool = sanitizer_path()
    if tool is None:
        return "--diagnose: compute-sanitizer is not installed here"
    low, high = TIMEOUT_BOUNDS_S
    timeout = min(high, max(low, SLOWDOWN * spec.timeout_s))
    words = (tool, "--tool", "memcheck", "--print-limit", "1")
    room = Sandbox.open(program, settings, bool(spec.launcher))
    try:
        outcome = run_program(room, replace(spec, tool=words, timeout_s=timeout))
    finally:
        room.close()
    found = first_error(f"{outcome.process.stdout_tail}\n{outcome.process.stderr_tail}")  # the tool writes to stdout
    if found is not None:
        return f"compute-sanitizer (its report, in the run's output, which the program can also write): {found}"
    if outcome.process.timed_out:
        return f"compute-sanitizer: stopped at {timeout:g} s before it reported anything"
    return "compute-sanitizer found no memory or CUDA API error"
