"""The measurement engine: warm-up, repeated samples until the noise is low, and their statistics.

It times anything that can produce one sample in milliseconds; the runner supplies GPU samples
(CUDA events around one pass, the L2 flushed before it, outside the timed window) or host samples.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable


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


@dataclass
class KernelStats:
    """Statistics of one measurement's samples (milliseconds)."""

    samples_ms: list[float]
    converged: bool = True
    warnings: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.samples_ms)

    @property
    def median(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples_ms)

    @property
    def stdev(self) -> float:
        return statistics.stdev(self.samples_ms) if self.count > 1 else 0.0

    @property
    def min(self) -> float:
        return min(self.samples_ms)

    @property
    def max(self) -> float:
        return max(self.samples_ms)

    def quantile(self, q: float) -> float:
        """Linear-interpolated quantile, q in [0, 1]."""
        ordered = sorted(self.samples_ms)
        position = q * (len(ordered) - 1)
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    @property
    def noise(self) -> float:
        """Relative noise: standard deviation over mean."""
        return relative_noise(self.samples_ms)

    @property
    def outliers(self) -> int:
        """Samples outside Tukey's fences (1.5 IQR beyond the quartiles)."""
        if self.count < 4:
            return 0
        q1, q3 = self.quantile(0.25), self.quantile(0.75)
        fence = 1.5 * (q3 - q1)
        return sum(1 for s in self.samples_ms if s < q1 - fence or s > q3 + fence)

    def to_dict(self) -> dict:
        return {
            "samples_ms": self.samples_ms,
            "count": self.count,
            "median_ms": self.median,
            "mean_ms": self.mean,
            "stdev_ms": self.stdev,
            "min_ms": self.min,
            "max_ms": self.max,
            "p20_ms": self.quantile(0.2),
            "p80_ms": self.quantile(0.8),
            "noise": self.noise,
            "outliers": self.outliers,
            "converged": self.converged,
            "warnings": self.warnings,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "KernelStats":
        return cls(list(data["samples_ms"]), data.get("converged", True), list(data.get("warnings", [])))


def relative_noise(samples: list[float]) -> float:
    if len(samples) < 2:
        return 0.0
    mean = statistics.fmean(samples)
    return statistics.stdev(samples) / mean if mean > 0 else 0.0


def measure(
    sample: Callable[[], float],
    policy: TimingPolicy,
    first_samples: list[float] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> KernelStats:
    """Warm up, then sample until the policy is satisfied; `first_samples` count toward the total."""
    for _ in range(policy.warmup):
        sample()
    samples = list(first_samples or [])
    start = clock()
    while True:
        if policy.reps is not None and len(samples) >= policy.reps:
            break
        samples.append(sample())
        if policy.reps is not None:
            continue
        elapsed = clock() - start
        enough = len(samples) >= policy.min_samples and elapsed >= policy.min_time_s
        if enough and relative_noise(samples) <= policy.target_noise:
            break
        if elapsed >= policy.timeout_s or len(samples) >= policy.max_samples:
            break
    stats = KernelStats(samples)
    if policy.reps is None and stats.noise > policy.target_noise:
        stats.converged = False
        stats.warnings.append(
            f"noise is {100 * stats.noise:.1f}% of the mean (target {100 * policy.target_noise:g}%) after "
            f"{stats.count} samples: close other work on the GPU, or give it longer with --timeout"
        )
    if policy.reps is None and stats.count < 5:
        stats.warnings.append(f"only {stats.count} sample(s): the statistics are rough; use --reps 10 or more")
    return stats
