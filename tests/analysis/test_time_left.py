"""attnbench.analysis.time_left: the time a class has left, from its runs so far: each case at the mean of its own
jobs (or of all jobs, for a case not run yet), in wall seconds by the wall clock over the job-seconds done."""

from __future__ import annotations

import pytest

from attnbench.analysis.time_left import TimeLeft


def test_nothing_finished_nothing_to_estimate_from():
    estimate = TimeLeft()
    estimate.plan(["t01", "t02"])
    assert estimate.left_s(10.0) is None


def test_each_case_at_its_own_mean_and_a_case_not_run_yet_at_the_mean_of_all():
    estimate = TimeLeft()
    estimate.plan(["t01", "t02"] * 4)
    estimate.finish("t01", 1.0)
    estimate.finish("t01", 3.0)
    # left: t01 twice at its mean 2 s, t02 four times at the mean of all (2 s): 12 job-seconds; the 4 done took
    # 8 s of wall clock (warm-ups between them), so each job-second is 2 s of wall clock
    assert estimate.left_s(8.0) == pytest.approx(24.0)
    estimate.finish("t02", 5.0)
    # t01 twice at 2 s, t02 three times at its own 5 s: 19; 9 job-seconds in 9 s of wall clock
    assert estimate.left_s(9.0) == pytest.approx(19.0)


def test_workers_at_once_make_the_wall_clock_shorter_than_the_jobs():
    estimate = TimeLeft()
    estimate.plan(["t01"] * 6)
    for _ in range(2):  # two workers, a 5 s job each, side by side: 10 job-seconds in 5 s
        estimate.finish("t01", 5.0)
    assert estimate.left_s(5.0) == pytest.approx(4 * 5.0 / 2)


def test_jobs_dropped_or_finished_unplanned_never_count_below_none():
    estimate = TimeLeft()
    estimate.plan(["t01", "t01", "t02"])
    estimate.drop(["t02", "t02", "t03"])  # fewer reruns than expected, and a case never planned
    estimate.finish("t01", 1.0)
    estimate.finish("t01", 1.0)
    estimate.finish("t01", 1.0)  # one more than planned
    assert estimate.left_s(3.0) == 0.0
    estimate.plan(["t02"])
    assert estimate.left_s(3.0) == pytest.approx(1.0)
