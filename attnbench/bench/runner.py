"""The runner: joins a testcase and a variant, runs it once to get (and check) its output, then times it.

`run_variant` is the one path every command takes: `run` is a one-cell compare. The first pass is
timed as the course times "computing" (allocation, host-to-device, kernels, device-to-host); the
sampler then times repeated passes. With `gate`, a pass whose output fails its check gets no time.
`run_variant_pipelined` is `run`'s default for GPU variants: its first pass streams the input file
through the pipeline (`bench.pipeline`) and writes the output as it goes; the timed passes are the same.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from attnbench.backends.base import Execution
from attnbench.backends.registry import make_execution
from attnbench.results.ceilings import applied_ceiling, cached_for
from attnbench.bench.chunk_plan import ChunkPlan
from attnbench.bench.pipeline import run_pipeline
from attnbench.bench.sampler import TimingPolicy, measure, sample_execution, timed_passes
from attnbench.bench.verify import FiniteCheck, finite_check
from attnbench.cases.streaming import TestcaseFile
from attnbench.cases.testcase import Shape, Testcase
from attnbench.errors import KernelLaunchError
from attnbench.files import atomic_write
from attnbench.kernels.variant import Variant
from attnbench.results.measurement import Measurement
from attnbench.results.stats import KernelStats
from attnbench.results.verification import VerifyReport

# A replacement for the sampler (the square-attention lab's doubling rule is one).
Timer = Callable[[Execution, TimingPolicy], KernelStats]
# Checks an output; returns anything with a boolean `passed` (a VerifyReport, or a workload's own rule).
Check = Callable[[np.ndarray], Any]


@dataclass
class VariantRun:
    """What one run of a variant gave: its output (when kept), its measurement, its check."""

    output: np.ndarray | None
    measurement: Measurement | None  # None when the check gated it out: a wrong answer gets no speed
    check: Any | None


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


def _time(execution: Execution, variant: Variant, policy: TimingPolicy, compute_s: float,
          timer: Timer | None) -> KernelStats:
    """Kernel statistics after the first pass; a host pass already timed counts as the first sample."""
    if timer is not None:
        return timer(execution, policy)
    if variant.kind.runs_on_host:
        return sample_execution(execution, policy, first_samples=[compute_s * 1e3])
    return sample_execution(execution, policy)


def _measurement(variant: Variant, case_label: str, shape: Shape, gpu: Any | None, execution: Execution,
                 compute_s: float, stats: KernelStats) -> Measurement:
    measurement = Measurement(
        variant=variant.name,
        case=case_label,
        shape=shape,
        device=execution.device_name,
        compute_s=compute_s,
        kernel=stats,
        compile_s=execution.compile_s,
        peak_flops=execution.peak_flops,
    )
    if gpu is not None and variant.kind.needs_gpu:
        applied = applied_ceiling(variant.unit, shape.flops, stats.median * 1e-3, (shape.B, shape.N, shape.d),
                                  cached_for(gpu))
        measurement.ceiling = applied.to_dict() if applied else None
        reasons = gpu.throttle_reasons()
        if reasons:
            measurement.warnings.append(
                f"the GPU reports clock throttling ({', '.join(reasons)}): let it cool or lower its load, then rerun"
            )
    return measurement


def run_variant(
    variant: Variant,
    testcase: Testcase,
    case_label: str,
    gpu: Any | None,
    policy: TimingPolicy,
    check: Check | None = None,
    gate: bool = False,
    keep_output: bool = True,
    timer: Timer | None = None,
) -> VariantRun:
    """Run `variant` on `testcase`: one checked pass, then timed passes.

    `check` sees the first pass's output (without one, the output is still scanned for NaN and Inf);
    with `gate`, a failed check ends the run without timing. A VerifyReport is attached to the measurement.
    """
    execution = make_execution(variant, testcase, gpu, policy.flush_l2)
    try:
        output, compute_s = _first_pass_naming(execution, case_label)
        result = check(output) if check is not None else finite_check(output)
        if not keep_output:
            output = None
        if gate and result is not None and not result.passed:
            return VariantRun(output, None, result)
        stats = _time(execution, variant, policy, compute_s, timer)
    finally:
        execution.free()
    measurement = _measurement(variant, case_label, testcase.shape, gpu, execution, compute_s, stats)
    if isinstance(result, VerifyReport):
        measurement.verification = result
        measurement.nonfinite = result.nan_count + result.inf_count
    elif isinstance(result, FiniteCheck):
        measurement.nonfinite = result.nonfinite
    return VariantRun(output, measurement, result)


def run_variant_pipelined(
    variant: Variant,
    path: str | os.PathLike,
    plan: ChunkPlan,
    case_label: str,
    gpu: Any,
    policy: TimingPolicy,
    out: str | os.PathLike | None,
    check: Check | None = None,
) -> VariantRun:
    """A GPU variant on a course input file through the pipeline: the file streams to the device while
    the kernels run and the output streams to `out` (written safely, whole or not at all); then the
    timed passes on the resident buffers. With `plan.keep_output` the output is also kept (and checked)."""
    from attnbench.backends.gpu_execution import GpuExecution
    from attnbench.backends.gpu_pipeline import GpuStages

    with TestcaseFile(path) as source:
        execution = GpuExecution(gpu, variant, source.shape, policy.flush_l2)
        stages = GpuStages(execution, plan.chunks, plan.depth, plan.items_per_chunk)
        shape = source.shape
        keep = np.empty((shape.B, shape.N, shape.d), dtype=np.float32) if plan.keep_output else None
        try:
            start = time.perf_counter()
            if out is None:
                clock = run_pipeline(plan, source, stages, None, keep)
            else:
                clocks = []
                atomic_write(out, lambda f: clocks.append(run_pipeline(plan, source, stages, f, keep)))
                clock = clocks[0]
            clock.wall_s = time.perf_counter() - start  # the file's creation and rename included
            result = check(keep) if check is not None and keep is not None else FiniteCheck(clock.nonfinite, shape.elements)
            stats = sample_execution(execution, policy)
        finally:
            execution.free()
    measurement = _measurement(variant, case_label, shape, gpu, execution, clock.compute_s, stats)
    measurement.input_s, measurement.output_s, measurement.clock = clock.read_s, clock.write_s, clock
    measurement.nonfinite = clock.nonfinite
    if isinstance(result, VerifyReport):
        measurement.verification = result
    return VariantRun(keep, measurement, result)


__all__ = ["Check", "Timer", "VariantRun", "measure", "run_variant", "run_variant_pipelined", "timed_passes"]
