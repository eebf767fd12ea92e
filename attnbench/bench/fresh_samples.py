"""The timed samples: each on an input no launch has seen, each output checked before the next one.

Before every sample (warm-up passes too), outside the timed window: a new seed from the operating system's
entropy (`cases.fresh_values.draw_seed`), the input buffers filled with that seed's values on the device (the
case's per-tensor range), the output filled with NaN, the whole context synchronised (nothing launched before
is still running). Then the sampler's window as it always was: the L2 flush (unless hot) and the one launch
between the clock's events. After it, outside the window: the context synchronised again, the input written
again from the seed (a kernel that changed its input gains nothing: the check reads the seed's values), the
whole output scanned for NaN and Inf, and rows drawn *after* the launch (another seed from the entropy) computed
exactly (float64 on the device) and held to the check's tolerance.

How many rows: a kernel that skips or corrupts a fraction f of the rows passes one sample's check only if none
of the R rows drawn (independently, uniformly over every item and row) is one of them: probability (1 - f)^R.
For f = 1% to be caught with probability at least 1 - 1e-6 by ONE sample, R >= ln(1e-6) / ln(0.99) = 1374.6:
`ROWS_PER_SAMPLE` = 1375 ((0.99)^1375 = 9.9e-7). A cell has at least 10 samples with adaptive sampling, so
the cell's bound is far lower still (0.1% of the rows in every sample: 0.999^13750 = 1.1e-6). A case with
fewer rows than that has every row checked, every sample.

A sample that fails ends the cell: WRONG with the sample, its rows and its worst element, no speed. The median
is over samples that each passed. No time rule is needed: nothing a kernel saw before can answer a new input.

The host's wall clock also times the first `WALL_CHECKED` timed samples (the context synchronised before and
after): when each exceeds 1.25 x its event time + 2 ms, the cell gets a warning (work the events did not wait
for). After the samples, untimed and checked like them, the pass checks (`bench.pass_checks`, one class each,
applied by `FreshSampler.after_samples`): one fresh input launched twice, the output poisoned before each (a
kernel that recognises an input it has seen serves the poison); their rows must have the same bits, else a warning
names the rows (the determinism check); then one launch on another fresh input with the output NOT poisoned first
(a kernel that computes only when it finds poison leaves the last answer); then that same input launched again
with zeros written over the output first (a kernel that skips a launch whose input its previous launch answered
while the output holds a number leaves the zeros: the square lab's batches, passes back to back on one input
poisoned once, are where such a kernel would gain).
"""

from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

from attnbench.backends.base import Execution
from attnbench.bench.pass_checks import AFTER_SAMPLES, PassCheck
from attnbench.bench.sampler import TimingPolicy, measure, timed_passes
from attnbench.cases.fresh_values import InputRange, draw_seed
from attnbench.cases.testcase import Shape
from attnbench.results.stats import KernelStats
from attnbench.results.timed_check import TIMED, WARMUP, ClockDisagreement, DifferingRows, SampleFailure, TimedCheck

ROWS_PER_SAMPLE = 1375  # ceil(ln(1e-6) / ln(0.99)): 1% of rows wrong is caught by one sample, p >= 1 - 1e-6
WALL_CHECKED = 3
WALL_FACTOR = 1.25
WALL_SLACK_MS = 2.0


def draw_rows(total: int, entropy: Callable[[int], bytes] = os.urandom) -> np.ndarray:
    """The rows (flat: item * N + row) one sample is checked on: every row of a small case, else
    `ROWS_PER_SAMPLE` drawn independently and uniformly, from a seed drawn now (after the launch)."""
    if total <= ROWS_PER_SAMPLE:
        return np.arange(total, dtype=np.int64)
    return np.random.default_rng(draw_seed(entropy)).integers(0, total, ROWS_PER_SAMPLE, dtype=np.int64)


class SampleFailed(Exception):
    """A sample's output failed its check: the cell ends, WRONG."""


class FreshSampler:
    """One checked sample on a fresh input per call; remembers what the check needs to report."""

    def __init__(self, execution: Execution, shape: Shape, ranges: InputRange, tolerance: tuple[float, float],
                 flush_l2: bool, warmup: int, entropy: Callable[[int], bytes] = os.urandom,
                 wall_clock: Callable[[], float] = time.perf_counter) -> None:
        self.execution, self.shape, self.ranges = execution, shape, ranges
        self.atol, self.rtol = tolerance
        self.flush_l2, self.warmup = flush_l2, warmup
        self.entropy, self.wall_clock = entropy, wall_clock
        self.launches = 0
        self.fresh = 0  # launches on an input no launch had seen: all but the second of the repeated input
        self.times: list[float] = []  # every timed sample's, the failing one's too
        self.last_ms = 0.0
        self.max_abs_error = 0.0
        self.failure: SampleFailure | None = None
        self.walls: list[tuple[float, float]] = []  # (event ms, wall ms) of the first timed samples
        self.last_seed: int | None = None  # the input of the last launch

    @property
    def total_rows(self) -> int:
        return self.shape.B * self.shape.N

    def fresh_launch(self, seed: int, poison: bool = True, output: float = float("nan")) -> None:
        """The input made from `seed`, the output poisoned (filled with `output`), everything before finished."""
        ex = self.execution
        self.last_seed = seed
        ex.refresh_inputs(seed, self.ranges)
        if poison:
            ex.poison_output(output)
        ex.synchronize()

    def __call__(self) -> float:
        """One sample: one pass, with the policy's L2 flush."""
        return self.batch(1, self.flush_l2)

    def batch(self, passes: int, flush_l2: bool) -> float:
        """`passes` back to back in one timed window on one fresh input (a sample is one; the square lab's
        timer doubles them), the last output checked."""
        ex = self.execution
        seed = draw_seed(self.entropy)
        self.fresh_launch(seed)
        start = self.wall_clock()
        time_ms = timed_passes(ex, passes, flush_l2)
        ex.synchronize()
        wall_ms = (self.wall_clock() - start) * 1e3
        self.launches += 1
        self.fresh += 1
        warmup = self.launches <= self.warmup
        self.last_ms = time_ms / passes
        if not warmup:
            self.times.append(self.last_ms)
        number = self.launches if warmup else self.launches - self.warmup
        self._check(seed, WARMUP if warmup else TIMED, number)
        if not warmup and len(self.walls) < WALL_CHECKED:
            self.walls.append((time_ms, wall_ms))
        return time_ms

    def _check(self, seed: int, kind: str, number: int) -> None:
        """The last launch's output checked; a failure ends the cell."""
        errors = self.execution.check_sample(seed, self.ranges, draw_rows(self.total_rows, self.entropy), self.atol,
                                             self.rtol)
        if errors.worst is not None:
            self.max_abs_error = max(self.max_abs_error, errors.worst.error)
        if not errors.passed:
            self.failure = SampleFailure(number, kind, self.shape.N, self.shape.d, errors)
            raise SampleFailed(self.failure.describe())

    def untimed(self, seed: int, poison: bool, kind: str, number: int, fresh: bool = True,
                output: float = float("nan")) -> None:
        """One launch outside the timed samples (a pass check's), on `seed`'s input, checked like a sample."""
        self.fresh_launch(seed, poison, output)
        self.execution.run_pass()
        self.execution.synchronize()
        self.launches += 1
        self.fresh += fresh
        self._check(seed, kind, number)

    def after_samples(self, checks: tuple[PassCheck, ...] = AFTER_SAMPLES) -> DifferingRows | None:
        """Untimed, after the samples: the pass checks (`bench.pass_checks`) in their order, each launch checked; the
        first finding that warns (the determinism check's rows that differ), if any."""
        findings = [check.apply(self) for check in checks]
        return next((finding for finding in findings if finding is not None), None)

    def clock_disagreement(self) -> ClockDisagreement | None:
        """A warning when the wall clock exceeded the events beyond noise on every sample cross-checked."""
        def limit(event_ms: float) -> float:
            return WALL_FACTOR * event_ms + WALL_SLACK_MS

        if not self.walls or not all(wall > limit(event) for event, wall in self.walls):
            return None
        event, wall = min(self.walls, key=lambda w: w[1] - limit(w[0]))
        return ClockDisagreement(event, wall, limit(event))


def sample_fresh(execution: Execution, shape: Shape, ranges: InputRange, policy: TimingPolicy,
                 tolerance: tuple[float, float], device_clock: bool = True,
                 on_sample: Callable[[float], None] | None = None,
                 timer: Callable[[FreshSampler, TimingPolicy], KernelStats] | None = None,
                 entropy: Callable[[int], bytes] = os.urandom) -> tuple[KernelStats, TimedCheck]:
    """Warm-up and samples by `policy` (or by `timer`, given the sampler), each on a fresh input and checked; the
    statistics (up to and with the failing sample when one failed: then the check has its failure and the cell
    no speed) and the record of the checks. `device_clock` False for attnbench's own host variant (no wall-clock
    cross-check: its clock is the wall clock)."""
    sampler = FreshSampler(execution, shape, ranges, tolerance, policy.flush_l2, policy.warmup, entropy)
    try:
        stats = timer(sampler, policy) if timer is not None else measure(sampler, policy, on_sample=on_sample)
        stats.fresh_inputs = stats.count
        differing = sampler.after_samples()
    except SampleFailed:
        stats = KernelStats(list(sampler.times) or [sampler.last_ms])
        stats.fresh_inputs = stats.count
        differing = None
    clock = sampler.clock_disagreement() if device_clock and sampler.failure is None else None
    check = TimedCheck(sampler.launches, sampler.fresh, min(ROWS_PER_SAMPLE, sampler.total_rows),
                       sampler.total_rows, tolerance[0], tolerance[1], sampler.failure, clock, differing,
                       len(sampler.walls) if device_clock else 0, sampler.max_abs_error)
    return stats, check
