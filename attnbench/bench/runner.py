"""The runner: joins a testcase and a variant, runs it once to get (and check) its output, then times it.

`run_variant` is the one path every command takes: `run` is a one-cell compare. The first pass is
timed as the course times "computing" (allocation, host-to-device, kernels, device-to-host) on the case's
own input, and checked in full; the sampler then times passes, each on a fresh input and each output
checked (`bench.fresh_samples`). With `gate`, a pass whose output fails its check gets no time, and a
cell with a failed sample gets no measurement.
`run_variant_pipelined` is `run`'s default for GPU variants: its first pass streams the input file
through the pipeline (`bench.pipeline`) and writes the output as it goes; the timed passes are the same.
`run_case` is `run`'s one entry: it chooses between the two paths itself.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from attnbench.backends.base import Execution
from attnbench.backends.device import GpuDevice
from attnbench.backends.registry import make_execution, make_streaming_execution
from attnbench.bench.chunk_plan import ChunkPlan, keeps_output, plan_for_input
from attnbench.bench.fresh_samples import FreshSampler, sample_fresh
from attnbench.bench.pipeline import run_pipeline
from attnbench.bench.sampler import SmClockRecorder, TimingPolicy
from attnbench.bench.verify import COURSE_ATOL, FiniteCheck, compare_outputs, finite_check
from attnbench.cases import suite
from attnbench.cases.fresh_values import InputRange
from attnbench.cases.inputs import BenchInput, ProgressFactory, SuiteInput, no_progress
from attnbench.cases.streaming import TestcaseFile
from attnbench.cases.testcase import OutputFile, Shape, Testcase, write_output
from attnbench.errors import KernelLaunchError
from attnbench.files import atomic_write
from attnbench.kernels.variant import Variant
from attnbench.results.measurement import Measurement
from attnbench.results.stats import KernelStats
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


def _first_pass(execution: Execution) -> tuple[np.ndarray, float]:
    """Upload, one pass and download, timed as the course times 'computing'."""
    start = time.perf_counter()
    execution.upload()
    execution.run_pass()
    output = execution.download()
    return output, time.perf_counter() - start


def _first_pass_naming(execution: Execution, case_label: str) -> tuple[np.ndarray, float]:
    """The first pass; a failed kernel also names the case (the user may have run several)."""
    try:
        return _first_pass(execution)
    except KernelLaunchError as exc:
        raise KernelLaunchError(f"{exc} (case {case_label})") from None


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


def run_variant(
    variant: Variant,
    testcase: Testcase,
    case_label: str,
    gpu: GpuDevice | None,
    policy: TimingPolicy,
    check: Check | None = None,
    gate: bool = False,
    keep_output: bool = True,
    timer: Timer | None = None,
    tolerance: tuple[float, float] = (COURSE_ATOL, 0.0),
    ranges: InputRange | None = None,
) -> VariantRun:
    """Run `variant` on `testcase`: one checked pass, then timed passes on fresh inputs, each checked.

    `check` sees the first pass's output (without one, the output is still scanned for NaN and Inf);
    with `gate`, a failed check ends the run without timing, and a failed sample leaves the run without a
    measurement. `tolerance` (atol, rtol) is the check's, for every sample's too. A VerifyReport and the
    TimedCheck are attached to the measurement. `ranges` is the input's range (the fresh inputs' distribution);
    None: taken from `testcase` here, on the host, before any launch.
    """
    ranges = _checked_range(ranges or InputRange.of(testcase.q, testcase.k, testcase.v), case_label)
    execution = make_execution(variant, testcase, gpu, policy.flush_l2)
    try:
        output, compute_s = _first_pass_naming(execution, case_label)
        result = check(output) if check is not None else finite_check(output)
        if gate and result is not None and not result.passed:
            return VariantRun(output if keep_output else None, None, result)
        stats, timed = _time(execution, variant, policy, testcase.shape, ranges, tolerance, timer, gpu)
    finally:
        execution.free()
    if not keep_output:
        output = None
    if gate and not timed.passed:
        return VariantRun(output, None, result, timed)
    measurement = _measurement(variant, case_label, testcase.shape, execution, compute_s, stats,
                               hot=not policy.flush_l2 or timer is not None)
    _attach_timed(measurement, timed)
    if isinstance(result, VerifyReport):
        measurement.verification = result
        measurement.nonfinite = result.nan_count + result.inf_count
    elif isinstance(result, FiniteCheck):
        measurement.nonfinite = result.nonfinite
    return VariantRun(output, measurement, result, timed)


def _attach_timed(measurement: Measurement, timed: TimedCheck) -> None:
    """The samples' check on the measurement, and its warnings (the clocks', the determinism check's) among its own."""
    measurement.timed_check = timed
    measurement.warnings.extend(timed.warnings())


def run_variant_pipelined(
    variant: Variant,
    path: str | os.PathLike,
    plan: ChunkPlan,
    case_label: str,
    gpu: GpuDevice,
    policy: TimingPolicy,
    out: str | os.PathLike | None,
    ranges: InputRange,
    check: Check | None = None,
    tolerance: tuple[float, float] = (COURSE_ATOL, 0.0),
) -> VariantRun:
    """A GPU variant on a course input file through the pipeline: the file streams to the device while
    the kernels run and the output streams to `out` (written safely, whole or not at all); then the
    timed passes on fresh inputs in the resident buffers, each checked. With `plan.keep_output` the output
    is also kept (and checked). `ranges` is the input's range, taken on the host (`BenchInput.value_range`)."""
    _checked_range(ranges, case_label)
    with TestcaseFile(path) as source:
        shape = source.shape
        execution, stages = make_streaming_execution(variant, shape, gpu, policy.flush_l2, plan.chunks, plan.depth,
                                                     plan.items_per_chunk)
        keep = np.empty((shape.B, shape.N, shape.d), dtype=np.float32) if plan.keep_output else None
        try:
            start = time.perf_counter()
            try:
                if out is None:
                    clock = run_pipeline(plan, source, stages, None, keep, release=False)
                else:
                    clocks = []
                    atomic_write(out, lambda f: clocks.append(run_pipeline(plan, source, stages, f, keep,
                                                                           release=False)))
                    clock = clocks[0]
                clock.wall_s = time.perf_counter() - start  # the file's creation and rename included
            finally:
                stages.release()
            result = (check(keep) if check is not None and keep is not None
                      else FiniteCheck(clock.nonfinite, shape.elements))
            stats, timed = _time(execution, variant, policy, shape, ranges, tolerance, None, gpu)
        finally:
            execution.free()
    measurement = _measurement(variant, case_label, shape, execution, clock.compute_s, stats,
                               hot=not policy.flush_l2)
    _attach_timed(measurement, timed)
    measurement.input_s, measurement.output_s, measurement.clock = clock.read_s, clock.write_s, clock
    measurement.nonfinite = clock.nonfinite
    if isinstance(result, VerifyReport):
        measurement.verification = result
    return VariantRun(keep, measurement, result, timed)


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
    """`attnbench run`'s one entry: `variant` on one case, `out` written if given, timed, and with `check`
    compared with the float64 reference within `tolerance` (atol, rtol; also every sample's check's).

    A GPU variant on an input on disk takes the pipeline (`run_variant_pipelined`) unless `pipeline` is
    off or its plan is refused (the reason goes to `notice`); every other run reads the input whole
    (`run_variant`). `gpu` is already open, so no input is written where no GPU can run it."""
    bench_input.prepare(progress)
    plan = plan_for_input(bench_input, variant, keep_output=keeps_output(check, out)) if pipeline else None
    if plan is not None and plan.refusal is not None:
        notice(f"{plan.refusal}; running the unpipelined path")
    elif plan is not None:
        checker = None
        if check:
            reference = _reference_before(bench_input, progress)
            checker = lambda output: compare_outputs(output, reference, *tolerance)  # noqa: E731
        outcome = run_variant_pipelined(variant, getattr(bench_input, "path"), plan, bench_input.label, gpu, policy,
                                        out, bench_input.value_range(), checker, tolerance)
        assert outcome.measurement is not None
        return _input_checked(bench_input, outcome.measurement)
    return _input_checked(bench_input, _run_whole_file(variant, bench_input, gpu, policy, out, check, tolerance,
                                                       progress))


def _run_whole_file(variant: Variant, bench_input: BenchInput, gpu: GpuDevice | None, policy: TimingPolicy,
                    out: str | os.PathLike | None, check: bool, tolerance: tuple[float, float],
                    progress: ProgressFactory) -> Measurement:
    """The input read whole, then copied, computed, copied back and written, one after another."""
    start = time.perf_counter()
    testcase = bench_input.load(progress)
    input_s = time.perf_counter() - start

    def checker(output: np.ndarray) -> VerifyReport:  # the reference is made only when first needed
        return compare_outputs(output, bench_input.reference(testcase, progress), *tolerance)

    outcome = run_variant(variant, testcase, bench_input.label, gpu, policy, checker if check else None,
                          tolerance=tolerance, ranges=bench_input.value_range(testcase))
    measurement = outcome.measurement
    assert measurement is not None and outcome.output is not None
    measurement.input_s = input_s
    if out is not None:
        start = time.perf_counter()
        write_output(out, outcome.output)
        measurement.output_s = time.perf_counter() - start
    return measurement


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
