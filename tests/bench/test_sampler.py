import itertools
import math

import pytest

from attnbench.bench.sampler import TimingPolicy, measure
from attnbench.results.stats import KernelStats


def test_statistics_of_known_samples():
    stats = KernelStats([1.0, 2.0, 3.0, 4.0, 100.0])
    assert stats.median == 3.0
    assert stats.mean == pytest.approx(22.0)
    assert stats.min == 1.0 and stats.max == 100.0
    assert stats.quantile(0.2) == pytest.approx(1.8)
    assert stats.quantile(0.8) == pytest.approx(23.2)
    assert stats.outliers == 1  # counted apart from the noise
    assert math.isnan(stats.noise)  # five samples cannot give a 95% interval of the median


def test_noise_is_the_median_interval_half_width_and_ignores_an_outlier():
    stats = KernelStats([float(v) for v in range(1, 11)])  # 10 samples: the interval is x(2)..x(9)
    assert stats.median_interval == (2.0, 9.0)
    assert stats.noise == pytest.approx((9.0 - 2.0) / 2 / 5.5)
    calm = KernelStats([1.0] * 29 + [1.01] * 30)
    spiked = KernelStats([1.0] * 29 + [1.01] * 29 + [50.0])
    assert spiked.noise == pytest.approx(calm.noise, abs=0.011) and spiked.outliers == 1


def test_round_trip_through_dict():
    stats = KernelStats([1.5, 1.6, 1.7], converged=False, warnings=["w"])
    back = KernelStats.from_dict(stats.to_dict())
    assert back.samples_ms == stats.samples_ms and not back.converged and back.warnings == ["w"]


class FakeClock:
    def __init__(self, step):
        self.t = 0.0
        self.step = step

    def __call__(self):
        self.t += self.step
        return self.t


def test_fixed_reps_after_warmup():
    calls = itertools.count()
    stats = measure(lambda: float(next(calls)), TimingPolicy(warmup=3, reps=4))
    assert stats.samples_ms == [3.0, 4.0, 5.0, 6.0]


def test_adaptive_stops_once_quiet_enough():
    policy = TimingPolicy(warmup=0, min_samples=10, min_time_s=0.0, target_noise=0.01)
    stats = measure(lambda: 2.0, policy, clock=FakeClock(0.001))
    assert stats.count == 10 and stats.converged and not stats.warnings


def test_adaptive_gives_up_at_the_timeout_and_says_what_to_do():
    values = itertools.cycle([1.0, 2.0])
    policy = TimingPolicy(warmup=0, min_samples=3, min_time_s=0.0, timeout_s=0.05, target_noise=0.01)
    stats = measure(lambda: next(values), policy, clock=FakeClock(0.01))
    assert not stats.converged
    assert 2 <= stats.count < 6
    assert any("noise is unknown" in w and "--timeout" in w for w in stats.warnings)


def test_adaptive_honours_the_minimum_time():
    policy = TimingPolicy(warmup=0, min_samples=2, min_time_s=1.0, target_noise=0.5)
    stats = measure(lambda: 1.0, policy, clock=FakeClock(0.1))
    assert stats.count >= 9
