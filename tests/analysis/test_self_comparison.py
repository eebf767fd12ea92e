"""A run compared with itself must not regress: the false-regression rate of the whole chain (adaptive
sampling, robust noise, verdict) on identical synthetic timings, outliers and a little drift included."""

from __future__ import annotations

import numpy as np

from attnbench.analysis.verdict import Verdict, compare_stats, is_regression
from attnbench.bench.sampler import TimingPolicy, measure

REPEATS = 600


class FakeClock:
    """Each call moves time on by one millisecond-sized sample."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 1e-3
        return self.t


def kernel_like(rng: np.random.Generator, median_ms: float, drift: float = 0.0):
    """Log-normal jitter of 3%, and 3% of samples hit by a 1.5-4x outlier (another process, a clock change)."""

    def sample() -> float:
        value = median_ms * (1 + drift) * rng.lognormal(0.0, 0.03)
        return value * rng.uniform(1.5, 4.0) if rng.random() < 0.03 else value

    return sample


def test_the_same_code_measured_twice_is_almost_never_a_regression():
    rng = np.random.default_rng(20261122)
    policy = TimingPolicy(warmup=0, min_samples=10, min_time_s=0.0, timeout_s=0.5, target_noise=0.01)
    regressions = slower = 0
    for i in range(REPEATS):
        median = float(rng.uniform(0.05, 50.0))
        drift = float(rng.uniform(-0.01, 0.01))  # run-to-run drift of up to 1% (clocks, temperature)
        saved = measure(kernel_like(rng, median), policy, clock=FakeClock())
        again = measure(kernel_like(rng, median, drift), policy, clock=FakeClock())
        comparison = compare_stats(saved, again)
        slower += comparison.verdict is Verdict.SLOWER
        regressions += is_regression(comparison)
    assert regressions / REPEATS < 0.01, f"{regressions} false regressions in {REPEATS} self-comparisons"
    assert slower == regressions


def test_a_real_slowdown_is_still_found():
    rng = np.random.default_rng(7)
    policy = TimingPolicy(warmup=0, min_samples=10, min_time_s=0.0, timeout_s=0.5, target_noise=0.01)
    found = 0
    for _ in range(100):
        before = measure(kernel_like(rng, 1.0), policy, clock=FakeClock())
        after = measure(kernel_like(rng, 1.10), policy, clock=FakeClock())  # 10% slower
        found += compare_stats(before, after).verdict is Verdict.SLOWER
    assert found >= 95
