"""The sampler: warm-up, the L2 flush and the clock around each pass, repeated until the noise is low.

It owns how a pass is timed, whatever the backend: a backend supplies only "run one pass", a way
to flush the L2 cache, and its clock (CUDA events for device work, the host clock for the cpu
variant). The samples' statistics are `attnbench.results.stats.KernelStats`. A device variant's samples
also carry the SM clock each ran at (`SmClockRecorder`, read through NVML by the GPU object after each
sample, outside the timed region); the rule of when a moving clock deserves a warning is
`attnbench.results.clocks`.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from attnbench.backends.base import Clock
from attnbench.backends.device import GpuDevice
from attnbench.results.run_warnings import RunWarning, WarningKind
from attnbench.results.stats import KernelStats, relative_noise


@dataclass(frozen=True)
class TimingPolicy:
    """How many samples to take: a fixed count (`reps`), or until the noise is under `target_noise`."""

    warmup: int = 2
    reps: int | None = None
    target_noise: float = 0.01
    min_time_s: float = 0.25
    min_samples: int = 10
    max_samples: int = 2000
    timeout_s: float = 10.0
    flush_l2: bool = True


NOISE_WARNING = RunWarning(WarningKind.NOISE, "noise above the target when sampling stopped (see the ±)",
                           "close other work on the machine, or give it longer with --timeout")
FEW_SAMPLES_WARNING = RunWarning(WarningKind.FEW_SAMPLES, "fewer than 6 samples, so the noise is unknown (±?)",
                                 "use --reps 10 or more, or a longer --timeout")


def measure(
    sample: Callable[[], float],
    policy: TimingPolicy,
    first_samples: list[float] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    on_sample: Callable[[float], None] | None = None,
) -> KernelStats:
    """Warm up, then sample until the policy is satisfied; `first_samples` count toward the total.

    `on_sample` sees each new sample (milliseconds) right after it is taken, outside the timed region
    (the runner reads the SM clock there); not the warm-up passes, nor `first_samples`.

    Adaptive sampling stops once the median's confidence interval is within the target (after the
    minimum samples and time), or before a sample that would not fit in the time budget.
    """
    for _ in range(policy.warmup):
        sample()
    samples = list(first_samples or [])
    start = clock()
    while True:
        if policy.reps is not None:
            if len(samples) >= policy.reps:
                break
        else:
            elapsed = clock() - start
            enough = len(samples) >= policy.min_samples and elapsed >= policy.min_time_s
            if enough and relative_noise(samples) <= policy.target_noise:
                break
            typical_s = statistics.median(samples) / 1e3 if samples else 0.0
            if samples and elapsed + typical_s > policy.timeout_s or len(samples) >= policy.max_samples:
                break
        samples.append(sample())
        if on_sample is not None:
            on_sample(samples[-1])
    stats = KernelStats(samples)
    if policy.reps is None and stats.count >= 6 and not stats.noise <= policy.target_noise:
        stats.converged = False
        stats.warnings.append(NOISE_WARNING)
    if policy.reps is None and stats.count < 6:
        stats.converged = False
        stats.warnings.append(FEW_SAMPLES_WARNING)
    return stats


class Timeable(Protocol):
    """What the sampler needs from a backend's execution."""

    clock: Clock

    def run_pass(self) -> None: ...

    def flush_l2(self) -> None: ...


def timed_passes(execution: Timeable, passes: int = 1, flush_l2: bool = False) -> float:
    """Milliseconds for `passes` passes back to back; the flush, if asked, happens before the clock starts."""
    if flush_l2:
        execution.flush_l2()
    execution.clock.start()
    for _ in range(passes):
        execution.run_pass()
    return execution.clock.stop()


class SmClockRecorder:
    """Reads the GPU's SM clock (NVML) after each sample; gives up, leaving the clock unknown, at the first
    read NVML cannot answer (no pynvml, no libnvidia-ml, a device it does not manage)."""

    def __init__(self, gpu: GpuDevice | None) -> None:
        self._gpu = gpu
        self._read = getattr(gpu, "sm_clock_mhz", None)
        self.clocks: list[float] | None = [] if callable(self._read) else None

    def __call__(self, sample_ms: float) -> None:
        if self.clocks is None or self._read is None:
            return
        found = self._read()
        if found is None:
            self.clocks = None
        else:
            self.clocks.append(found)

    def attach(self, stats: KernelStats) -> KernelStats:
        """Keep the clocks with the samples (when there is one per sample), and NVML's throttle reasons."""
        if self.clocks is not None and len(self.clocks) == stats.count:
            stats.clocks_mhz = self.clocks
            reasons = getattr(self._gpu, "throttle_reasons", None)
            stats.throttle_reasons = tuple(reasons()) if callable(reasons) else ()
        return stats
