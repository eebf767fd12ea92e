"""attnbench.results.clocks: the clock the samples ran at, and the rule that warns only where it moved a median."""

from __future__ import annotations

import math

from attnbench.results.clocks import ClockShift, clock_shift, clock_summary
from attnbench.results.stats import KernelStats, relative_noise


def shift(samples, clocks, reasons=()):
    return clock_shift(samples, clocks, relative_noise, reasons)


def test_the_summary_names_the_range_only_when_the_clock_moved():
    assert clock_summary(None) is None and clock_summary([]) is None
    assert clock_summary([1980.0, 1980.0, 1965.0]).text() == "1980 MHz"  # one NVML step: steady
    moved = clock_summary([1755.0, 1755.0, 1590.0, 1980.0])
    assert moved.text() == "1755 MHz (1590-1980)" and moved.moved


def test_a_steady_clock_never_warns_even_power_capped():
    samples = [2.0 + 0.01 * (i % 5) for i in range(30)]
    assert shift(samples, [1755.0] * 30, ("software power cap",)) is None


def test_a_few_samples_before_the_cap_settled_leave_the_median_alone():
    samples = [1.6, 1.6, 1.6] + [2.0 + 0.01 * (i % 7) for i in range(27)]
    assert shift(samples, [1980.0] * 3 + [1755.0] * 27) is None


def test_a_clock_that_split_the_samples_moved_the_median():
    samples = [1.0 + 0.001 * (i % 3) for i in range(10)] + [1.3 + 0.001 * (i % 3) for i in range(10)]
    found = shift(samples, [1980.0] * 10 + [1500.0] * 10, ("software thermal slowdown",))
    assert isinstance(found, ClockShift) and (found.low_mhz, found.high_mhz) == (1500.0, 1980.0)
    assert found.shift > found.noise
    text = found.text()
    assert "between 1500 and 1980 MHz" in text and "software thermal slowdown" in text and found.remedy in text
    assert found.to_dict()["reasons"] == ["software thermal slowdown"]


def test_a_wandering_clock_is_judged_by_the_halves_of_its_clocks():
    samples = [1.0, 1.02, 1.05, 1.1, 1.2, 1.25, 1.3, 1.4]
    clocks = [1980.0, 1940.0, 1900.0, 1850.0, 1800.0, 1750.0, 1700.0, 1650.0]
    assert shift(samples, clocks) is not None
    assert shift([1.0] * 8, clocks) is None  # a memory-bound kernel the clock does not move


def test_unknown_clocks_or_a_mismatch_give_no_warning():
    assert shift([1.0, 2.0], None) is None
    assert shift([1.0, 2.0, 3.0], [1980.0, 1500.0]) is None


def test_kernel_stats_keep_the_clocks_through_their_dict():
    stats = KernelStats([1.0] * 6 + [1.3] * 6, clocks_mhz=[1980.0] * 6 + [1500.0] * 6, throttle_reasons=("x",))
    data = stats.to_dict()
    assert data["sm_clock"] == {"median": 1740.0, "low": 1500.0, "high": 1980.0}
    assert data["clock_warning"]["low_mhz"] == 1500.0 and math.isfinite(data["clock_warning"]["noise"])
    back = KernelStats.from_dict(data)
    assert back.clocks_mhz == stats.clocks_mhz and back.throttle_reasons == ("x",)
    assert stats.all_warnings()[-1].sentence() == stats.clock_warning.text()


def test_a_move_under_one_percent_is_no_warning_however_steady_the_samples():
    # as measured on an H200: samples identical to the last digit (noise ±0.0%), the clock moving 1920-1980
    steady, clocks = [1.000] * 10, [1980.0] * 10 + [1920.0] * 10
    assert shift(steady + [1.004] * 10, clocks) is None  # the median moved 0.2%
    assert shift(steady + [1.04] * 10, clocks) is not None  # 2%
