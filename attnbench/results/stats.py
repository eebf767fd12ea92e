"""Statistics of one measurement's samples: median, spread, noise and outliers (milliseconds).

Noise is robust and honest about what few samples can say: the half-width of a distribution-free
95% confidence interval of the median (between two order statistics chosen from the binomial
distribution), relative to the median. It shrinks as samples accumulate and a few outliers barely
move it; outliers are counted separately (Tukey's fences). Fewer than 6 samples cannot give a 95%
interval, so their noise is unknown (NaN, printed as ±?), never 0.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from attnbench.results.clocks import ClockShift, ClockSummary, clock_shift, clock_summary
from attnbench.results.run_warnings import RunWarning


@dataclass
class KernelStats:
    """Statistics of one measurement's samples (milliseconds)."""

    samples_ms: list[float]
    converged: bool = True
    warnings: list[RunWarning] = field(default_factory=list)
    clocks_mhz: list[float] | None = None  # the SM clock after each sample (NVML); None when unknown
    throttle_reasons: tuple[str, ...] = ()  # NVML's throttle reasons when sampling ended
    fresh_inputs: int = 0  # samples that ran on an input no launch had seen (bench.fresh_samples: all of them)

    @property
    def clock(self) -> ClockSummary | None:
        """The SM clock the samples ran at (median and range), when known."""
        return clock_summary(self.clocks_mhz)

    @property
    def clock_warning(self) -> ClockShift | None:
        """Set when the clock moved within the samples by enough to move the median beyond its noise."""
        return clock_shift(self.samples_ms, self.clocks_mhz, relative_noise, self.throttle_reasons)

    def all_warnings(self) -> list[RunWarning]:
        """The sampler's warnings and the clock's."""
        shift = self.clock_warning
        return self.warnings + ([shift.warning()] if shift is not None else [])

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
    def median_interval(self) -> tuple[float, float] | None:
        """The 95% confidence interval of the median (ms), or None with fewer than 6 samples."""
        return median_interval(self.samples_ms)

    @property
    def noise(self) -> float:
        """Half-width of the median's 95% confidence interval over the median; NaN when unknown."""
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
            "fresh_inputs": self.fresh_inputs,
            "median_ms": self.median,
            "mean_ms": self.mean,
            "stdev_ms": self.stdev,
            "min_ms": self.min,
            "max_ms": self.max,
            "p20_ms": self.quantile(0.2),
            "p80_ms": self.quantile(0.8),
            "noise": self.noise,
            "median_ci95_ms": list(self.median_interval) if self.median_interval else None,
            "outliers": self.outliers,
            "converged": self.converged,
            "warnings": [warning.to_dict() for warning in self.warnings],
            "sm_clock_mhz": self.clocks_mhz,
            "sm_clock": self.clock.to_dict() if self.clock is not None else None,
            "throttle_reasons": list(self.throttle_reasons),
            "clock_warning": self.clock_warning.to_dict() if self.clock_warning is not None else None,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "KernelStats":
        samples = data["samples_ms"]
        if not isinstance(samples, (list, tuple)) or not samples or not all(_positive_time(s) for s in samples):
            # every statistic is derived from them: an empty, negative or textual sample failed later, in a traceback
            raise ValueError("kernel.samples_ms must be a non-empty list of positive, finite times in ms")
        clocks = data.get("sm_clock_mhz")
        warnings = [RunWarning.from_saved(warning) for warning in data.get("warnings", [])]
        return cls(list(data["samples_ms"]), data.get("converged", True), warnings,
                   list(clocks) if clocks is not None else None, tuple(data.get("throttle_reasons", ())),
                   data.get("fresh_inputs", 0))


def _positive_time(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


CONFIDENCE = 0.95
_EXACT_UP_TO = 60  # samples; beyond, the binomial's normal approximation is exact enough


def _interval_rank(n: int) -> int:
    """The largest k (1-based) with P(Binomial(n, 1/2) < k) <= (1 - CONFIDENCE) / 2, or 0 if none.

    Exact up to _EXACT_UP_TO samples; beyond, the normal approximation gives that k or one less (an
    interval one order statistic wider, never narrower).
    """
    tail = (1 - CONFIDENCE) / 2
    if n > _EXACT_UP_TO:
        return max(0, math.floor(n / 2 - 1.959964 * math.sqrt(n) / 2))
    total, cumulative, k = 2**n, 0, 0
    while k < n and (cumulative + math.comb(n, k)) / total <= tail:
        cumulative += math.comb(n, k)
        k += 1
    return k


def median_interval(samples: list[float]) -> tuple[float, float] | None:
    """The distribution-free 95% confidence interval of the median, or None when too few samples."""
    k = _interval_rank(len(samples))
    if k < 1:
        return None
    ordered = sorted(samples)
    return ordered[k - 1], ordered[len(ordered) - k]


def relative_noise(samples: list[float]) -> float:
    """Half-width of the median's 95% interval over the median; NaN with fewer than 6 samples."""
    interval = median_interval(samples)
    median = statistics.median(samples) if samples else 0.0
    if interval is None or median <= 0:
        return math.nan
    return (interval[1] - interval[0]) / 2 / median
