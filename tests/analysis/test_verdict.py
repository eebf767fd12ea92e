import math

import pytest

from attnbench.analysis.verdict import (
    TimeComparison,
    Verdict,
    compare_stats,
    geometric_mean,
    geometric_mean_speedup,
    is_regression,
    parse_percent,
)
from attnbench.results.stats import KernelStats
from tests.synthetic import samples


def test_identical_measurements_are_same():
    a = samples(2.0, 0.005, seed=1)
    b = samples(2.0, 0.005, seed=2)
    assert compare_stats(a, b).verdict is Verdict.SAME


def test_a_clear_difference_beyond_the_noise_is_called_both_ways():
    slow = compare_stats(samples(1.0, 0.005), samples(1.10, 0.005))
    fast = compare_stats(samples(1.0, 0.005), samples(0.90, 0.005))
    assert slow.verdict is Verdict.SLOWER and slow.change == pytest.approx(0.10, rel=1e-6)
    assert fast.verdict is Verdict.FASTER and fast.speedup == pytest.approx(1 / 0.9, rel=1e-6)


def test_noise_widens_the_band():
    a, b = samples(1.0, 0.3, count=10), samples(1.10, 0.3, count=10, seed=1)
    noisy = compare_stats(a, b)
    assert noisy.band == pytest.approx(0.02 + a.noise + b.noise) and noisy.band > 0.10  # the intervals overlap
    assert noisy.verdict is Verdict.SAME


def test_the_floor_keeps_small_drifts_same_even_when_quiet():
    quiet = TimeComparison(1.0, 1.015, 0.001, 0.001)
    assert quiet.band == pytest.approx(0.022) and quiet.verdict is Verdict.SAME
    assert TimeComparison(1.0, 1.03, 0.001, 0.001).verdict is Verdict.SLOWER
    assert TimeComparison(1.0, 1.03, 0.001, 0.001, same_within=0.05).verdict is Verdict.SAME


def test_verdict_is_symmetric_on_the_log_scale():
    assert TimeComparison(1.0, 2.0, 0, 0).verdict is Verdict.SLOWER
    assert TimeComparison(2.0, 1.0, 0, 0).verdict is Verdict.FASTER
    edge = 1.02
    assert TimeComparison(1.0, edge, 0, 0).verdict is Verdict.SAME
    assert TimeComparison(edge, 1.0, 0, 0).verdict is Verdict.SAME


def test_speedup_uncertainty_propagates_both_noises():
    c = TimeComparison(3.0, 2.0, 0.03, 0.04)
    assert c.speedup == pytest.approx(1.5)
    assert c.speedup_error == pytest.approx(1.5 * 0.05)
    assert TimeComparison(3.0, 2.0, 0.0, 0.02).describe_speedup() == "1.50 ± 0.03x"


def test_regression_needs_slower_beyond_noise_and_past_the_threshold():
    three_percent = TimeComparison(1.0, 1.03, 0.001, 0.001)
    eight_percent = TimeComparison(1.0, 1.08, 0.001, 0.001)
    noisy_eight = TimeComparison(1.0, 1.08, 0.10, 0.10)
    faster = TimeComparison(1.0, 0.5, 0.001, 0.001)
    assert is_regression(three_percent) and not is_regression(three_percent, fail_slower=0.05)
    assert is_regression(eight_percent, fail_slower=0.05)
    assert not is_regression(noisy_eight, fail_slower=0.05)
    assert not is_regression(faster) and not is_regression(faster, 0.05)


def test_geometric_means():
    assert geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert geometric_mean([]) is None
    g = geometric_mean_speedup([TimeComparison(2.0, 1.0, 0.03, 0.04), TimeComparison(1.0, 1.0, 0.0, 0.0)])
    assert g.value == pytest.approx(math.sqrt(2.0))
    assert g.error == pytest.approx(math.sqrt(2.0) * 0.05 / 2)
    assert g.count == 2
    assert g.describe() == "1.41 ± 0.04x"
    unknown = geometric_mean_speedup([TimeComparison(2.0, 1.0, 0.03, math.nan)])  # a noise unknown: error unknown
    assert unknown.describe() == "2.00 ±?x"
    assert geometric_mean_speedup([]) is None


def test_unknown_noise_is_same_within_the_uncertainty_never_slower():
    c = compare_stats(KernelStats([10.0]), KernelStats([30.0]))  # one sample each: noise unknown
    assert c.uncertain and c.verdict is Verdict.SAME and not is_regression(c)
    assert c.describe_speedup() == "0.33 ±?x" and "noise unknown" in c.describe_change()


@pytest.mark.parametrize("text, value", [("5%", 0.05), ("5", 0.05), ("0.5%", 0.005), (" 12 % ", 0.12)])
def test_parse_percent(text, value):
    assert parse_percent(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["five", "-3%", "nan", "5X", "X5"])
def test_parse_percent_refuses_nonsense(text):
    with pytest.raises(ValueError):
        parse_percent(text)


def test_compare_stats_keeps_the_order_and_the_floor():
    reference, candidate = KernelStats([2.0, 2.2] * 3), KernelStats([1.0] * 6)
    c = compare_stats(reference, candidate, same_within=0.3)
    assert (c.reference_ms, c.candidate_ms) == (2.1, 1.0)
    assert (c.reference_noise, c.candidate_noise) == (reference.noise, 0.0)
    assert c.same_within == 0.3 and c.band == pytest.approx(0.3 + reference.noise)
    assert compare_stats(reference, candidate).same_within == 0.02


def test_a_slowdown_exactly_at_the_threshold_is_not_a_regression():
    exactly = TimeComparison(1.0, 1.25, 0.001, 0.001)  # change is exactly 0.25
    assert exactly.change == 0.25
    assert is_regression(exactly) and not is_regression(exactly, fail_slower=0.25)
    assert is_regression(exactly, fail_slower=0.2499)


def test_describe_change_prints_the_change_and_the_band():
    assert TimeComparison(1.0, 1.123, 0.008, 0.001).describe_change() == "+12.3% (band 2.9%)"  # 2% + both noises
    assert TimeComparison(2.0, 1.5, 0.05, 0.001).describe_change() == "-25.0% (band 6.6%)"  # 7.1% / 1.071
    assert TimeComparison(2.0, 1.5, float("nan"), 0.001).describe_change() == "-25.0% (noise unknown)"


@pytest.mark.parametrize("text, message", [("five", r"'five' is not a percentage \(write e.g. 5%\)"),
                                           ("-3%", r"'-3%': a percentage must be a finite number >= 0"),
                                           ("inf", r"'inf': a percentage must be a finite number >= 0")])
def test_parse_percent_says_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        parse_percent(text)
    assert parse_percent("0") == 0.0


def test_the_printed_change_is_called_exactly_when_it_is_beyond_the_printed_band():
    # A change of -5.9% against a 6.2% band was FASTER on the log scale while its own column said it
    # was inside the band; the band printed is now the one on the change's side.
    c = TimeComparison(1.0, 0.941, 0.021, 0.021)
    assert c.verdict is Verdict.FASTER
    assert c.describe_change() == "-5.9% (band 5.8%)"
    for candidate in (0.93, 0.94, 0.9416, 0.95, 1.05, 1.0619, 1.07):
        t = TimeComparison(1.0, candidate, 0.021, 0.021)
        beyond = abs(t.change) > t.band_in_direction + 1e-12
        assert (t.verdict is not Verdict.SAME) == beyond, candidate


def test_check_same_within_takes_a_fraction_and_refuses_the_rest():
    from attnbench.analysis.verdict import check_same_within

    assert check_same_within(0) == 0.0 and check_same_within(0.02) == 0.02
    for bad in (-0.01, float("nan"), float("inf"), True, "2%", None):
        with pytest.raises(ValueError, match="same_within="):
            check_same_within(bad)
