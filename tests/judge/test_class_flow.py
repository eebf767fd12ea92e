"""attnbench.judge.class_flow: a class on one worker judges its cases through the executor seam (`InProcess`,
with the work a pool's workers do), and gives the verdicts a pool gives."""

from __future__ import annotations

import pytest

from attnbench.api import programs as api_programs
from attnbench.spread import executor
from tests.judge.classes import CASES, ORDER, RANKS, can_build, class_sandbox, make_class, verdicts


def test_a_class_on_one_worker_runs_its_cases_in_process_through_the_seam(tmp_path, monkeypatch):
    if not can_build():
        pytest.skip("no C compiler or make")
    classroom = make_class(tmp_path)
    ran, real = [], executor.InProcess.run

    def recorded(self, jobs, listener):
        ran.append([(name, case.label) for name, _, case, _ in jobs])
        return real(self, jobs, listener)

    monkeypatch.setattr(executor.InProcess, "run", recorded)
    here = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, sandbox=class_sandbox())
    labels = CASES.split(",")
    first = [[(name, label) for label in labels] for name in ("alice", "bob", "carol", "dave")]  # erin: no build
    # its reruns row by row, each round's cases back to back (after a warm-up of its own), as its first runs
    assert ran[:4] == first and ran[4:] == [[("alice", label) for label in labels]] * 2
    assert [r.name for r in here.rows] == ORDER and {r.name: r.rank for r in here.rows} == RANKS
    assert all(not e.device for r in here.rows for e in r.entries.values())  # the row names its GPU
    monkeypatch.setenv("ATTNBENCH_CPU_WORKERS", "1")
    pooled = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, gpus="0",
                                      sandbox=class_sandbox())
    assert verdicts(here) == verdicts(pooled)


def test_a_class_on_one_worker_and_on_the_pool_tells_one_listener_the_same_progress(tmp_path, monkeypatch):
    """One listener protocol: whatever the executor, the class's caller hears `Progress` events, the same
    builds, cases and reruns with the same verdicts."""
    if not can_build():
        pytest.skip("no C compiler or make")
    classroom = make_class(tmp_path)

    def heard(**where) -> tuple[list, set]:
        events: list = []
        api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, sandbox=class_sandbox(),
                                 listener=events.append, **where)
        assert events and all(isinstance(event, executor.Progress) for event in events)
        built = [event.payload for event in events if event.what == "built"]
        judged = {(event.what, event.payload[0], event.payload[1], event.payload[2].verdict) for event in events
                  if event.what in ("case", "rerun")}
        return sorted(built), judged

    here = heard()
    monkeypatch.setenv("ATTNBENCH_CPU_WORKERS", "2")
    pooled = heard(gpus="all")
    assert here == pooled
    built, judged = here
    assert built == [("alice", True), ("bob", True), ("carol", True), ("dave", True), ("erin", False)]
    labels = CASES.split(",")
    assert {(name, label) for what, name, label, _ in judged if what == "case"} == {
        (name, label) for name in ("alice", "bob", "carol", "dave") for label in labels}
    assert {(name, label) for what, name, label, _ in judged if what == "rerun"} == {("alice", label) for label in labels}
