"""A whole program among a compare's variants (`--variants exe:./hw4,tf32x3`): a black box with process
time only, so its cells carry that time and the check of its output, but no kernel time, no TFLOP/s and
no speedups. It runs in the judge's room (attnbench.sandbox.run_program), under the same --sandbox modes.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from attnbench.cases.testcase import Testcase, write_testcase
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import ERROR, OK, WRONG, Cell
from attnbench.results.run_warnings import RunWarning, WarningKind
from attnbench.sandbox import ProgramSpec, Sandbox, SandboxSettings, run_alone
from attnbench.sandbox.outcome import SIZE
from attnbench.sandbox.process import check_program

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


def program_confinement(variants: list[Variant], mode: str) -> str | None:
    """Find out once, before any cell, how `exe:` programs will be confined under --sandbox `mode`: the one
    line to say when they run without a sandbox (or in one as root), or None. SandboxUnavailable (exit 3)
    when `mode` is "required" and no sandbox can be made here."""
    programs = [v for v in variants if v.kind.whole_program]
    if not programs:
        return None
    assert programs[0].source is not None
    room = Sandbox.open(Path(programs[0].source), SandboxSettings(mode))
    room.close()
    return room.confinement.warning()


# The room's endings as a compare's cell statuses: a file of the wrong size is a wrong answer, the rest errors.
_ENDING_STATUS = {SIZE: WRONG}


def program_cell(variant: Variant, label: str, testcase: Testcase, reference: np.ndarray,
                 check: Callable[[np.ndarray, np.ndarray], Any], summarize: Callable[[Any], str],
                 timeout_s: float = NO_LIMIT_TIMEOUT_S, sandbox_mode: str = "auto") -> Cell:
    """Run the program once on the case in a room of its own (attnbench.sandbox: the judge's sandbox under
    --sandbox `sandbox_mode`, its own copy of the input, the judge's limits), check its output: ok, wrong or
    error, with its process time. Every process it started is killed when it ends."""
    assert variant.source is not None
    with tempfile.TemporaryDirectory(prefix=f"attnbench-program-{label}-") as tmp:
        spec = ProgramSpec(label, _input_file(testcase, Path(tmp), label), testcase.shape, timeout_s)
        outcome, confinement = run_alone(Path(variant.source), spec, SandboxSettings(sandbox_mode))
    extra: dict[str, Any] = {"process_s": None if outcome.process.timed_out else outcome.wall_s,
                             "timing": PROCESS_TIME_NOTE, "sandbox": confinement.kind}
    if outcome.ending is not None:
        status = _ENDING_STATUS.get(outcome.ending, ERROR)
        return Cell(variant.name, label, status, outcome.message + outcome.survivors, extra=extra)
    assert outcome.output is not None
    result = check(outcome.output, reference)
    checked = result.to_dict() if hasattr(result, "to_dict") else None
    if not result.passed:
        return Cell(variant.name, label, WRONG, summarize(result), None, checked, extra)
    return Cell(variant.name, label, OK, "", None, checked, extra)
