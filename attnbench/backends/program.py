"""A whole program among a compare's variants (`--variants exe:./hw4,tf32x3`): a black box with process
time only, so its cells carry that time and the check of its output, but no kernel time, no TFLOP/s and
no speedups. The judge runs programs the same way (attnbench.sandbox.process).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from attnbench.cases.testcase import Testcase, read_output, write_testcase
from attnbench.errors import TestcaseError
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import ERROR, OK, WRONG, Cell
from attnbench.results.run_warnings import RunWarning, WarningKind
from attnbench.sandbox.process import check_program, exit_text, last_line, run_process

EXE_PREFIX = "exe:"
NO_LIMIT_TIMEOUT_S = 300.0  # a program without a limit is still killed after this
PROCESS_TIME_NOTE = "process wall-clock time (launch to exit, one run), not kernel time"
PROCESS_TIME_WARNING = RunWarning(WarningKind.PROCESS_TIME, PROCESS_TIME_NOTE)


# -- a program beside kernels in a compare -------------------------------------------------------------
def program_variant(spec: str) -> Variant:
    """`exe:PATH` as a variant of backend "program" (checked now, before anything runs)."""
    path = check_program(spec[len(EXE_PREFIX):])
    return Variant(
        name=f"{EXE_PREFIX}{path.name}",
        report="program",
        technique=f"a whole program run as {path.name} IN OUT: {PROCESS_TIME_NOTE}",
        backend="program",
        source=str(path),
    )


def _input_file(testcase: Testcase, folder: Path, label: str) -> Path:
    """The case's input, copied into the program's own folder (never the suite's path: its float64
    reference lies next to it), or written now for a case made in memory."""
    path = folder / f"{label}.in"
    if testcase.path is not None and Path(testcase.path).is_file():
        shutil.copyfile(testcase.path, path)
    else:
        write_testcase(path, testcase)
    return path


def program_cell(variant: Variant, label: str, testcase: Testcase, reference: np.ndarray,
                 check: Callable[[np.ndarray, np.ndarray], Any], summarize: Callable[[Any], str],
                 timeout_s: float = NO_LIMIT_TIMEOUT_S) -> Cell:
    """Run the program once on the case, in a fresh folder with its own copy of the input, check its
    output: ok, wrong or error, with its process time. Every process it started is killed when it ends;
    it runs without the judge's sandbox (compare is for one's own programs: judge untrusted ones)."""
    assert variant.source is not None
    with tempfile.TemporaryDirectory(prefix=f"attnbench-program-{label}-") as tmp:
        folder = Path(tmp)
        input_path, output_path = _input_file(testcase, folder, label), folder / f"{label}.out"
        outcome = run_process([variant.source, str(input_path), str(output_path)], folder, timeout_s)
        extra: dict[str, Any] = {"process_s": None if outcome.timed_out else outcome.wall_s,
                                 "timing": PROCESS_TIME_NOTE}
        if outcome.timed_out:
            return Cell(variant.name, label, ERROR, f"still running after {timeout_s:g} s: killed", extra=extra)
        assert outcome.returncode is not None
        if outcome.returncode != 0:
            last = last_line(outcome.stderr_tail)
            message = exit_text(outcome.returncode) + (f"; its last words: {last}" if last else "")
            return Cell(variant.name, label, ERROR, message, extra=extra)
        if not output_path.exists():
            return Cell(variant.name, label, ERROR, "the program exited normally but wrote no output file", extra=extra)
        try:
            output = read_output(output_path, testcase.shape)
        except TestcaseError:
            size = output_path.stat().st_size
            return Cell(variant.name, label, WRONG, f"the output is {size} bytes; {testcase.shape} needs "
                        f"{testcase.shape.output_bytes}", extra=extra)
    result = check(output, reference)
    checked = result.to_dict() if hasattr(result, "to_dict") else None
    if not result.passed:
        return Cell(variant.name, label, WRONG, summarize(result), None, checked, extra)
    return Cell(variant.name, label, OK, "", None, checked, extra)
