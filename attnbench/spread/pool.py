"""Several GPUs of one host: one worker process per device, the jobs dealt in order to whichever is free.

Each worker is a `spawn`ed process (pycuda contexts do not share well across threads or forks, and
the judge kills every process that appears while a program runs: two programs in one process would
kill each other's) that opens its device once (`Work.open`) and runs the jobs it is sent. Each
worker sends its events down a pipe of its own: a worker killed in the middle of a message can spoil
only its own pipe, never hold a lock the other workers need.

With `group` (a class's: by submission), a worker that takes a job takes every pending job of its group with it
and runs them back to back, in the order given, before it takes another (a class warms a row up on the worker
that runs the row's jobs, right before them).

A worker that dies loses the job it was running (a `JobDied` event; `retry` may give back the rest of
it, which goes out again first); a new worker takes its place on the same device, up to
MAX_RESTARTS. A worker whose device is lost (a kernel fault that ends its CUDA context) stops, and
the device is given up. Jobs no device is left for are `JobNotRun`. Ctrl-C, or any exception the
listener raises, stops every worker at once and is raised. Workers stay up between runs until the
pool is closed, so a class's reruns find their cases loaded.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing import connection
from typing import Any, Callable, Sequence

from attnbench.errors import AttnbenchError, GpuUnavailable
from attnbench.host_threads import one_allocator_arena
from attnbench.spread.devices import Device
from attnbench.spread.executor import (
    DeviceLost,
    DeviceReady,
    DeviceUnusable,
    ExecutorEvent,
    JobDied,
    JobDone,
    JobNotRun,
    JobTold,
    Listener,
    Work,
    WorkerNote,
)

MAX_RESTARTS = 3  # a device whose worker dies more often than this is given up
POLL_S = 0.2


def worker_main(work: Work, device: Device, inbox: Any, outbox: Any, workers: int) -> None:
    """A worker: open the device, then run the jobs it is sent until it is sent None (or until a job
    loses the device)."""
    # the parent decides what Ctrl-C stops, and a closed terminal's SIGHUP, sent to the whole process group
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    one_allocator_arena()  # its runs start with forks of it, as the judge's do (host_threads says why)
    try:
        state, about = work.open(device, workers)
    except AttnbenchError as exc:
        outbox.send(DeviceUnusable(device, str(exc)))
        return
    try:
        outbox.send(DeviceReady(device, about))
        while True:
            task = inbox.get()
            if task is None:
                return
            i, job = task
            lost = work.run(job, state, lambda event: outbox.send(JobTold(i, device, event)))
            outbox.send(JobDone(i, device, lost))
            if lost is not None:  # its results are all sent; a lost device must not run again
                return
    finally:
        work.close(state)


@dataclass
class _Slot:
    """The parent's view of one device's worker."""

    device: Device
    process: Any = None
    inbox: Any = None
    outbox: Any = None  # the reading end of the worker's pipe; None once it is closed
    ready: bool = False
    job: int | None = None  # the job it runs now
    queue: deque[int] = field(default_factory=deque)  # the rest of its group, to run after it
    restarts: int = 0
    retired: bool = False


class GpuPool:
    """An executor: the jobs of one `Work` on worker processes, one per device. Use it in a `with`."""

    def __init__(self, devices: list[Device], work: Work,
                 retry: Callable[[int, Any], Any | None] = lambda i, job: None,
                 group: Callable[[Any], Any] | None = None) -> None:
        self.devices, self.work, self.retry, self.group = devices, work, retry, group
        self.context = multiprocessing.get_context("spawn")
        self.slots = {d.index: _Slot(d) for d in devices}
        self.unusable: list[str] = []
        self.opened = False  # whether any worker opened its device
        self.jobs: list[Any] = []
        self.pending: deque[int] = deque()
        self.listener: Listener = lambda event: None

    def __enter__(self) -> GpuPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(at_once=exc[0] is not None)

    # -- a run -------------------------------------------------------------------------------------
    def run(self, jobs: Sequence[Any], listener: Listener) -> None:
        """Every job, dealt in the order given; raises GpuUnavailable when no worker could open its device."""
        self.jobs, self.listener = list(jobs), listener
        self.pending = deque(range(len(self.jobs)))
        for slot in self.slots.values():
            slot.queue.clear()
        self._checked = time.monotonic()
        try:
            for slot in self.slots.values():
                if slot.process is None:
                    self._spawn(slot)
                else:
                    self._dispatch(slot)
            self._loop()
        except BaseException:
            self.close(at_once=True)
            raise
        if not self.opened and all(s.retired for s in self.slots.values()) and self.unusable:
            raise GpuUnavailable("no worker could open its device: " + "; ".join(self.unusable))

    def _loop(self) -> None:
        while self.pending or any(s.job is not None or s.queue for s in self.slots.values()):
            if all(s.retired for s in self.slots.values()):
                why = "not run: no device is left (" + "; ".join(self.unusable) + ")"
                while self.pending:
                    self.listener(JobNotRun(self.pending.popleft(), None, why))
                return
            self._receive(POLL_S)
            if time.monotonic() - self._checked > POLL_S:  # also while messages keep coming
                self._checked = time.monotonic()
                self._check_deaths()

    def _handle(self, event: ExecutorEvent) -> None:
        assert event.device is not None
        slot = self.slots[event.device.index]
        self.listener(event)
        match event:
            case DeviceReady():
                slot.ready = self.opened = True
                self._dispatch(slot)
            case DeviceUnusable(why=why):
                self.unusable.append(f"{slot.device.label}: {why}")
                self._retire(slot, f"not run: {slot.device.label} could not start ({why})")
            case JobDone(lost=None):
                slot.job = None
                self._dispatch(slot)
            case JobDone(lost=lost):
                slot.job = None
                self.unusable.append(f"{slot.device.label}: {lost}")
                self.listener(DeviceLost(slot.device, lost))
                self._retire(slot, f"not run: {slot.device.label}: {lost}")

    # -- workers -----------------------------------------------------------------------------------
    def _spawn(self, slot: _Slot) -> None:
        slot.inbox = self.context.Queue()
        slot.ready = False
        if slot.outbox is not None:
            slot.outbox.close()
        reader, writer = self.context.Pipe(duplex=False)
        slot.process = self.context.Process(target=worker_main,
                                            args=(self.work, slot.device, slot.inbox, writer, len(self.slots)),
                                            name=f"attnbench-{slot.device.label.replace(' ', '')}", daemon=True)
        slot.process.start()
        writer.close()  # the worker holds the only writing end: its death ends the pipe
        slot.outbox = reader

    def _dispatch(self, slot: _Slot) -> None:
        if slot.retired or not slot.ready:
            return
        if slot.job is None and slot.queue:
            slot.job = slot.queue.popleft()
        elif slot.job is None and self.pending:
            slot.job = self.pending.popleft()
            if self.group is not None:  # the rest of its group comes with it, in order
                key = self.group(self.jobs[slot.job])
                mine = [i for i in self.pending if self.group(self.jobs[i]) == key]
                taken = set(mine)
                self.pending = deque(i for i in self.pending if i not in taken)
                slot.queue.extend(mine)
        if slot.job is not None:
            slot.inbox.put((slot.job, self.jobs[slot.job]))

    def _check_deaths(self) -> None:
        for slot in self.slots.values():
            if slot.retired or slot.process is None or slot.process.is_alive():
                continue
            self._drain()  # what it sent before it died still counts
            if slot.retired:
                continue
            code = slot.process.exitcode
            how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            if slot.job is not None:
                self.listener(JobDied(slot.job, slot.device, how))
                rest = self.retry(slot.job, self.jobs[slot.job])
                if rest is None:
                    slot.job = None
                else:
                    self.jobs[slot.job] = rest
            slot.restarts += 1
            if slot.restarts > MAX_RESTARTS:
                self.unusable.append(f"{slot.device.label}: its worker died {slot.restarts} times")
                self._retire(slot, f"not run: the worker on {slot.device.label} died {slot.restarts} times")
            else:
                note = f"the worker on {slot.device.label} died ({how}); starting another"
                self.listener(WorkerNote(slot.device, note))
                self._spawn(slot)

    def _receive(self, timeout: float) -> bool:
        """Handle the events the workers have sent within `timeout` seconds; whether there were any."""
        readers = {slot.outbox: slot for slot in self.slots.values() if slot.outbox is not None}
        if not readers:
            time.sleep(timeout)
            return False
        got = False
        for reader in connection.wait(list(readers), timeout):
            slot = readers[reader]  # type: ignore[index]
            try:
                event = reader.recv()  # type: ignore[union-attr]
            except (EOFError, OSError):  # the worker is gone (perhaps mid-message): _check_deaths says why
                reader.close()  # type: ignore[union-attr]
                if slot.outbox is reader:
                    slot.outbox = None
                continue
            got = True
            self._handle(event)
        return got

    def _drain(self) -> None:
        while self._receive(0.05):
            pass

    def _retire(self, slot: _Slot, message: str) -> None:
        slot.retired = True
        self.pending.extendleft(reversed(slot.queue))  # the rest of its group goes to another device, first
        slot.queue.clear()
        if slot.job is not None:
            self.listener(JobNotRun(slot.job, slot.device, message))
            slot.job = None
        for other in self.slots.values():  # a worker already idle hears of no job again unless it is dealt one now
            if other.job is None:
                self._dispatch(other)

    def close(self, at_once: bool = False) -> None:
        """Stop every worker: at once (Ctrl-C, an error), or by telling it there is no more work."""
        for slot in self.slots.values():
            process = slot.process
            if process is None or process.pid is None:  # never started (Ctrl-C or SIGTERM within its start): its
                slot.process = None  # join would raise and hide the interruption as the judge's own error
                continue
            if at_once and process.is_alive():
                process.terminate()
            elif process.is_alive():
                slot.inbox.put(None)
            process.join(timeout=2 if at_once else 10)
            if process.is_alive():
                process.kill()
                process.join(timeout=2)
            slot.process = None
            if slot.outbox is not None:
                slot.outbox.close()
                slot.outbox = None
