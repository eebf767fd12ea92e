"""The SM clock the samples ran at, and whether its moves moved the median.

The clock is read through NVML after each sample (outside the timed region). A GPU that power-caps
under a steady load (an H200 under a full tensor load does) runs every sample at the same lower clock:
that is the speed the kernel has there, and nothing to warn about. What makes a median untrustworthy
is a clock that CHANGED between samples, so that the median mixes two speeds.

The rule (`clock_shift`): the clock moved when its samples span more than CLOCK_STEP. It moved the
median when the median of all samples differs from the median of the samples taken at the commonest
clock by more than the noise those samples have among themselves (the half-width of their median's
95% interval: the noise the median would have had, had the clock held), and by at least 1%. The noise of all samples
would not do: a clock that splits the samples in two widens that interval to span both speeds, and
the move would never exceed it. A handful of samples at another clock (the first ones, before the
power cap settles) leave the median where it is: no warning. Where fewer than 3 samples share a clock
(it wandered), half the gap between the medians of the samples at the upper and lower halves of the
clocks stands for the move, against the larger noise of the two halves.
Samples are never dropped (NVBench drops those taken below 75% of the default clock and pauses to
let the GPU recover): a capped clock is what a user's kernel meets too, and dropping samples would
report a speed the GPU does not sustain. The warning says the numbers and what to do.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Callable

from attnbench.results.run_warnings import RunWarning, WarningKind

CLOCK_STEP = 0.02  # relative: NVML reports clocks in steps of about 15 MHz (under 1% of 1980 MHz)
UNKNOWN_NOISE_THRESHOLD = 0.01  # the default target noise, when too few samples give no noise
# A move under 1% is not worth a warning, whatever the noise: very steady samples have a noise of
# ±0.0%, which a 0.0% move "exceeded" on an H200; compare's verdicts do not resolve 1% (their bands start
# at 2%), so such a move changes no verdict.
MIN_SHIFT = 0.01
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

    def warning(self) -> RunWarning:
        why = f" ({', '.join(self.reasons)})" if self.reasons else ""
        return RunWarning(WarningKind.CLOCK_SHIFT,
                          f"the SM clock moved between {self.low_mhz:.0f} and {self.high_mhz:.0f} MHz during the "
                          f"samples{why}, moving the median by {100 * self.shift:.1f}% (beyond its noise "
                          f"±{100 * self.noise:.1f}%)", self.remedy)

    def text(self) -> str:
        return self.warning().sentence()

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reasons": list(self.reasons), "text": self.text()}


def clock_summary(clocks: list[float] | None) -> ClockSummary | None:
    """The median and range of the per-sample clocks; None when they are unknown."""
    if not clocks:
        return None
    return ClockSummary(statistics.median(clocks), min(clocks), max(clocks))


def _relative(a: float, b: float, scale: float) -> float:
    return abs(a - b) / scale if scale > 0 else 0.0


def clock_shift(samples: list[float], clocks: list[float] | None, noise_of: Callable[[list[float]], float],
                reasons: tuple[str, ...] = ()) -> ClockShift | None:
    """The warning when the clock moved the median beyond its noise (see the module's rule); else None.
    `noise_of` gives the relative noise of a list of samples (NaN when too few to say)."""
    summary = clock_summary(clocks)
    if summary is None or clocks is None or len(clocks) != len(samples) or not summary.moved:
        return None
    median = statistics.median(samples)
    commonest = statistics.mode(round(c) for c in clocks)
    steady = [s for s, c in zip(samples, clocks) if abs(c - commonest) <= CLOCK_STEP * commonest]
    if len(steady) >= MIN_GROUP:
        shift = _relative(median, statistics.median(steady), median)
        noise = noise_of(steady)
        if not math.isfinite(noise):
            noise = noise_of(samples)
    else:
        ordered = [s for _, s in sorted(zip(clocks, samples))]
        half = len(ordered) // 2
        low, high = ordered[:half], ordered[-half:]
        shift = _relative(statistics.median(low), statistics.median(high), median) / 2
        noise = max(noise_of(low), noise_of(high))  # NaN (then the default target) when the halves are small
    threshold = max(noise if math.isfinite(noise) else UNKNOWN_NOISE_THRESHOLD, MIN_SHIFT)
    if shift <= threshold:
        return None
    return ClockShift(summary.low, summary.high, shift, threshold, tuple(reasons))
