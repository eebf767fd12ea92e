import itertools
import math

import pytest

from attnbench.bench.sampler import FEW_SAMPLES_WARNING, NOISE_WARNING, SmClockRecorder, TimingPolicy, measure
from attnbench.results.run_warnings import RunWarning, WarningKind
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
    stats = KernelStats([1.5, 1.6, 1.7], converged=False, warnings=[RunWarning(WarningKind.GENERIC, "w")])
    back = KernelStats.from_dict(stats.to_dict())
    assert back.samples_ms == stats.samples_ms and not back.converged and back.warnings == [
        RunWarning(WarningKind.GENERIC, "w")]


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
    assert any("noise is unknown" in w.sentence() and "--timeout" in w.sentence() for w in stats.warnings)


def test_adaptive_honours_the_minimum_time():
    policy = TimingPolicy(warmup=0, min_samples=2, min_time_s=1.0, target_noise=0.5)
    stats = measure(lambda: 1.0, policy, clock=FakeClock(0.1))
    assert stats.count >= 9


def test_to_dict_holds_every_statistic():
    stats = KernelStats([4.0, 1.0, 3.0, 2.0, 10.0], converged=False, warnings=[RunWarning(WarningKind.GENERIC, "w")],
                        fresh_inputs=5)
    assert stats.to_dict() == {
        "samples_ms": [4.0, 1.0, 3.0, 2.0, 10.0],
        "count": 5,
        "fresh_inputs": 5,  # every sample on an input no launch had seen (bench.fresh_samples)
        "median_ms": 3.0,
        "mean_ms": 4.0,
        "stdev_ms": pytest.approx(3.5355339, rel=1e-6),
        "min_ms": 1.0,
        "max_ms": 10.0,
        "p20_ms": pytest.approx(1.8),
        "p80_ms": pytest.approx(5.2),
        "noise": pytest.approx(float("nan"), nan_ok=True),  # five samples: unknown
        "median_ci95_ms": None,
        "outliers": 1,
        "converged": False,
        "warnings": [{"kind": "generic", "text": "w", "remedy": ""}],  # records since schema version 4
        "sm_clock_mhz": None,  # no NVML here: the clock is unknown, never an error
        "sm_clock": None,
        "throttle_reasons": [],
        "clock_warning": None,
    }


def test_from_dict_defaults_for_older_files():
    back = KernelStats.from_dict({"samples_ms": (1.0, 2.0)})
    assert back.samples_ms == [1.0, 2.0] and back.converged is True and back.warnings == []


def test_quantiles_at_the_ends_and_of_one_sample():
    stats = KernelStats([5.0, 1.0, 3.0])
    assert (stats.quantile(0.0), stats.quantile(0.5), stats.quantile(1.0)) == (1.0, 3.0, 5.0)
    assert stats.quantile(0.75) == pytest.approx(4.0)
    assert KernelStats([7.0]).quantile(0.5) == 7.0 and KernelStats([7.0]).quantile(1.0) == 7.0
    assert KernelStats([7.0]).stdev == 0.0 and math.isnan(KernelStats([7.0]).noise)  # one sample: unknown
    assert KernelStats([1.0, 2.0, 3.0]).outliers == 0  # fewer than four samples: no fences


def test_relative_noise_edges():
    from attnbench.results.stats import relative_noise

    assert math.isnan(relative_noise([])) and math.isnan(relative_noise([3.0] * 5))  # under 6: unknown
    assert math.isnan(relative_noise([-1.0, 1.0] * 3))  # no positive median: no relative noise
    assert relative_noise([3.0] * 6) == 0.0
    assert relative_noise([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == pytest.approx((6 - 1) / 2 / 3.5)  # x(1)..x(6)
    assert relative_noise([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]) == pytest.approx((6 - 1) / 2 / 3.5)  # scale-free


def test_first_samples_count_toward_the_total_and_warmup_is_not_kept():
    calls = []

    def sample():
        calls.append(1)
        return float(len(calls))

    stats = measure(sample, TimingPolicy(warmup=2, reps=3), first_samples=[9.0])
    assert stats.samples_ms == [9.0, 3.0, 4.0] and len(calls) == 4
    assert stats.converged and not stats.warnings  # fixed reps: no advice however noisy


def test_adaptive_stops_at_max_samples_and_warns_about_noise():
    values = itertools.cycle([1.0, 2.0])
    policy = TimingPolicy(warmup=0, min_samples=2, min_time_s=0.0, max_samples=7, timeout_s=1e9)
    stats = measure(lambda: next(values), policy, clock=FakeClock(0.001))
    assert stats.count == 7 and stats.converged is False
    assert stats.warnings == [NOISE_WARNING]


def test_a_few_samples_are_flagged_as_unknown_noise():
    policy = TimingPolicy(warmup=0, min_samples=1, min_time_s=0.0, max_samples=3)
    stats = measure(lambda: 1.0, policy, clock=FakeClock(0.001))
    assert stats.count == 3 and not stats.converged  # quiet, but three samples cannot say how quiet
    assert stats.warnings == [FEW_SAMPLES_WARNING]
    policy = TimingPolicy(warmup=0, min_samples=1, min_time_s=0.0)
    stats = measure(lambda: 1.0, policy, clock=FakeClock(0.001))
    assert stats.count == 6 and stats.converged and stats.warnings == []  # six give a 95% interval


def test_quiet_samples_still_wait_for_the_minimum_count_and_time():
    policy = TimingPolicy(warmup=0, min_samples=4, min_time_s=0.095, target_noise=0.5)
    stats = measure(lambda: 1.0, policy, clock=FakeClock(0.01))
    assert stats.count == 9  # the clock reads 0.01 more per check: 0.095 is passed once 9 samples are in
    policy = TimingPolicy(warmup=0, min_samples=8, min_time_s=0.0, target_noise=0.5)
    assert measure(lambda: 1.0, policy, clock=FakeClock(0.01)).count == 8


def test_a_noise_exactly_at_the_target_is_quiet_enough():
    policy = TimingPolicy(warmup=0, min_samples=3, min_time_s=0.0, target_noise=0.0, max_samples=50)
    stats = measure(lambda: 1.0, policy, clock=FakeClock(0.001))
    assert stats.count == 6 and stats.converged is True and stats.warnings == []  # the first known noise, 0


def test_the_minimum_time_is_met_exactly_at_its_boundary():
    """The clock reads 0.125 s more per check: with six samples in, 0.875 s have passed, which is enough."""
    policy = TimingPolicy(warmup=0, min_samples=6, min_time_s=0.875, target_noise=0.5)
    assert measure(lambda: 1.0, policy, clock=FakeClock(0.125)).count == 6
    policy = TimingPolicy(warmup=0, min_samples=6, min_time_s=0.876, target_noise=0.5)
    assert measure(lambda: 1.0, policy, clock=FakeClock(0.125)).count == 7


def test_a_sample_that_would_end_past_the_timeout_is_not_taken():
    """Samples of 250 ms, the clock 0.25 s more per check: a sample ending exactly at the timeout is taken."""
    def run(timeout_s):
        policy = TimingPolicy(warmup=0, min_samples=100, min_time_s=0.0, timeout_s=timeout_s)
        return measure(lambda: 250.0, policy, clock=FakeClock(0.25))

    assert run(0.75).count == 2  # one sample in at 0.5 s: the next ends at 0.75 s, allowed
    assert run(0.7499).count == 1  # ... but past 0.7499 s: the sampler stops before it
    slow = measure(lambda: 1000.0, TimingPolicy(warmup=0, timeout_s=0.5), clock=FakeClock(0.01))
    assert slow.count == 1 and slow.converged is False  # one 1 s sample: the next cannot fit in 0.5 s
    assert slow.warnings == [FEW_SAMPLES_WARNING]


def test_six_noisy_samples_are_known_to_be_noisy():
    values = itertools.cycle([1.0, 2.0])
    policy = TimingPolicy(warmup=0, min_samples=2, min_time_s=0.0, max_samples=6, target_noise=0.01)
    stats = measure(lambda: next(values), policy, clock=FakeClock(0.001))
    assert stats.count == 6 and stats.converged is False and stats.warnings == [NOISE_WARNING]


def test_too_few_samples_are_not_converged():
    policy = TimingPolicy(warmup=0, min_samples=1, min_time_s=0.0, max_samples=2)
    assert measure(lambda: 1.0, policy, clock=FakeClock(0.001)).converged is False


class FakeExecution:
    """A backend's execution that records what the sampler asks of it; each pass takes 1.5 ms on its clock."""

    def __init__(self):
        self.events = []
        self.clock = self
        self.passes = 0

    def flush_l2(self):
        self.events.append("flush")

    def start(self):
        self.events.append("start")
        self.passes = 0

    def run_pass(self):
        self.events.append("pass")
        self.passes += 1

    def stop(self):
        self.events.append("stop")
        return 1.5 * self.passes


def test_timed_passes_flushes_before_the_clock_and_times_every_pass():
    from attnbench.bench.sampler import timed_passes

    execution = FakeExecution()
    assert timed_passes(execution) == 1.5  # by default one pass, no flush
    assert execution.events == ["start", "pass", "stop"]
    execution.events.clear()
    assert timed_passes(execution, 3, flush_l2=True) == 4.5
    assert execution.events == ["flush", "start", "pass", "pass", "pass", "stop"]


def test_on_sample_sees_each_sample_but_not_the_warm_up():
    seen = []
    values = iter([9.0, 9.0, 1.0, 2.0, 3.0])
    stats = measure(lambda: next(values), TimingPolicy(warmup=2, reps=3), on_sample=seen.append)
    assert seen == [1.0, 2.0, 3.0] == stats.samples_ms


def test_on_sample_skips_the_first_samples_given():
    seen = []
    stats = measure(lambda: 2.0, TimingPolicy(warmup=0, reps=3), first_samples=[5.0], on_sample=seen.append)
    assert stats.samples_ms == [5.0, 2.0, 2.0] and seen == [2.0, 2.0]


# -- the SM clock per sample, kept only when NVML answered for every sample --------------------------------

class Reads:
    def __init__(self, *values):
        self.values = list(values)

    def sm_clock_mhz(self):
        return self.values.pop(0)

    def throttle_reasons(self):
        return ["software power cap"]


def test_one_clock_per_sample_with_the_throttle_reasons():
    recorder = SmClockRecorder(Reads(1980.0, 1755.0))
    recorder(1.0)
    recorder(1.1)
    stats = recorder.attach(KernelStats([1.0, 1.1]))
    assert stats.clocks_mhz == [1980.0, 1755.0] and stats.throttle_reasons == ("software power cap",)


def test_a_read_nvml_cannot_answer_leaves_the_clock_unknown():
    recorder = SmClockRecorder(Reads(1980.0, None, 1755.0))
    for sample in (1.0, 1.1, 1.2):
        recorder(sample)
    assert recorder.attach(KernelStats([1.0, 1.1, 1.2])).clocks_mhz is None


def test_no_gpu_or_a_count_mismatch_keeps_nothing():
    assert SmClockRecorder(None).attach(KernelStats([1.0])).clocks_mhz is None
    recorder = SmClockRecorder(Reads(1980.0))
    recorder(1.0)
    assert recorder.attach(KernelStats([1.0, 2.0])).clocks_mhz is None  # samples it did not see
