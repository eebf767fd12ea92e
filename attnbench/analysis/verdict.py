"""Verdicts from measured noise: is one time the SAME as, FASTER or SLOWER than another?

Two medians are called different only when they differ by more than both noises (the half-widths of
their 95% confidence intervals) plus a floor for run-to-run drift (clocks, temperature), so that
identical code measured twice reads SAME: under 1% of self-comparisons regress in a test of the
whole chain with outliers and 1% drift. An
unknown noise (too few samples) is SAME within the uncertainty, never SLOWER. Speedups carry an
uncertainty from both noises, as hyperfine prints them ("1.52 ± 0.03x"; "±?" when unknown).
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
    def uncertain(self) -> bool:
        """True when either noise is unknown: no difference can be called."""
        return not (math.isfinite(self.reference_noise) and math.isfinite(self.candidate_noise))

    @property
    def band(self) -> float:
        """The smallest relative change this pair can call: both intervals' half-widths plus the floor."""
        if self.uncertain:
            return math.inf
        return self.same_within + self.reference_noise + self.candidate_noise

    @property
    def verdict(self) -> Verdict:
        if self.uncertain:
            return Verdict.SAME
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
        """The speedup's uncertainty from both relative noises in quadrature (NaN when unknown)."""
        return self.speedup * math.hypot(self.reference_noise, self.candidate_noise)

    def describe_speedup(self) -> str:
        """'1.52 ± 0.03x', or '1.52 ±?x' when a noise is unknown."""
        error = self.speedup_error
        return f"{self.speedup:.2f} ± {error:.2f}x" if math.isfinite(error) else f"{self.speedup:.2f} ±?x"

    @property
    def band_in_direction(self) -> float:
        """The band as a relative change on the side the candidate moved: `band` when slower, and
        band / (1 + band) when faster, since the verdict is symmetric on the log scale. The printed
        change is then called exactly when it is beyond the printed band."""
        if self.change >= 0 or not math.isfinite(self.band):
            return self.band
        return self.band / (1.0 + self.band)

    def describe_change(self) -> str:
        """'+12.3% (band 2.0%)', or '(noise unknown)'; the band is the one on the change's side."""
        band = f"band {100 * self.band_in_direction:.1f}%" if math.isfinite(self.band) else "noise unknown"
        return f"{100 * self.change:+.1f}% ({band})"


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
        return f"{self.value:.2f} ± {self.error:.2f}x" if math.isfinite(self.error) else f"{self.value:.2f} ±?x"


def geometric_mean_speedup(comparisons: list[TimeComparison]) -> GeometricMean | None:
    """Geometric mean of the speedups; the relative errors add in quadrature, divided by the count."""
    if not comparisons:
        return None
    value = geometric_mean(c.speedup for c in comparisons)
    assert value is not None
    relative = math.sqrt(sum((c.speedup_error / c.speedup) ** 2 for c in comparisons)) / len(comparisons)
    return GeometricMean(value, value * relative, len(comparisons))


def check_same_within(fraction: object) -> float:
    """`same_within` given from Python as a fraction: a finite number >= 0, as --same-within's percentage is
    (same_within=-1 or nan from Python made every SAME verdict impossible, silently)."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not math.isfinite(fraction) \
            or fraction < 0:
        raise ValueError(f"same_within={fraction!r}: a fraction must be a finite number >= 0 (0.02 is 2%)")
    return float(fraction)


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
