"""The SM clock the samples ran at, and whether its moves moved the median.

The clock is read through NVML after each sample (outside the timed region). A GPU that power-caps
under a steady load (an H200 under a full tensor load does) runs every sample at the same lower clock:
that is the speed the kernel has there, and nothing to warn about. What makes a median untrustworthy
is a clock that CHANGED between samples, so that the median mixes two speeds.

The rule (`clock_shift`): the clock moved when its samples span more than CLOCK_STEP; it moved the
median when the median of all samples differs from the median of the samples taken at the median
clock by more than the median's noise (the half-width of its 95% interval). A handful of samples at
another clock (the first ones, before the power cap settles) leave that median where it is: no
warning. Where fewer than 3 samples sit at the median clock (a clock that wandered), half the gap
between the medians of the samples at the upper and lower halves of the clocks stands for the shift.
Samples are never dropped (NVBench drops those taken below 75% of the default clock and pauses to
let the GPU recover): a capped clock is what a user's kernel meets too, and dropping samples would
report a speed the GPU does not sustain. The warning says the numbers and what to do.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

CLOCK_STEP = 0.02  # relative: NVML reports clocks in steps of about 15 MHz (under 1% of 1980 MHz)
UNKNOWN_NOISE_THRESHOLD = 0.01  # the default target noise, when too few samples give no noise
MIN_GROUP = 3


@dataclass(frozen=True)
class ClockSummary:
    """The SM clock over a cell's samples (MHz)."""

    median: float
    low: float
    high: float

    @property
    def moved(self) -> bool:
        return self.high > 0 and (self.high - self.low) / self.high > CLOCK_STEP

    def text(self) -> str:
        """'1755 MHz', or '1755 MHz (1590-1980)' when it moved."""
        found = f"{self.median:.0f} MHz"
        return f"{found} ({self.low:.0f}-{self.high:.0f})" if self.moved else found

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class ClockShift:
    """A warning: the SM clock moved within a cell's samples by enough to move its median beyond its noise."""

    low_mhz: float
    high_mhz: float
    shift: float  # relative: how far the clock moved the median
    noise: float  # relative: the threshold it exceeded
    reasons: tuple[str, ...] = ()  # NVML's throttle reasons at the end of sampling

    remedy = ("rerun on an idle, cool GPU, or lock the clocks (nvidia-smi --lock-gpu-clocks, as root) "
              "so that every sample runs at one clock")

    def text(self) -> str:
        why = f" ({', '.join(self.reasons)})" if self.reasons else ""
        return (f"the SM clock moved between {self.low_mhz:.0f} and {self.high_mhz:.0f} MHz during the samples"
                f"{why}, moving the median by {100 * self.shift:.1f}% (beyond its noise ±{100 * self.noise:.1f}%): "
                f"{self.remedy}")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reasons": list(self.reasons), "text": self.text()}


def clock_summary(clocks: list[float] | None) -> ClockSummary | None:
    """The median and range of the per-sample clocks; None when they are unknown."""
    if not clocks:
        return None
    return ClockSummary(statistics.median(clocks), min(clocks), max(clocks))


def _relative(a: float, b: float, scale: float) -> float:
    return abs(a - b) / scale if scale > 0 else 0.0


def clock_shift(samples: list[float], clocks: list[float] | None, noise: float,
                reasons: tuple[str, ...] = ()) -> ClockShift | None:
    """The warning when the clock moved the median beyond its noise (see the module's rule); else None."""
    summary = clock_summary(clocks)
    if summary is None or clocks is None or len(clocks) != len(samples) or not summary.moved:
        return None
    median = statistics.median(samples)
    at_median_clock = [s for s, c in zip(samples, clocks) if abs(c - summary.median) <= CLOCK_STEP * summary.median]
    if len(at_median_clock) >= MIN_GROUP:
        shift = _relative(median, statistics.median(at_median_clock), median)
    else:
        ordered = [s for _, s in sorted(zip(clocks, samples))]
        half = len(ordered) // 2
        shift = _relative(statistics.median(ordered[:half]), statistics.median(ordered[-half:]), median) / 2
    threshold = noise if math.isfinite(noise) else UNKNOWN_NOISE_THRESHOLD
    if shift <= threshold:
        return None
    return ClockShift(summary.low, summary.high, shift, threshold, tuple(reasons))
