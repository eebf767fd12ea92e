"""Verdicts from measured noise: is one time the SAME as, FASTER or SLOWER than another?

Two medians are called different only when they differ by more than the measurement can resolve:
the larger of the two relative noises (standard deviation over mean of each sample set), and never
less than a floor, so that identical code measured twice reads SAME despite run-to-run drift
(clocks, temperature). Speedups carry an uncertainty propagated from both relative noises, as
hyperfine prints them ("1.52 ± 0.03x").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Iterable

from attnbench.results.stats import KernelStats

DEFAULT_SAME_WITHIN = 0.02  # differences under 2% are never called, whatever the noise


class Verdict(str, Enum):
    SAME = "SAME"
    FASTER = "FASTER"
    SLOWER = "SLOWER"


@dataclass(frozen=True)
class TimeComparison:
    """A candidate time against a reference time (medians in ms, relative noises as fractions)."""

    reference_ms: float
    candidate_ms: float
    reference_noise: float
    candidate_noise: float
    same_within: float = DEFAULT_SAME_WITHIN

    @property
    def change(self) -> float:
        """Relative change of the candidate's time: +0.10 is 10% slower, -0.10 is 10% faster."""
        return self.candidate_ms / self.reference_ms - 1.0

    @property
    def band(self) -> float:
        """The smallest relative change this pair of measurements can call: max noise, or the floor."""
        return max(self.same_within, self.reference_noise, self.candidate_noise)

    @property
    def verdict(self) -> Verdict:
        # Compare on the log scale, so that 2x slower and 2x faster are symmetric.
        ratio = math.log(self.candidate_ms / self.reference_ms)
        if abs(ratio) <= math.log1p(self.band) + 1e-12:  # a difference exactly at the band is SAME
            return Verdict.SAME
        return Verdict.SLOWER if ratio > 0 else Verdict.FASTER

    @property
    def speedup(self) -> float:
        """How many times faster the candidate is (reference time over candidate time)."""
        return self.reference_ms / self.candidate_ms

    @property
    def speedup_error(self) -> float:
        """One standard deviation of the speedup, from both relative noises in quadrature."""
        return self.speedup * math.hypot(self.reference_noise, self.candidate_noise)

    def describe_speedup(self) -> str:
        """'1.52 ± 0.03x'."""
        return f"{self.speedup:.2f} ± {self.speedup_error:.2f}x"

    def describe_change(self) -> str:
        """'+12.3% (noise 0.8%)'."""
        return f"{100 * self.change:+.1f}% (band {100 * self.band:.1f}%)"


def compare_stats(reference: KernelStats, candidate: KernelStats, same_within: float = DEFAULT_SAME_WITHIN) -> TimeComparison:
    """Compare two measurements by their medians and relative noises."""
    return TimeComparison(reference.median, candidate.median, reference.noise, candidate.noise, same_within)


def is_regression(comparison: TimeComparison, fail_slower: float | None = None) -> bool:
    """SLOWER beyond noise, and, when `fail_slower` is given, slower by more than that fraction too."""
    if comparison.verdict is not Verdict.SLOWER:
        return False
    return fail_slower is None or comparison.change > fail_slower


def geometric_mean(values: Iterable[float]) -> float | None:
    """The geometric mean of positive values; None for none."""
    logs = [math.log(v) for v in values]
    return math.exp(sum(logs) / len(logs)) if logs else None


@dataclass(frozen=True)
class GeometricMean:
    """A geometric mean of speedups with its propagated uncertainty."""

    value: float
    error: float
    count: int

    def describe(self) -> str:
        return f"{self.value:.2f} ± {self.error:.2f}x"


def geometric_mean_speedup(comparisons: list[TimeComparison]) -> GeometricMean | None:
    """Geometric mean of the speedups; the relative errors add in quadrature, divided by the count."""
    if not comparisons:
        return None
    value = geometric_mean(c.speedup for c in comparisons)
    assert value is not None
    relative = math.sqrt(sum((c.speedup_error / c.speedup) ** 2 for c in comparisons)) / len(comparisons)
    return GeometricMean(value, value * relative, len(comparisons))


def parse_percent(text: str) -> float:
    """'5%', '5' or '0.5%' as a fraction (0.05, 0.05, 0.005); refuses negative values."""
    raw = text.strip().rstrip("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{text!r} is not a percentage (write e.g. 5%)") from None
    if value < 0 or not math.isfinite(value):
        raise ValueError(f"{text!r}: a percentage must be a finite number >= 0")
    return value / 100.0
