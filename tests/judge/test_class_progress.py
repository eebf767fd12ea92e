"""attnbench.judge.class_progress: a class tells its listener each phase as it begins and, after each job, the jobs
done and the time left from the runs so far; in process and on a pool alike."""

from __future__ import annotations

import pytest

from attnbench.analysis.time_left import ClassProgress
from attnbench.api import programs as api_programs
from attnbench.judge.class_progress import ClassClock, expected_round
from tests.fakes import FakeClock
from tests.judge.classes import CASES, can_build, class_sandbox, make_class


def test_a_phase_begins_then_each_job_says_the_time_left_from_the_jobs_so_far():
    heard: list = []
    clock = FakeClock(50.0)
    progress = ClassClock(heard.append, clock)
    clock.now += 2  # two seconds of builds: no job yet, nothing to estimate from
    progress.expect(["t01", "t02"] * 2)
    progress.begin("first runs", 4, "2 submissions x 2 cases")
    progress.job_started(0)
    clock.now += 1
    progress.job_ended(0, "t01")
    progress.job_started(1)
    clock.now += 3
    progress.job_ended(1, "t02")
    clock.now += 2  # a warm-up between the rows: wall clock no job has
    progress.job_started(2)
    progress.instead(["t01"], [])  # one job less than expected
    clock.now += 1
    progress.job_ended(2, "t01")
    events = heard
    assert all(isinstance(e, ClassProgress) for e in events)  # a typed event each
    assert [(e.phase, e.done, e.total, e.elapsed_s) for e in events] == [
        ("first runs", 0, 4, 2.0), ("first runs", 1, 4, 3.0), ("first runs", 2, 4, 6.0), ("first runs", 3, 4, 9.0)]
    assert events[0].note == "2 submissions x 2 cases" and events[0].left_s is None
    assert events[1].left_s == pytest.approx(3 * 1.0)  # t02 and t01 and t02 at the only mean there is: 1 s
    assert events[2].left_s == pytest.approx(1.0 + 3.0)  # t01 at 1 s, t02 at 3 s; 4 job-seconds in 4 s of wall clock
    # one t02 left, at 3 s a job; 5 job-seconds in the 7 s since the first job began
    assert events[3].left_s == pytest.approx(3.0 * 7.0 / 5.0)


def test_a_rerun_round_is_expected_to_rerun_every_case_of_the_top_rows_before_ranks_say():
    assert expected_round(["t01", "t02"], built=5, rerun_top=3) == ["t01", "t02"] * 3
    assert expected_round(["t01", "t02"], built=2, rerun_top=3) == ["t01", "t02"] * 2
    assert expected_round(["t01"], built=4, rerun_top=0) == []


@pytest.mark.parametrize("where", [{}, {"gpus": "all"}], ids=["in-process", "pool"])
def test_a_class_says_its_phases_in_order_each_to_its_end_and_nothing_left_at_the_end(tmp_path, monkeypatch, where):
    if not can_build():
        pytest.skip("no C compiler or make")
    if where:
        monkeypatch.setenv("ATTNBENCH_CPU_WORKERS", "2")
    heard: list = []
    api_programs.judge_class([make_class(tmp_path)], CASES, time_limits="none", rerun_top=1, sandbox=class_sandbox(),
                             listener=heard.append, **where)
    plans = [event for event in heard if isinstance(event, ClassProgress)]
    phases = list(dict.fromkeys(p.phase for p in plans))
    # one flow: the same phases on every executor; the builds first (a class that cannot run here draws no input)
    assert phases == ["builds", "inputs and references", "first runs", "reruns, round 2 of 3", "reruns, round 3 of 3"]
    for phase in phases:
        mine = [p for p in plans if p.phase == phase]
        assert mine[0].done == 0 and mine[-1].done == mine[-1].total == len(mine) - 1
    first = [p for p in plans if p.phase == "first runs"]
    assert first[0].total == 4 * 2  # four submissions built, two cases; erin did not build
    assert first[0].left_s is None and all(p.left_s is not None for p in first[1:])
    assert plans[-1].left_s == 0.0  # every job planned has run
    assert [p.total for p in plans if p.phase.startswith("reruns") and p.done == 0] == [2, 2]  # alice's two cases
    assert {p.note for p in plans if p.phase.startswith("reruns") and p.done == 0} == {"the top 1 submission"}
