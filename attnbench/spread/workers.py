"""Several GPUs of one host: one worker process per device, case groups dealt out longest-first.

Each worker is a `spawn`ed process that opens its own CUDA context (pycuda contexts do not share
well across threads or forks) and runs whole case groups (`cellgroups`), so a case's baseline and
its variants share one device. The parent deals the groups in order of expected cost, largest
first, to whichever worker is free, and merges what comes back into the cells a one-process run
would have made, in the same order.

A worker that dies loses the cell it was running (an ERROR cell saying so); a new worker takes its
place on the same device and finishes the rest of that case. A worker whose CUDA context a kernel
fault has lost reports the rest of its case as not run and stops, and its device is given up, as a
one-process run stops measuring. Ctrl-C stops every worker and raises
`MatrixInterrupted` with what was measured so far.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing import connection
from typing import Any, Callable

from attnbench.spread.cellgroups import (
    CellPlan,
    Device,
    GroupReport,
    group_seconds,
    group_work,
    open_device,
    parse_device_list,
    run_case_group,
)
from attnbench.bench.matrix import MatrixInterrupted, MatrixListener, QuietListener, cell_work
from attnbench.cases.inputs import BenchInput, CaseInfo
from attnbench.errors import AttnbenchError, GpuUnavailable
from attnbench.host_threads import claim_share
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import ERROR, REFUSED, Cell

# N cpu workers stand in for GPUs (tests and CI without GPUs): `--gpus all` then means N workers.
CPU_WORKERS_ENV = "ATTNBENCH_CPU_WORKERS"
MAX_RESTARTS = 3  # a device whose worker dies more often than this is given up
POLL_S = 0.2


def devices_for(spec: str) -> list[Device]:
    """The devices `--gpus all|0,1,...` names: CUDA devices, or cpu workers standing in for them."""
    parse_device_list(spec, None)  # the syntax first: bad usage before a missing GPU
    stand_ins = os.environ.get(CPU_WORKERS_ENV, "").strip()
    if stand_ins:
        if not stand_ins.isdigit() or int(stand_ins) < 1:
            raise AttnbenchError(f"{CPU_WORKERS_ENV}={stand_ins!r}: give a number of cpu workers, 1 or more")
        return [Device(i, stand_in=True) for i in parse_device_list(spec, int(stand_ins))]
    from attnbench.backends.gpu import gpu_probe

    reason = gpu_probe()
    if reason is not None:
        raise GpuUnavailable(f"--gpus needs CUDA GPUs: {reason}")
    import pycuda.driver as driver

    return [Device(i) for i in parse_device_list(spec, driver.Device.count())]


@dataclass
class DeviceSummary:
    """The devices a run used, standing in for one open Gpu when the run is assembled."""

    facts_by_index: dict[int, dict[str, Any]] = field(default_factory=dict)
    archs: dict[int, str] = field(default_factory=dict)
    # the workers' PyTorch, so the parent need not import it (seconds) to write the metadata
    torch_versions: dict[str, Any] | None = None

    @property
    def used(self) -> bool:
        return bool(self.facts_by_index)

    @property
    def index(self) -> int:
        return min(self.facts_by_index)

    @property
    def arch(self) -> str:
        return self.archs[self.index]

    def facts(self) -> dict[str, Any]:
        return self.facts_by_index[self.index]

    def all_facts(self) -> list[dict[str, Any]]:
        return [self.facts_by_index[i] for i in sorted(self.facts_by_index)]


def _worker_main(device: Device, plan: CellPlan, inbox: Any, outbox: Any, workers: int) -> None:
    """A worker: open the device, then run the case groups it is sent until it is sent None (or until a
    cell loses the device's CUDA context: the parent then gives the device up).

    `outbox` is this worker's own pipe to the parent: a worker killed in the middle of a message
    can spoil only its own pipe, never hold a lock the other workers need. The host's cores are
    shared out between the `workers`, so their references and checks do not fight over them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C stops
    claim_share(workers)
    try:
        opened = open_device(device, plan.variants())
    except AttnbenchError as exc:
        outbox.send(("unusable", device.index, str(exc)))
        return
    outbox.send(("ready", device.index, opened.facts, opened.arch, opened.torch_versions))
    while True:
        task = inbox.get()
        if task is None:
            return
        group, bench_input, names = task
        report = GroupReport(
            info=lambda info: outbox.send(("info", device.index, group, info)),
            started=lambda name: outbox.send(("started", device.index, group, name)),
            finished=lambda cell: outbox.send(("cell", device.index, group, cell)),
        )
        lost = run_case_group(plan, bench_input, names, opened, report)
        if lost is not None:  # its cells are all reported; a lost context must not measure again
            outbox.send(("lost", device.index, group, lost))
            return
        outbox.send(("done", device.index, group, None))


@dataclass
class _Slot:
    """The parent's view of one device's worker."""

    device: Device
    process: Any = None
    inbox: Any = None
    outbox: Any = None  # the reading end of the worker's pipe; None once it is closed
    ready: bool = False
    task: tuple[int, list[str]] | None = None  # (group, names still to run)
    current: str | None = None  # the variant running now
    restarts: int = 0
    retired: bool = False


class DevicePool:
    """Runs a matrix's case groups on worker processes, one per device."""

    def __init__(self, devices: list[Device], variants: list[Variant], plan: CellPlan,
                 listener: MatrixListener | None = None, warn: Callable[[str], None] = lambda note: None) -> None:
        self.devices, self.variants, self.plan = devices, variants, plan
        self.listener = listener or QuietListener()
        self.warn = warn
        self.context = multiprocessing.get_context("spawn")
        self.summary = DeviceSummary()
        self.slots = {d.index: _Slot(d) for d in devices}
        self.cells: dict[tuple[str, str], Cell] = {}
        self.infos: dict[int, CaseInfo] = {}
        self.unusable: list[str] = []

    # -- the run -----------------------------------------------------------------------------------
    def run(self, inputs: list[BenchInput]) -> tuple[list[CaseInfo], list[Cell]]:
        """Every cell of variants x inputs; refused cells are recorded here and never sent out."""
        self.inputs = inputs
        takers: dict[int, list[str]] = {}
        for g, bench_input in enumerate(inputs):
            names = [v.name for v in self.variants if v.refusal(bench_input.shape) is None]
            if names:
                takers[g] = names
        work = sum(group_work(self.variants, i) for i in inputs)
        self.listener.start(len(self.variants) * len(inputs), work)
        for bench_input in inputs:
            for variant in self.variants:
                refusal = variant.refusal(bench_input.shape)
                if refusal is not None:
                    self._finish(Cell.refused(bench_input.label, refusal))
        order = sorted(takers, key=lambda g: -group_seconds(self.variants, inputs[g]))
        self.pending: deque[tuple[int, list[str]]] = deque((g, takers[g]) for g in order)
        self._checked = time.monotonic()
        try:
            for slot in self.slots.values():
                self._spawn(slot)
            self._loop()
        except KeyboardInterrupt:
            self._stop(at_once=True)
            raise MatrixInterrupted("interrupted; the workers were stopped", *self._merged(), self.summary) from None
        finally:
            self._stop(at_once=False)
        if not self.summary.used and all(s.retired for s in self.slots.values()) and self.unusable:
            raise GpuUnavailable("no worker could open its device: " + "; ".join(self.unusable))
        return self._merged()

    def _loop(self) -> None:
        while self.pending or any(s.task is not None for s in self.slots.values()):
            if all(s.retired for s in self.slots.values()):
                for group, names in list(self.pending):
                    self._lose(group, names, "not run: no device is left (" + "; ".join(self.unusable) + ")")
                self.pending.clear()
                return
            self._receive(POLL_S)
            if time.monotonic() - self._checked > POLL_S:  # also while messages keep coming
                self._checked = time.monotonic()
                self._check_deaths()

    def _handle(self, message: tuple) -> None:
        kind, index, *rest = message
        slot = self.slots[index]
        if kind == "ready":
            facts, arch, torch_versions = rest
            if facts is not None:
                self.summary.facts_by_index[index], self.summary.archs[index] = facts, arch
            self.summary.torch_versions = self.summary.torch_versions or torch_versions
            slot.ready = True
            self._dispatch(slot)
        elif kind == "unusable":
            self.unusable.append(f"{slot.device.label}: {rest[0]}")
            self.warn(f"{slot.device.label} cannot run: {rest[0]}")
            self._retire(slot, f"not run: {slot.device.label} could not start ({rest[0]})")
        elif kind == "lost":
            reason = f"{slot.device.label}: {rest[1]}"
            self.unusable.append(reason)
            self.warn(f"{slot.device.label} runs no more cells: {rest[1]}")
            self._retire(slot, f"not run: {reason}")
        elif kind == "info":
            self.infos[rest[0]] = CaseInfo.from_dict(rest[1])
        elif kind == "started":
            slot.current = rest[1]
            self.listener.cell_started(rest[1], self.inputs[rest[0]].label)
        elif kind == "cell":
            cell = Cell.from_dict(rest[1])
            slot.current = None
            if slot.task is not None and cell.variant in slot.task[1]:
                slot.task[1].remove(cell.variant)
            self._finish(cell)
        elif kind == "done":
            slot.task = None
            self._dispatch(slot)

    def _finish(self, cell: Cell) -> None:
        self.cells[(cell.variant, cell.case)] = cell
        work = 0.0
        if cell.status != REFUSED:
            bench_input = next(i for i in self.inputs if i.label == cell.case)
            variant = next(v for v in self.variants if v.name == cell.variant)
            work = cell_work(variant, bench_input)
        self.listener.cell_finished(cell, work)

    def _lose(self, group: int, names: list[str], message: str) -> None:
        for name in names:
            self._finish(Cell(name, self.inputs[group].label, ERROR, message))

    # -- workers -----------------------------------------------------------------------------------
    def _spawn(self, slot: _Slot) -> None:
        slot.inbox = self.context.Queue()
        slot.ready = False
        if slot.outbox is not None:
            slot.outbox.close()
        reader, writer = self.context.Pipe(duplex=False)
        slot.process = self.context.Process(target=_worker_main,
                                            args=(slot.device, self.plan, slot.inbox, writer, len(self.slots)),
                                            name=f"attnbench-{slot.device.label.replace(' ', '')}", daemon=True)
        slot.process.start()
        writer.close()  # the worker holds the only writing end: its death ends the pipe
        slot.outbox = reader

    def _dispatch(self, slot: _Slot) -> None:
        if slot.retired or not slot.ready:
            return
        if slot.task is None and self.pending:
            slot.task = self.pending.popleft()
        if slot.task is not None:
            group, names = slot.task
            slot.inbox.put((group, self.inputs[group], list(names)))
        else:
            slot.inbox.put(None)

    def _check_deaths(self) -> None:
        for slot in self.slots.values():
            if slot.retired or slot.process is None or slot.process.is_alive():
                continue
            if slot.task is None and slot.ready:
                continue  # finished and was told to stop
            self._drain()  # what it sent before it died still counts
            if slot.task is None and slot.ready:
                continue
            code = slot.process.exitcode
            how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            if slot.task is not None:
                group, names = slot.task
                lost = slot.current if slot.current in names else names[0]
                names.remove(lost)
                self._lose(group, [lost], f"the worker on {slot.device.label} died ({how}) while running this cell")
                if not names:
                    slot.task = None
            slot.current = None
            slot.restarts += 1
            if slot.restarts > MAX_RESTARTS:
                self.unusable.append(f"{slot.device.label}: its worker died {slot.restarts} times")
                self._retire(slot, f"not run: the worker on {slot.device.label} died {slot.restarts} times")
            else:
                self.warn(f"the worker on {slot.device.label} died ({how}); starting another")
                self._spawn(slot)

    def _receive(self, timeout: float) -> bool:
        """Handle the messages the workers have sent within `timeout` seconds; whether there were any."""
        readers = {slot.outbox: slot for slot in self.slots.values() if slot.outbox is not None}
        if not readers:
            time.sleep(timeout)
            return False
        got = False
        for reader in connection.wait(list(readers), timeout):
            slot = readers[reader]  # type: ignore[index]
            try:
                message = reader.recv()  # type: ignore[union-attr]
            except (EOFError, OSError):  # the worker is gone (perhaps mid-message): _check_deaths says why
                reader.close()  # type: ignore[union-attr]
                if slot.outbox is reader:
                    slot.outbox = None
                continue
            got = True
            self._handle(message)
        return got

    def _drain(self) -> None:
        while self._receive(0.05):
            pass

    def _retire(self, slot: _Slot, message: str) -> None:
        slot.retired = True
        if slot.task is not None:
            self._lose(slot.task[0], slot.task[1], message)
            slot.task = None

    def _stop(self, at_once: bool) -> None:
        for slot in self.slots.values():
            process = slot.process
            if process is None:
                continue
            if at_once and process.is_alive():
                process.terminate()
            elif process.is_alive():
                slot.inbox.put(None)  # a worker started late, or restarted, still waits for work
            process.join(timeout=2 if at_once else 10)
            if process.is_alive():
                process.kill()
                process.join(timeout=2)

    def _merged(self) -> tuple[list[CaseInfo], list[Cell]]:
        """Infos and cells in one-process order: input by input, variant by variant."""
        infos, cells = [], []
        for g, bench_input in enumerate(self.inputs):
            if g in self.infos:
                infos.append(self.infos[g])
            else:
                note = "every variant refused it" if all(
                    (v.name, bench_input.label) in self.cells and self.cells[(v.name, bench_input.label)].status == REFUSED
                    for v in self.variants) else "not run"
                infos.append(CaseInfo(bench_input.label, bench_input.shape, None, "not loaded", "", note))
            for variant in self.variants:
                cell = self.cells.get((variant.name, bench_input.label))
                if cell is not None:
                    cells.append(cell)
        return infos, cells
