"""The compare matrix: variants x inputs, each cell checked before it is timed.

`run_input` runs one loaded input's cells, as a case group (`attnbench.spread.cellgroups`) wraps it, one
input at a time on whichever executor runs the matrix (in this process too: `spread.workers.run_here`), and
`assemble` turns the cells into a ResultSet with the run's metadata. Reading a matrix (speedups,
verdicts, regressions) is `attnbench.analysis`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from attnbench.backends.device import GpuDevice
from attnbench.results.ceilings import cached_for
from attnbench.backends.program import program_cell
from attnbench.bench.first_pass import WholeInput
from attnbench.bench.runner import Timer, run_cell
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.verify import COURSE_ATOL, compare_outputs
from attnbench.cases.fresh_values import InputRange
from attnbench.cases.inputs import BenchInput, CaseInfo
from attnbench.cases.testcase import Shape
from attnbench.errors import AttnbenchError, InputNotFinite, OutOfPrecision
from attnbench.kernels.nvcc import variant_info
from attnbench.kernels.variant import Variant
from attnbench.results.metadata import collect
from attnbench.results.refusal import Refusal
from attnbench.results.resultset import ERROR, IMPOSSIBLE, OK, SUSPECT, WRONG, Cell, ResultKind, ResultSet
from attnbench.results.run_settings import RunSettings
from attnbench.results.verification import VerifyReport


class MatrixInterrupted(AttnbenchError):
    """Ctrl-C during a matrix, here or spread out: `cases` and `cells` hold what was measured; `partial`,
    the result set of those cells marked interrupted, is given by the API (`with_partial`) for the command line
    to save."""

    exit_code = 130

    def __init__(self, message: str, cases: list[CaseInfo], cells: list[Cell], devices: Any = None,
                 partial: ResultSet | None = None) -> None:
        super().__init__(message)
        self.cases, self.cells, self.devices = cases, cells, devices
        self.partial = partial

    def with_partial(self, partial: ResultSet) -> MatrixInterrupted:
        """The same interruption, carrying the result set of what was measured, marked interrupted (its saved
        files say so)."""
        partial.settings.interrupted = True
        return MatrixInterrupted(str(self), self.cases, self.cells, self.devices, partial)


# -- running the matrix ---------------------------------------------------------------------------
Check = Callable[[np.ndarray, np.ndarray], Any]  # (output, reference) -> object with `passed` and `to_dict()`


def course_check(atol: float = COURSE_ATOL, rtol: float = 0.0) -> Check:
    """The course's rule (every element within atol + rtol*|ref|), with every error metric recorded."""
    return lambda output, reference: compare_outputs(output, reference, atol, rtol)


def failure_summary(check: Any) -> str:
    """One line saying how an output failed its check."""
    if isinstance(check, VerifyReport):
        text = f"{check.failing} of {check.elements} elements fail {check.rule()}"
        if check.nan_count or check.inf_count:
            text += f" ({check.nan_count} NaN, {check.inf_count} Inf)"
        if check.worst is not None:
            text += f"; worst {check.worst}"
        return text
    describe = getattr(check, "describe", None)
    return describe() if callable(describe) else "the output failed its check"


@dataclass
class MatrixSettings:
    """How each cell is checked and timed."""

    policy: Callable[[Variant], TimingPolicy]
    check: Check = field(default_factory=course_check)
    timer: Timer | None = None
    tolerance: tuple[float, float] = (COURSE_ATOL, 0.0)  # (atol, rtol) of every sample's check: the check's own
    program_sandbox: str = "auto"  # --sandbox for `exe:` programs: auto, required or none (attnbench.sandbox)


def cell_work(variant: Variant, bench_input: BenchInput) -> float:
    """Expected cost of a cell for the ETA: its FLOPs (a host variant counts 50x)."""
    return float(bench_input.shape.flops) * variant.kind.cost_weight


def refusal_of(variant: Variant, shape: Shape, capability: tuple[int, int] | None) -> Refusal | None:
    """Why `variant` refuses a case of this shape on a GPU of this capability (None: no GPU known), if it does."""
    return variant.refusal(shape) or variant.gpu_refusal(capability)


def cells_not_run(variants: list[Variant], label: str, shape: Shape, capability: tuple[int, int] | None,
                  why: str) -> list[Cell]:
    """The cells of an input that is not measured: refused where the variant refuses it, else ERROR with `why`."""
    refusals = [refusal_of(v, shape, capability) for v in variants]
    return [Cell.refused(label, refused) if refused is not None else Cell(v.name, label, ERROR, why)
            for v, refused in zip(variants, refusals)]


@dataclass
class LoadedInput:
    """An input ready for its cells: the testcase and its reference output."""

    label: str
    testcase: Any
    reference: np.ndarray
    ranges: InputRange | None = None  # each tensor's range, from the host (None: taken from the testcase)


@dataclass
class CellEvents:
    """Where an input's cells are told as they start (the variant's name) and as they finish."""

    started: Callable[[str], None]
    finished: Callable[[Cell], None]


def run_input(variants: list[Variant], loaded: LoadedInput, gpu: GpuDevice | None, settings: MatrixSettings,
              events: CellEvents, failures_as_cells: bool = False) -> str | None:
    """Run every variant on one loaded input, a cell at a time; why the CUDA context was lost, if a cell lost it.

    A variant that refuses the shape or this GPU gets a refused cell. Once a GPU variant's failure has lost the
    context (a kernel fault), the cells after it are ERROR cells, not run, and the caller must measure no more.
    An unexpected exception stops the run, so that a bug surfaces, unless `failures_as_cells` (a worker, which
    must report every cell) makes it that cell's ERROR."""
    capability = getattr(gpu, "compute_capability", None)
    shape = loaded.testcase.shape
    for position, variant in enumerate(variants):
        refused = refusal_of(variant, shape, capability)
        if refused is not None:
            events.finished(Cell.refused(loaded.label, refused))
            continue
        events.started(variant.name)
        cell = _cell_or_failure(variant, loaded, gpu, settings, failures_as_cells)
        events.finished(cell)
        lost = _lost_context(cell, variant, loaded.label, gpu)
        if lost is not None:
            for rest in cells_not_run(variants[position + 1:], loaded.label, shape, capability, f"not run: {lost}"):
                events.finished(rest)
            return lost
    return None


def _cell_or_failure(variant: Variant, loaded: LoadedInput, gpu: GpuDevice | None, settings: MatrixSettings,
                     failures_as_cells: bool) -> Cell:
    try:
        return measure_cell(variant, loaded.label, loaded.testcase, loaded.reference, gpu, settings, loaded.ranges)
    except Exception as exc:
        if not failures_as_cells:
            raise
        return Cell(variant.name, loaded.label, ERROR, f"{type(exc).__name__}: {exc}")


def _lost_context(cell: Cell, variant: Variant, label: str, gpu: GpuDevice | None) -> str | None:
    """Why the CUDA context is gone after this cell failed (a kernel fault poisons it), or None."""
    if cell.status != ERROR or gpu is None or not variant.kind.needs_gpu:
        return None
    broken = gpu.context_error()
    return None if broken is None else f"the CUDA context was lost after {variant.name} failed on {label} ({broken})"


def measure_cell(variant: Variant, label: str, testcase: Any, reference: np.ndarray, gpu: GpuDevice | None,
                 settings: MatrixSettings, ranges: InputRange | None = None) -> Cell:
    """One cell of the matrix: the variant through the cell engine (`run_cell`), gated by its check against the
    reference, and given its status (a whole program: its process time and its output's check)."""
    if variant.kind.whole_program:  # a whole program: process time and its output's check, no kernel time
        return program_cell(variant, label, testcase, settings.check, failure_summary, ranges,
                            sandbox_mode=settings.program_sandbox)
    extra: dict[str, Any] = {}
    try:
        if variant.kind.compiled:  # inside the try: a user's bad formula is this cell's ERROR
            extra["defines"] = variant.defines(testcase.shape)
        run = run_cell(variant, WholeInput(testcase, label, ranges), gpu, settings.policy(variant),
                       lambda output: settings.check(output, reference), gate=True, keep_output=False,
                       timer=settings.timer, tolerance=settings.tolerance)
    except InputNotFinite:
        raise  # the input's fault, not this variant's: the run stops with it (exit 2)
    except OutOfPrecision as exc:  # refused before any launch, as a shape it cannot take is
        return Cell.refused(label, exc.refusal)
    except AttnbenchError as exc:
        return Cell(variant.name, label, ERROR, str(exc), extra=extra)
    except Exception as exc:  # a driver error that escaped the runner's wrapping
        if type(exc).__module__.split(".")[0] in ("pycuda", "torch"):
            return Cell(variant.name, label, ERROR, f"{type(exc).__name__}: {exc}", extra=extra)
        raise
    check = run.check.to_dict() if hasattr(run.check, "to_dict") else None
    timer_extra = getattr(settings.timer, "last_extra", None)
    timed = run.timed_check.to_dict() if run.timed_check is not None else None
    if run.measurement is None:
        why = run.timed_check.describe() if run.timed_passes_failed else failure_summary(run.check)
        return Cell(variant.name, label, WRONG, why, None, check, extra, timed)
    if timer_extra:
        extra.update(timer_extra)
    impossible = run.measurement.impossible_reason()
    if impossible is not None:  # checked, but timed faster than the hardware can go: no speed
        return Cell(variant.name, label, IMPOSSIBLE, impossible, run.measurement, check, extra, timed)
    suspect = run.measurement.suspect_reason()
    if suspect is not None:  # checked, but faster than its own unit's peak: its speed is shown, and doubted
        return Cell(variant.name, label, SUSPECT, suspect, run.measurement, check, extra, timed)
    return Cell(variant.name, label, OK, "", run.measurement, check, extra, timed)


def _cached_ceilings(gpu: GpuDevice | None) -> dict[str, Any] | None:
    """This GPU's measured ceilings, when `attnbench ceilings` has cached them."""
    cached = cached_for(gpu) if gpu is not None else None
    return cached.to_dict() if cached else None


def assemble(
    kind: ResultKind,
    variants: list[Variant],
    cases: list[CaseInfo],
    cells: list[Cell],
    gpu: GpuDevice | None,
    policy: dict[str, Any],
    baseline: str | None = None,
    settings: RunSettings | dict[str, Any] | None = None,
    command: str | None = None,
    torch_versions: dict[str, Any] | None = None,
) -> ResultSet:
    """A result set for a finished run, with its metadata captured now (`torch_versions`: what the
    workers that ran the torch peer reported, instead of importing PyTorch here)."""
    with_torch = any(v.kind.needs_torch for v in variants)
    arch = gpu.arch if gpu is not None else None
    return ResultSet(
        kind=kind,
        metadata=collect(gpu, with_torch, command, _cached_ceilings(gpu), torch_versions),
        policy=policy,
        variants=[variant_info(v, arch) for v in variants],
        cases=cases,
        cells=cells,
        baseline=baseline,
        settings=RunSettings.of(settings),
    )
