"""attnbench.spread.pool: the one GPU pool, with cpu workers standing in for GPUs and a toy work."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from attnbench.errors import AttnbenchError, GpuUnavailable
from attnbench.spread.devices import Device
from dataclasses import dataclass

from attnbench.spread.executor import (
    DeviceLost,
    DeviceReady,
    ExecutorEvent,
    JobDied,
    JobDone,
    JobNotRun,
    JobTold,
    WorkerNote,
)
from attnbench.spread.pool import GpuPool


@dataclass(frozen=True)
class Squared:
    """The toy work's own event: a square, and the state of the worker that made it."""

    square: int
    state: int


class ToyWork:
    """Squares numbers; ("die", path) kills its worker the first time, ("lose",) loses the device."""

    def __init__(self, unusable: tuple[int, ...] = ()) -> None:
        self.unusable = unusable

    def open(self, device: Device, workers: int) -> tuple[int, str]:
        if device.index in self.unusable:
            raise AttnbenchError("no such device")
        return device.index, f"{device.label} of {workers}"

    def run(self, job, state, emit) -> str | None:
        if job[0] == "die" and not Path(job[1]).exists():
            Path(job[1]).write_text("died once")
            os.kill(os.getpid(), signal.SIGKILL)
        if job[0] == "hang_up":  # a closed terminal's SIGHUP goes to the whole process group, workers too
            os.kill(os.getpid(), signal.SIGHUP)
        if job[0] == "lose":
            return "the device fell off the bus"
        if job[0] == "sleep_then_lose":  # after the other worker has gone idle
            time.sleep(1.5)
            return "the device fell off the bus"
        emit(Squared(job[-1] ** 2, state))
        return None

    def close(self, state) -> None:
        pass


def squares(events: list[ExecutorEvent]) -> dict[int, int]:
    return {e.job: e.event.square for e in events if isinstance(e, JobTold) and isinstance(e.event, Squared)}


def test_every_job_runs_once_on_some_worker_and_workers_stay_up_between_runs():
    devices = [Device(0, True), Device(1, True)]
    first: list[ExecutorEvent] = []
    second: list[ExecutorEvent] = []
    with GpuPool(devices, ToyWork()) as pool:
        pool.run([("n", n) for n in range(8)], first.append)
        pids = [slot.process.pid for slot in pool.slots.values()]
        pool.run([("n", 10)], second.append)
        assert [slot.process.pid for slot in pool.slots.values()] == pids
    assert squares(first) == {n: n * n for n in range(8)}
    assert sorted(e.job for e in first if isinstance(e, JobDone)) == list(range(8))
    assert {e.about for e in first if isinstance(e, DeviceReady)} <= {"cpu worker 0 of 2", "cpu worker 1 of 2"}
    assert squares(second) == {0: 100}


def test_a_closed_terminals_sighup_leaves_the_worker_to_its_parent():
    """A worker ended by SIGHUP (default action) left its rooms mounted; the parent decides, as for Ctrl-C."""
    events: list[ExecutorEvent] = []
    with GpuPool([Device(0, True)], ToyWork()) as pool:
        pool.run([("hang_up", 3), ("n", 4)], events.append)
    assert squares(events) == {0: 9, 1: 16}
    assert not [e for e in events if isinstance(e, JobDied)]


def test_a_dead_worker_is_replaced_and_retry_sends_its_job_again(tmp_path):
    events: list[ExecutorEvent] = []
    retried = []

    def retry(i, job):
        retried.append(i)
        return ("n", 7)

    with GpuPool([Device(0, True)], ToyWork(), retry) as pool:
        pool.run([("n", 2), ("die", str(tmp_path / "died"), 3), ("n", 4)], events.append)
    assert [e.how for e in events if isinstance(e, JobDied)] == ["signal 9"] and retried == [1]
    assert any(isinstance(e, WorkerNote) and "died (signal 9); starting another" in e.text for e in events)
    assert squares(events) == {0: 4, 1: 49, 2: 16}


def test_a_lost_device_is_given_up_and_its_jobs_go_elsewhere_or_not_at_all():
    events: list[ExecutorEvent] = []
    with GpuPool([Device(0, True)], ToyWork()) as pool:
        pool.run([("lose",), ("n", 3)], events.append)
    assert [e for e in events if isinstance(e, (DeviceLost, JobNotRun))] == [
        DeviceLost(Device(0, True), "the device fell off the bus"),
        JobNotRun(1, None, "not run: no device is left (cpu worker 0: the device fell off the bus)")]
    events.clear()
    with GpuPool([Device(0, True), Device(1, True)], ToyWork(unusable=(0,))) as pool:
        pool.run([("n", 2), ("n", 3)], events.append)
    assert squares(events) == {0: 4, 1: 9} and {e.event.state for e in events if isinstance(e, JobTold)} == {1}
    with GpuPool([Device(0, True)], ToyWork(unusable=(0,))) as pool, \
            pytest.raises(GpuUnavailable, match="no worker could open its device: cpu worker 0: no such device"):
        pool.run([("n", 2)], events.append)


def test_an_exception_from_the_listener_stops_every_worker():
    def stop(event: ExecutorEvent) -> None:
        if isinstance(event, JobTold):
            raise KeyboardInterrupt

    pool = GpuPool([Device(0, True), Device(1, True)], ToyWork())
    with pytest.raises(KeyboardInterrupt):
        pool.run([("n", n) for n in range(6)], stop)
    assert all(slot.process is None for slot in pool.slots.values())


def test_with_a_group_a_worker_runs_every_job_of_the_group_back_to_back_in_order():
    """A class's row: the worker that takes its first job takes the rest and runs them before any other job."""
    jobs = [("n", group, n) for n, group in enumerate("abcabcabca")]
    events: list[ExecutorEvent] = []
    with GpuPool([Device(0, True), Device(1, True)], ToyWork(), group=lambda job: job[1]) as pool:
        pool.run(jobs, events.append)
    assert squares(events) == {n: n * n for n in range(len(jobs))}
    ran: dict[int, list[int]] = {}  # device -> its jobs, in the order they ended
    for event in events:
        if isinstance(event, JobDone):
            ran.setdefault(event.device.index, []).append(event.job)
    for group in "abc":
        mine = [i for i, job in enumerate(jobs) if job[1] == group]
        where = [device for device, done in ran.items() if set(mine) & set(done)]
        assert len(where) == 1, (group, ran)  # one worker ran the whole group
        done = ran[where[0]]
        start = done.index(mine[0])
        assert done[start:start + len(mine)] == mine, (group, done)  # back to back, in order


def test_a_group_whose_device_is_lost_goes_on_on_another_device():
    jobs = [("n", "a", 0), ("lose", "a", 1), ("n", "a", 2), ("n", "a", 3), ("n", "b", 4)]
    events: list[ExecutorEvent] = []
    with GpuPool([Device(0, True), Device(1, True)], ToyWork(), group=lambda job: job[1]) as pool:
        pool.run(jobs, events.append)
    assert squares(events) == {0: 0, 2: 4, 3: 9, 4: 16}
    lost = next(e.device.index for e in events if isinstance(e, DeviceLost))
    assert {e.device.index for e in events if isinstance(e, JobTold) and e.job in (2, 3)} == {1 - lost}


def test_a_group_a_lost_device_leaves_goes_to_a_worker_that_was_already_idle():
    """The other worker finished its own group first and waited: the lost device's rest of the group was put back
    in the queue, and no worker was dealt it (the pool polled forever)."""
    jobs = [("n", "b", 0), ("sleep_then_lose", "a", 1), ("n", "a", 2), ("n", "a", 3)]
    events: list[ExecutorEvent] = []
    with GpuPool([Device(0, True), Device(1, True)], ToyWork(), group=lambda job: job[1]) as pool:
        done = threading.Thread(target=pool.run, args=(jobs, events.append), daemon=True)
        done.start()
        done.join(timeout=60)
        assert not done.is_alive(), "the pool waited forever for jobs no worker was dealt"
    assert squares(events) == {0: 0, 2: 4, 3: 9}


def test_closing_a_pool_whose_worker_never_started_keeps_the_interruption():
    """A SIGTERM within a worker's start left a Process never started; close() joined it ("can only join a started
    process"), and the class reported the judge's own error (exit 3) instead of an interruption (130)."""
    pool = GpuPool([Device(0, True)], ToyWork())
    pool.slots[0].process = pool.context.Process(target=print)  # made, never started
    pool.close(at_once=True)
    assert pool.slots[0].process is None
