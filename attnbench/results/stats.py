"""Statistics of one measurement's samples: median, spread, noise and outliers (milliseconds)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field


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
