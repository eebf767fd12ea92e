"""The cell engine: joins an input and a variant, runs it once to get (and check) its output, then times it.

`run_cell` is the one path every command takes (`run`, compare, sweep and the spread workers): `run` is a
one-cell compare. Its first pass is a strategy (`bench.first_pass`: the input whole, or streamed from its file
through the pipeline); what follows is written once here: the first output's check, the samples on fresh
inputs, each output checked (`bench.fresh_samples`), and the measurement. With `gate`, a pass whose output
fails its check gets no time, and a cell with a failed sample gets no measurement.
`run_case` is `run`'s entry: it chooses the first pass (`_first_pass_for`) and calls the engine.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from attnbench.backends.base import Execution
from attnbench.backends.device import GpuDevice
from attnbench.bench.chunk_plan import keeps_output, plan_for_input
from attnbench.bench.first_pass import FirstPass, StreamedFile, WholeInput
from attnbench.bench.fresh_samples import FreshSampler, sample_fresh
from attnbench.bench.sampler import SmClockRecorder, TimingPolicy
from attnbench.bench.verify import COURSE_ATOL, FiniteCheck, compare_outputs
from attnbench.cases import suite
from attnbench.cases.fresh_values import InputRange
from attnbench.cases.inputs import BenchInput, ProgressFactory, SuiteInput, no_progress
from attnbench.cases.testcase import OutputFile, Shape
from attnbench.errors import OutOfPrecision
from attnbench.kernels.variant import Variant
from attnbench.results.measurement import Measurement
from attnbench.results.stats import KernelStats
from attnbench.results.precision_envelope import error_bound
from attnbench.results.timed_check import TimedCheck
from attnbench.results.verification import VerifyReport

# A replacement for the sampler (the square-attention lab's doubling rule is one); it times through the
# fresh sampler, so its passes too run on fresh inputs and are checked.
Timer = Callable[[FreshSampler, TimingPolicy], KernelStats]
# Checks an output; returns anything with a boolean `passed` (a VerifyReport, or a workload's own rule).
Check = Callable[[np.ndarray], Any]


@dataclass
class VariantRun:
    """What one run of a variant gave: its output (when kept), its measurement, its check."""

    output: np.ndarray | None
    measurement: Measurement | None  # None when the check gated it out: a wrong answer gets no speed
    check: Any | None
    timed_check: TimedCheck | None = None  # the check of the timed samples (None: not timed)

    @property
    def timed_passes_failed(self) -> bool:
        return self.timed_check is not None and not self.timed_check.passed


def _checked_range(ranges: InputRange, case_label: str) -> InputRange:
    """The range of the case's input, taken on the host before any kernel ran (`BenchInput.value_range`); an
    input holding NaN or Inf stops the run here, blamed on the input (exit 2), before any launch."""
    ranges.require_finite(case_label)
    return ranges


def _time(execution: Execution, variant: Variant, policy: TimingPolicy, shape: Shape, ranges: InputRange,
          tolerance: tuple[float, float], timer: Timer | None, gpu: GpuDevice | None = None
          ) -> tuple[KernelStats, TimedCheck]:
    """The samples after the first pass, each on a fresh input in the case's range `ranges`, each checked. A
    device variant's samples carry the SM clock each ran at (when NVML can say)."""
    on_host = variant.kind.runs_on_host
    recorder = SmClockRecorder(None if on_host else gpu)
    stats, check = sample_fresh(execution, shape, ranges, policy, tolerance, device_clock=not on_host,
                                on_sample=recorder, timer=timer)
    return (stats if timer is not None else recorder.attach(stats)), check


def _rounding_explained(timed: TimedCheck, variant: Variant, ranges: InputRange, shape: Shape) -> TimedCheck:
    """A failed sample whose output is finite and off by no more than its variant's roundings can do on these
    ranges (`precision_envelope`) is a precision failure, said so, not a launch that did not compute."""
    rounding = variant.rounding
    failure = timed.failure
    if rounding is None or failure is None or failure.errors.nonfinite or failure.errors.worst is None:
        return timed
    bound = error_bound(rounding, ranges, shape.N, shape.d)
    return replace(timed, precision=bound.explanation()) if bound.explains(failure.errors.worst.error) else timed


def _measurement(variant: Variant, case_label: str, shape: Shape, execution: Execution, compute_s: float,
                 stats: KernelStats, hot: bool = False) -> Measurement:
    """The measurement of a timed run, with its physical floor on the execution's device (`hot`: timed
    without an L2 flush) and, unless the median is below that floor, the share of the peak that applies
    to the variant's unit (measured by `attnbench ceilings`, else the datasheet's)."""
    measurement = Measurement(
        variant=variant.name,
        case=case_label,
        shape=shape,
        device=execution.device_name,
        compute_s=compute_s,
        kernel=stats,
        compile_s=execution.compile_s,
        peak_flops=execution.peak_flops,
        unit=variant.unit,
    )
    dims = (shape.B, shape.N, shape.d)
    measurement.floor = execution.limits.floor(dims, hot)
    if not measurement.impossible:  # a median under the floor is not a speed: no share of any peak
        applied = execution.limits.share(variant.unit, shape.flops, stats.median * 1e-3, dims)
        measurement.ceiling = applied.to_dict() if applied else None
    return measurement


def run_cell(
    variant: Variant,
    first: FirstPass,
    gpu: GpuDevice | None,
    policy: TimingPolicy,
    check: Check | None = None,
    *,
    gate: bool = False,
    keep_output: bool = True,
    timer: Timer | None = None,
    tolerance: tuple[float, float] = (COURSE_ATOL, 0.0),
) -> VariantRun:
    """The cell engine: `variant` on one input, whatever the command. The first pass (`first`: the input whole,
    or streamed from its file) is checked in full, then timed passes on fresh inputs, each checked.

    `check` sees the first pass's output (without one, or where the output was streamed out and not kept, it
    is still scanned for NaN and Inf); with `gate`, a failed check ends the cell without timing, and a failed
    sample leaves it without a measurement. `tolerance` (atol, rtol) is the check's, for every sample's too.
    The input's range (the fresh inputs' distribution) is checked on the host before any launch, and a variant
    whose arithmetic cannot hold `tolerance` on it is refused there (`OutOfPrecision`). A VerifyReport
    and the TimedCheck are attached to the measurement, and the first pass adds its own times."""
    ranges = _checked_range(first.value_range(), first.label)
    refused = variant.precision_refusal(ranges, first.shape, tolerance)
    if refused is not None:  # before any launch: its arithmetic cannot hold the check on these values
        raise OutOfPrecision(refused)
    with first.execution(variant, gpu, policy.flush_l2) as execution:
        done = first.run(execution)
        checked_at = time.perf_counter()
        result = check(done.output) if check is not None and done.output is not None else done.finite()
        check_s = time.perf_counter() - checked_at
        if gate and result is not None and not result.passed:
            return VariantRun(done.output if keep_output else None, None, result)
        sampled_at = time.perf_counter()
        stats, timed = _time(execution, variant, policy, first.shape, ranges, tolerance, timer, gpu)
        timed = _rounding_explained(timed, variant, ranges, first.shape)
        sampling_s = time.perf_counter() - sampled_at
    output = done.output if keep_output else None
    if gate and not timed.passed:
        return VariantRun(output, None, result, timed)
    measurement = _measurement(variant, first.label, first.shape, execution, done.compute_s, stats,
                               hot=not policy.flush_l2 or timer is not None)
    _attach_timed(measurement, timed)
    measurement.sampling_s = sampling_s
    if isinstance(result, VerifyReport):
        measurement.check_s = check_s
        measurement.verification = result
        measurement.nonfinite = result.nan_count + result.inf_count
    elif isinstance(result, FiniteCheck):
        measurement.nonfinite = result.nonfinite
    first.annotate(measurement, done)
    return VariantRun(output, measurement, result, timed)


def _attach_timed(measurement: Measurement, timed: TimedCheck) -> None:
    """The samples' check on the measurement, and its warnings (the clocks', the determinism check's) among its own."""
    measurement.timed_check = timed
    measurement.warnings.extend(timed.warnings())


def run_case(
    variant: Variant,
    bench_input: BenchInput,
    gpu: GpuDevice | None,
    policy: TimingPolicy,
    out: str | os.PathLike | None = None,
    check: bool = False,
    tolerance: tuple[float, float] = (COURSE_ATOL, 0.0),
    pipeline: bool = True,
    progress: ProgressFactory = no_progress,
    notice: Callable[[str], None] = lambda text: None,
) -> Measurement:
    """`attnbench run`'s cell: `variant` on one case through the engine, `out` written if given, timed, and with
    `check` compared with the float64 reference within `tolerance` (atol, rtol; also every sample's check's).
    `gpu` is already open, so no input is written where no GPU can run it."""
    started = time.perf_counter()
    bench_input.prepare(progress)
    first, checker, reference_s = _first_pass_for(variant, bench_input, out, check, tolerance, pipeline, progress,
                                                  notice)
    measurement = run_cell(variant, first, gpu, policy, checker, tolerance=tolerance).measurement
    assert measurement is not None  # an ungated cell is always measured
    if measurement.check_s is not None:  # a streamed first pass has its reference made before it
        measurement.check_s += reference_s
    measurement.wall_s = time.perf_counter() - started
    return _input_checked(bench_input, measurement)


def _first_pass_for(variant: Variant, bench_input: BenchInput, out: str | os.PathLike | None, check: bool,
                    tolerance: tuple[float, float], pipeline: bool, progress: ProgressFactory,
                    notice: Callable[[str], None]) -> tuple[FirstPass, Check | None, float]:
    """`run`'s first pass and its check. A GPU variant on an input on disk streams it (`StreamedFile`) unless
    `pipeline` is off or its plan is refused (the reason goes to `notice`); every other run reads the input
    whole (`WholeInput`), then copies, computes, copies back and writes, one after another. The float is the
    time spent making the reference before the first pass (a streamed one's; 0 otherwise)."""
    plan = plan_for_input(bench_input, variant, keep_output=keeps_output(check, out)) if pipeline else None
    if plan is not None and plan.refusal is not None:
        notice(f"{plan.refusal}; running the unpipelined path")
    elif plan is not None:
        checker = None
        started = time.perf_counter()
        if check:
            reference = _reference_before(bench_input, progress)
            checker = lambda output: compare_outputs(output, reference, *tolerance)  # noqa: E731
        reference_s = time.perf_counter() - started
        streamed = StreamedFile(getattr(bench_input, "path"), plan, bench_input.label, bench_input.value_range(), out)
        return streamed, checker, reference_s
    start = time.perf_counter()
    testcase = bench_input.load(progress)
    input_s = time.perf_counter() - start

    def reference_check(output: np.ndarray) -> VerifyReport:  # the reference is made only when first needed
        return compare_outputs(output, bench_input.reference(testcase, progress), *tolerance)

    whole = WholeInput(testcase, bench_input.label, bench_input.value_range(testcase), input_s, out)
    return whole, reference_check if check else None, 0.0


def _reference_before(bench_input: BenchInput, progress: ProgressFactory) -> Any:
    """The float64 reference, ready before a pipelined run (which never holds the whole input)."""
    if isinstance(bench_input, SuiteInput) and suite.stored_reference(bench_input.case) is not None:
        return OutputFile(suite.reference_path(bench_input.case), bench_input.shape)  # read in chunks
    return bench_input.reference(bench_input.load(progress), progress)


def _input_checked(bench_input: BenchInput, measurement: Measurement) -> Measurement:
    """Before a failed check blames the output, a suite input must be the bytes the suite records
    (hashed only now, on a failure, so a passing run pays nothing)."""
    verification = measurement.verification
    if verification is not None and not verification.passed and isinstance(bench_input, SuiteInput):
        suite.check_input_bytes(bench_input.case)
    return measurement
