"""`TimingOptions`: what the user says about timing, turned into each variant's policy and the saved record."""

from __future__ import annotations

import pytest

from attnbench.api.timing_options import CPU_SAMPLING_BUDGET_S, CPU_TARGET_NOISE, TimingOptions
from attnbench.errors import UsageError
from attnbench.kernels.catalogue import get_variant


@pytest.mark.parametrize("options", [{"reps": 0}, {"reps": -1}, {"reps": 1.5}, {"reps": "3"}, {"reps": 10**7},
                                     {"warmup": -3}, {"warmup": True}, {"timeout": -1}, {"timeout": float("nan")},
                                     {"timeout": float("inf")}, {"noise": 0}, {"noise": float("nan")}])
def test_timing_options_outside_the_command_lines_ranges_are_refused_from_python(options):
    """From Python, reps=0 ended in a StatisticsError traceback and reps="3" in a TypeError; warmup=-3,
    timeout=-1 and noise=nan ran by no rule the docs give."""
    with pytest.raises(UsageError, match=next(iter(options))):
        TimingOptions(**options)


def test_the_timing_options_the_command_line_takes_are_taken():
    assert TimingOptions(warmup=0, reps=1, timeout=0.5, noise=0.1).reps == 1
    assert TimingOptions(reps=1_000_000, warmup=1_000_000).warmup == 1_000_000


def test_a_host_variant_gets_no_warmup_no_flush_and_a_noise_it_can_promise():
    policy = TimingOptions(noise=1.0).policy_for(get_variant("cpu"))
    assert policy.warmup == 0 and policy.flush_l2 is False and policy.min_samples == 6
    assert policy.timeout_s == CPU_SAMPLING_BUDGET_S and policy.target_noise == CPU_TARGET_NOISE


def test_a_gpu_variant_warms_up_twice_and_flushes_the_l2_unless_hot():
    naive = get_variant("naive")
    assert TimingOptions().policy_for(naive).warmup == 2 and TimingOptions().policy_for(naive).flush_l2 is True
    assert TimingOptions(hot=True, warmup=0).policy_for(naive).flush_l2 is False
    assert TimingOptions(noise=0.5).policy_for(naive).target_noise == 0.005


def test_the_saved_record_is_the_gpu_policy_with_the_host_rule_in_words():
    record = TimingOptions(reps=7).record()
    assert record["reps"] == 7 and record["warmup"] == 2 and record["flush_l2"] is True
    assert "no warm-up" in record["host_variants"] and "--reps" in record["host_variants"]


def test_the_host_rule_in_words_promises_no_six_passes_the_budget_does_not_give():
    """"at least 6 passes" of the cpu variant were 1-2 on t11: the 2 s budget stops first. The words say so, and
    the sampler does what they say."""
    from attnbench.bench.sampler import measure

    words = TimingOptions().record()["host_variants"]
    assert "at least 6 passes" not in words and "fewer than 6" in words
    now = [0.0]

    def slow_pass() -> float:  # a pass of 0.7 s, as t11's take on a CPU (a third of them)
        now[0] += 0.7
        return 700.0

    stats = measure(slow_pass, TimingOptions().policy_for(get_variant("cpu")), clock=lambda: now[0])
    assert stats.count < 6 and any("fewer than 6 samples" in w.sentence() for w in stats.warnings)
