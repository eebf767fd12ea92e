"""A whole program among a compare's variants (`--variants exe:./hw4,tf32x3`): its cells carry its process
time and the check of its output, and, from a second, untimed run with the kernel-records collector
(attnbench.backends.kernel_records), its kernels' GPU time, TFLOP/s and speedups. It runs in the judge's room
(attnbench.sandbox.run_program), under the same --sandbox modes, on a fresh input of the case's shape and
range (never the case's own bytes, whose answer `attnbench gen` rebuilds from public seeds), checked against
that input's own float64 reference.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from attnbench.backends.kernel_records import record_kernels
from attnbench.cases.fresh_values import InputRange, draw_seed, fresh_testcase
from attnbench.cases.inputs import computed_reference, no_progress
from attnbench.cases.testcase import Testcase, write_testcase
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import ERROR, OK, WRONG, Cell
from attnbench.results.run_warnings import RunWarning, WarningKind
from attnbench.sandbox import ProgramSpec, Sandbox, SandboxSettings, run_alone
from attnbench.sandbox.program_run import WARM_CACHES
from attnbench.sandbox.outcome import SIZE
from attnbench.sandbox.process import ProgramError, check_program

EXE_PREFIX = "exe:"
NO_LIMIT_TIMEOUT_S = 300.0  # a program without a limit is still killed after this
PROCESS_TIME_NOTE = "process wall-clock time (launch to exit, one run), not kernel time"
PROCESS_TIME_WARNING = RunWarning(WarningKind.PROCESS_TIME, PROCESS_TIME_NOTE)


# -- a program beside kernels in a compare -------------------------------------------------------------
def program_variant(spec: str) -> Variant:
    """`exe:PATH` as a variant of backend "program" (checked now, before anything runs)."""
    if not spec[len(EXE_PREFIX):].strip():  # the empty path is the current folder: "is a folder" misled
        raise ProgramError(f"{spec!r} names no program: give exe:PATH, e.g. exe:./hw4")
    path = check_program(spec[len(EXE_PREFIX):])
    return Variant(
        name=f"{EXE_PREFIX}{path.name}",
        report="program",
        technique=f"a whole program run as {path.name} IN OUT: {PROCESS_TIME_NOTE}; its kernels' time from a "
                  "second, untimed run with CUPTI's records, which the program could forge",
        backend="program",
        source=str(path),
    )


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


def program_cell(variant: Variant, label: str, testcase: Testcase,
                 check: Callable[[np.ndarray, np.ndarray], Any], summarize: Callable[[Any], str],
                 ranges: InputRange | None = None, timeout_s: float = NO_LIMIT_TIMEOUT_S,
                 sandbox_mode: str = "auto") -> Cell:
    """Run the program once in a room of its own (attnbench.sandbox: the judge's sandbox under --sandbox
    `sandbox_mode`, the judge's limits) on a fresh input of the case's shape, its values drawn from a seed of the
    OS's entropy in the case's range (`ranges`, else the testcase's own), and check its output against that
    input's float64 reference: ok, wrong or error, with its process time. A program that carries the suite's
    answers, or keeps one cell's answer for the next, has nothing to match. Every process it started is killed
    when it ends. A passed cell then gets its kernel time from a second run on the same input with the
    kernel-records collector (never the timed run), or the one line why there is none."""
    assert variant.source is not None
    ranges = ranges or InputRange.of(testcase.q, testcase.k, testcase.v)
    ranges.require_finite(label)
    seed = draw_seed()
    fresh = fresh_testcase(testcase.shape, ranges, seed)
    reference = computed_reference(fresh, label, no_progress)
    program = Path(variant.source)
    with tempfile.TemporaryDirectory(prefix=f"attnbench-program-{label}-") as tmp:
        path = Path(tmp) / f"{label}.in"
        write_testcase(path, fresh)
        spec = ProgramSpec(label, path, testcase.shape, timeout_s)
        settings = SandboxSettings(sandbox_mode)
        outcome, confinement = run_alone(program, spec, settings)
        result = check(outcome.output, reference) if outcome.ending is None and outcome.output is not None else None
        recording = (record_kernels(program, spec, settings, WARM_CACHES.cache_for(program, spec, settings))
                     if result is not None and result.passed else None)
    extra: dict[str, Any] = {"process_s": None if outcome.process.timed_out else outcome.wall_s,
                             "timing": PROCESS_TIME_NOTE, "sandbox": confinement.kind,
                             "input": f"fresh, seed 0x{seed:016x}"}
    if recording is not None:
        extra.update(recording.to_extra(testcase.shape.flops))
    if outcome.ending is not None:
        status = _ENDING_STATUS.get(outcome.ending, ERROR)
        return Cell(variant.name, label, status, outcome.message + outcome.survivors, extra=extra)
    assert result is not None
    checked = result.to_dict() if hasattr(result, "to_dict") else None
    if not result.passed:
        return Cell(variant.name, label, WRONG, summarize(result), None, checked, extra)
    return Cell(variant.name, label, OK, "", None, checked, extra)
