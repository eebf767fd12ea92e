"""The timed samples on fresh inputs (attnbench/bench/fresh_samples.py), on the host: the tricks of the
adversarial corpus as host executions, each caught on the launch the GPU corpus is caught on; the rows' count and
the arithmetic behind it; the determinism and wall-clock warnings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnbench.bench.fresh_samples import ROWS_PER_SAMPLE, draw_rows, sample_fresh
from attnbench.bench.sampler import TimingPolicy
from attnbench.cases.fresh_values import SUITE_RANGE
from attnbench.cases.testcase import Testcase
from tests.bench.fake_device import FixedClock, HonestHostExecution
from tests.conftest import random_testcase

POLICY = TimingPolicy(warmup=2, reps=5, flush_l2=False)
TOLERANCE = (5e-3, 0.0)


class Honest(HonestHostExecution):
    def __init__(self, testcase: Testcase) -> None:
        super().__init__(testcase)
        self.clock = FixedClock(1.0)
        self.seen: list[bytes] = []

    def run_pass(self) -> None:
        self.seen.append(self.testcase.qkv.tobytes())
        super().run_pass()


class Lazy(Honest):
    """Computes once, then returns at once: its output keeps whatever is there (the poison)."""

    def run_pass(self) -> None:
        if self.passes == 0:
            super().run_pass()
        self.passes += 1


class Sly(Honest):
    """Recomputes only when it finds its output poisoned."""

    def run_pass(self) -> None:
        if self.output is None or np.isnan(self.output).all():
            super().run_pass()


class Memo(Honest):
    """Skips, serving the output buffer, when its input is the last one it computed (a hash of the whole input)."""

    def run_pass(self) -> None:
        if self.seen and self.seen[-1] == self.testcase.qkv.tobytes():
            return
        super().run_pass()


class LabMemo(Honest):
    """Skips when its input is the one its previous launch answered and the output holds no NaN (the red team's
    rt_labmemo: the square lab's batches, passes back to back on one input poisoned once, let it skip)."""

    def run_pass(self) -> None:
        if self.seen and self.seen[-1] == self.testcase.qkv.tobytes() and not np.isnan(self.output).any():
            self.seen.append(self.seen[-1])
            return
        super().run_pass()


class Corrupts(Honest):
    """Right everywhere but on 1% of the rows (fixed ones), where it writes zeros."""

    def run_pass(self) -> None:
        super().run_pass()
        flat = self.output.reshape(-1, self.output.shape[-1])
        flat[:: 100] = 0.0


class Racy(Honest):
    """Right within the tolerance, but its last bit differs from launch to launch in one row."""

    def run_pass(self) -> None:
        super().run_pass()
        self.output.view(np.uint32)[0, 3, 0] ^= self.passes % 2  # the last bit, every other launch


def sample(kind, testcase, policy=POLICY):
    return sample_fresh(kind(testcase), testcase.shape, SUITE_RANGE, policy, TOLERANCE, device_clock=False)


def test_an_honest_execution_passes_every_launch_each_on_a_fresh_input(rng):
    tc = random_testcase(2, 16, 8, rng)
    execution = Honest(tc)
    stats, check = sample_fresh(execution, tc.shape, SUITE_RANGE, POLICY, TOLERANCE, device_clock=False)
    assert check.passed and check.failure is None and check.differing is None
    assert stats.count == stats.fresh_inputs == 5 and check.samples == 2 + 5 + 4 and check.fresh_inputs == 9
    assert check.rows_per_sample == check.rows == 32 and check.max_abs_error < 1e-5
    inputs = execution.seen
    assert len(inputs) == 11 and len(set(inputs)) == 9  # the repeat and the last input are the ones seen twice
    assert all(np.abs(np.frombuffer(x, np.float32)).max() <= 3.0 for x in inputs)


# Lazy's first launch here is warm-up 1 (no first pass before it), so warm-up 2 catches it
@pytest.mark.parametrize("kind, caught_on, number", [(Lazy, "warmup", 2), (Sly, "unpoisoned", 1),
                                                     (Memo, "repeat", 2), (Corrupts, "warmup", 1),
                                                     (LabMemo, "stale", 1)])
def test_each_trick_is_caught_on_its_launch(kind, caught_on, number, rng):
    tc = random_testcase(3, 40, 8, rng)
    stats, check = sample(kind, tc)
    assert not check.passed and check.failure.kind == caught_on and check.failure.sample == number, check.describe()
    assert stats.count >= 1 and stats.fresh_inputs == stats.count


def test_one_percent_of_rows_wrong_is_caught_by_one_sample_of_a_large_case(rng):
    tc = random_testcase(2, 4000, 4, rng)  # 8000 rows: more than a sample checks
    _, check = sample(Corrupts, tc, TimingPolicy(warmup=0, reps=1, flush_l2=False))
    assert check.rows_per_sample == ROWS_PER_SAMPLE and check.failure.kind == "timed"
    assert check.failure.errors.rows_checked == ROWS_PER_SAMPLE


def test_the_rows_per_sample_meet_the_bound():
    assert 0.99 ** ROWS_PER_SAMPLE <= 1e-6 < 0.99 ** (ROWS_PER_SAMPLE - 1)
    assert ROWS_PER_SAMPLE == math.ceil(math.log(1e-6) / math.log(0.99))
    assert list(draw_rows(7)) == list(range(7))
    rows = draw_rows(10**6)
    assert len(rows) == ROWS_PER_SAMPLE and rows.min() >= 0 and rows.max() < 10**6
    assert not np.array_equal(rows, draw_rows(10**6))  # drawn anew from the entropy each time


def test_a_race_is_a_warning_naming_its_row(rng):
    tc = random_testcase(2, 16, 8, rng)
    _, check = sample(Racy, tc)
    assert check.passed and check.differing is not None and check.differing.rows == [3]
    assert "(0, 3)" in check.warnings()[0].text


def test_the_wall_clock_warns_when_every_checked_sample_took_far_longer_than_its_events(rng):
    tc = random_testcase(1, 8, 4, rng)
    ticks = iter(range(1000))
    execution = Honest(tc)
    from attnbench.bench.fresh_samples import FreshSampler

    sampler = FreshSampler(execution, tc.shape, SUITE_RANGE, TOLERANCE, False, 0, wall_clock=lambda: next(ticks))
    for _ in range(3):
        sampler()  # each sample's wall time: 1 s against 1 ms of events
    warning = sampler.clock_disagreement()
    assert warning is not None and warning.event_ms == 1.0 and warning.wall_ms == 1000.0
