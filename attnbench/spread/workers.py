"""A compare's or a sweep's case groups as the jobs of an executor: a `GpuPool` of the host's GPUs, or
`InProcess` on the one device this process opened (`run_here`), with the same work (`CaseGroupWork`)
and the same merging of what comes back (`SpreadMatrix`).

A job is one case group (`cellgroups`): an input with every variant that takes it, so a case's
baseline and its variants share one device. On a pool the groups are dealt in order of expected cost,
largest first; in this process they run input by input. What comes back is merged into the cells in
one-process order.

A worker that dies loses the cell it was running (an ERROR cell saying so); a new worker takes its
place on the same device and finishes the rest of that case. A worker whose CUDA context a kernel
fault has lost reports the rest of its case as not run and stops, and its device is given up, as a
one-process run stops measuring. Ctrl-C stops every worker and raises
`MatrixInterrupted` with what was measured so far.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from attnbench.backends.cpu import passes_reported
from attnbench.backends.device import GpuDevice
from attnbench.bench.matrix import MatrixInterrupted, cell_work, cells_not_run
from attnbench.cases.inputs import BenchInput, CaseInfo, ProgressFactory
from attnbench.host_threads import claim_share
from attnbench.kernels.variant import Variant
from attnbench.results.matrix_events import BarAdvanced, BarClosed, BarOpened, CellFinished, CellStarted, MatrixBegun
from attnbench.results.resultset import REFUSED, Cell
from attnbench.spread.cellgroups import (
    CellPlan,
    GroupReport,
    OpenDevice,
    group_seconds,
    group_work,
    open_device,
    run_case_group,
)
from attnbench.spread.devices import Device
from attnbench.spread.executor import (
    DeviceLost,
    DeviceReady,
    DeviceUnusable,
    Emit,
    ExecutorEvent,
    Executor,
    InProcess,
    JobDied,
    JobNotRun,
    JobTold,
    WorkerNote,
    quiet_listener,
)
from attnbench.spread.pool import GpuPool


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


MatrixListener = Callable[[object], None]  # hears results.matrix_events


# -- a case group's own events, as its worker emits them (plain data: they cross to the parent) -------
@dataclass(frozen=True)
class CaseLoaded:
    """The group's input and reference are loaded (`info`: its `CaseInfo` as a dict)."""

    info: dict


@dataclass(frozen=True)
class VariantStarted:
    """A variant began on the group's input."""

    variant: str


@dataclass(frozen=True)
class CellMeasured:
    """A cell of the group is in (`cell`: a `Cell` as a dict)."""

    cell: dict


@dataclass(frozen=True)
class CaseGroupWork:
    """A matrix's work on a device: open it (a GPU only when some variant needs one), then run case groups.

    The host's cores are shared out between the `workers`, so their references and checks do not fight
    over them. `here` is the device this process opened already, for a run in this process (`InProcess`):
    its cells are not told which device ran them (the run has one, in its metadata), and a failure that is
    no cell's own stops the run, where a worker must report every cell it was given."""

    plan: CellPlan
    here: OpenDevice | None = None

    def open(self, device: Device, workers: int) -> tuple[Any, Any]:
        if self.here is not None:
            return self.here, (self.here.facts, self.here.arch, self.here.torch_versions)
        claim_share(workers)
        opened = open_device(device, self.plan.variants())
        return opened, (opened.facts, opened.arch, opened.torch_versions)

    def close(self, state: Any) -> None:
        pass  # the device stays open for the process's life (`here`'s or the worker's own)

    def run(self, job: tuple[BenchInput, list[str]], state: Any, emit: Emit) -> str | None:
        bench_input, names = job
        report = GroupReport(info=lambda info: emit(CaseLoaded(info)), started=lambda name: emit(VariantStarted(name)),
                             finished=lambda cell: emit(CellMeasured(cell)), progress=emitted_progress(emit))
        return run_case_group(self.plan, bench_input, names, state, report, failures_as_cells=self.here is None)


@contextmanager
def _bar(emit: Emit, description: str, total: int) -> Iterator[Callable[[int], None]]:
    emit(BarOpened(description, total))
    try:
        yield lambda n: emit(BarAdvanced(description, n))
    finally:
        emit(BarClosed(description))


def emitted_progress(emit: Emit) -> ProgressFactory:
    """A progress factory whose bars (generating an input, its reference) are events of the job's."""
    return functools.partial(_bar, emit)


class SpreadMatrix:
    """A matrix's case groups on an executor: hears its events and merges the cells they bring.

    `in_order` (a run on one device): every input is a group, in the order given, with every variant, so that
    the cells come as a one-process loop makes them, refusals in their place, and an interrupted run keeps
    the cases it reached; `capability` is that device's, so that cells not run after a lost context are
    still refused where the GPU refuses them. Otherwise (a pool) the groups are dealt largest first, refused
    cells are recorded here and never sent out, and an interrupted run keeps every case."""

    def __init__(self, variants: list[Variant], inputs: list[BenchInput], listener: MatrixListener | None = None,
                 warn: Callable[[str], None] = lambda note: None, in_order: bool = False,
                 capability: tuple[int, int] | None = None) -> None:
        self.variants, self.inputs = variants, inputs
        self.listener = listener or quiet_listener
        self.warn = warn
        self.in_order, self.capability = in_order, capability
        self.summary = DeviceSummary()
        self.cells: dict[tuple[str, str], Cell] = {}
        self.infos: dict[int, CaseInfo] = {}
        self.jobs: list[tuple[int, list[str]]] = []  # (group, the names it still has to run)
        self.current: dict[int, str] = {}  # job -> the variant running now
        self.not_run: dict[int, str] = {}  # group -> why it was not run

    def run(self, executor: Executor, interrupted: str = "interrupted; the workers were stopped",
            ) -> tuple[list[CaseInfo], list[Cell]]:
        """Every cell of variants x inputs. Ctrl-C raises MatrixInterrupted (`interrupted` its message) with
        what was measured."""
        self.listener(MatrixBegun(len(self.variants) * len(self.inputs),
                                  sum(group_work(self.variants, i) for i in self.inputs)))
        self.jobs = self._jobs()
        try:
            executor.run([(self.inputs[g], list(names)) for g, names in self.jobs], self.hear)
        except KeyboardInterrupt:
            raise MatrixInterrupted(interrupted, *self.merged(reached_only=self.in_order), self.summary) from None
        return self.merged()

    def _jobs(self) -> list[tuple[int, list[str]]]:
        if self.in_order:
            return [(g, [v.name for v in self.variants]) for g in range(len(self.inputs))]
        takers: dict[int, list[str]] = {}
        for g, bench_input in enumerate(self.inputs):
            names = [v.name for v in self.variants if v.refusal(bench_input.shape) is None]
            if names:
                takers[g] = names
        for bench_input in self.inputs:
            for variant in self.variants:
                refusal = variant.refusal(bench_input.shape)
                if refusal is not None:
                    self._finish(Cell.refused(bench_input.label, refusal))
        order = sorted(takers, key=lambda g: -group_seconds(self.variants, self.inputs[g]))
        return [(g, list(takers[g])) for g in order]

    def hear(self, event: ExecutorEvent) -> None:
        """One event of the executor's."""
        label = event.device.label if event.device is not None else ""
        match event:
            case DeviceReady(device=device, about=(facts, arch, torch_versions)):
                if facts is not None:
                    assert device is not None
                    self.summary.facts_by_index[device.index], self.summary.archs[device.index] = facts, arch
                self.summary.torch_versions = self.summary.torch_versions or torch_versions
            case DeviceUnusable(why=why):
                self.warn(f"{label} cannot run: {why}")
            case DeviceLost(why=why) if not self.in_order:  # one device: its cells not run say why
                self.warn(f"{label} runs no more cells: {why}")
            case WorkerNote(text=text):
                self.warn(text)
            case JobTold(job=job, event=BarOpened() | BarAdvanced() | BarClosed() as bar):
                self.listener(replace(bar, job=job))  # a job's own bar, keyed by its job
            case JobTold(job=job, event=CaseLoaded(info=info)):
                self.infos[self.jobs[job][0]] = CaseInfo.from_dict(info)
            case JobTold(job=job, event=VariantStarted(variant=variant)):
                self.current[job] = variant
                self.listener(CellStarted(variant, self.inputs[self.jobs[job][0]].label))
            case JobTold(job=job, event=CellMeasured(cell=measured)):
                cell = Cell.from_dict(measured)
                self.current.pop(job, None)
                names = self.jobs[job][1]
                if cell.variant in names:
                    names.remove(cell.variant)
                self._finish(cell)
            case JobDied(job=job, how=how):
                names = self.jobs[job][1]
                lost = self.current.pop(job, None)
                lost = lost if lost in names else names[0]
                names.remove(lost)
                self._lose(job, [lost], f"the worker on {label} died ({how}) while running this cell")
            case JobNotRun(job=job, why=why):
                self.not_run[self.jobs[job][0]] = why
                self._lose(job, list(self.jobs[job][1]), why)
                self.jobs[job][1].clear()

    def rest_of(self, job: int, sent: tuple[BenchInput, list[str]]) -> tuple[BenchInput, list[str]] | None:
        """What a job whose worker died still has to run: sent again to the device's new worker."""
        names = self.jobs[job][1]
        return (sent[0], list(names)) if names else None

    def _finish(self, cell: Cell) -> None:
        """A cell is in: the listener hears it (`CellFinished`) with its share of the run's work."""
        self.cells[(cell.variant, cell.case)] = cell
        work = 0.0
        if cell.status != REFUSED:
            bench_input = next(i for i in self.inputs if i.label == cell.case)
            variant = next(v for v in self.variants if v.name == cell.variant)
            work = cell_work(variant, bench_input)
        self.listener(CellFinished(cell, work))

    def _lose(self, job: int, names: list[str], message: str) -> None:
        bench_input = self.inputs[self.jobs[job][0]]
        variants = [v for v in self.variants if v.name in names]
        for cell in cells_not_run(variants, bench_input.label, bench_input.shape, self.capability, message):
            self._finish(cell)

    def merged(self, reached_only: bool = False) -> tuple[list[CaseInfo], list[Cell]]:
        """Infos and cells in one-process order: input by input, variant by variant (`reached_only`: only the
        inputs some of whose cells came back)."""
        infos, cells = [], []
        for g, bench_input in enumerate(self.inputs):
            if reached_only and not any((v.name, bench_input.label) in self.cells for v in self.variants):
                continue
            if g in self.infos:
                infos.append(self.infos[g])
            else:
                note = "every variant refused it" if all(
                    (v.name, bench_input.label) in self.cells and self.cells[(v.name, bench_input.label)].status == REFUSED
                    for v in self.variants) else self.not_run.get(g, "not run")
                infos.append(CaseInfo(bench_input.label, bench_input.shape, None, "not loaded", "", note))
            for variant in self.variants:
                cell = self.cells.get((variant.name, bench_input.label))
                if cell is not None:
                    cells.append(cell)
        return infos, cells


def run_on_devices(devices: list[Device], variants: list[Variant], plan: CellPlan, inputs: list[BenchInput],
                   listener: MatrixListener | None = None, warn: Callable[[str], None] = lambda note: None,
                   ) -> tuple[list[CaseInfo], list[Cell], DeviceSummary]:
    """The matrix on a GpuPool of `devices`: its cases, its cells in one-process order, the devices used."""
    spread = SpreadMatrix(variants, inputs, listener, warn)
    with GpuPool(devices, CaseGroupWork(plan), spread.rest_of) as pool:
        infos, cells = spread.run(pool)
    return infos, cells, spread.summary


def run_here(device: Device, gpu: GpuDevice | None, variants: list[Variant], plan: CellPlan, inputs: list[BenchInput],
             listener: MatrixListener | None = None, warn: Callable[[str], None] = lambda note: None,
             ) -> tuple[list[CaseInfo], list[Cell]]:
    """The matrix in this process (`InProcess`) on `gpu`, which it opened (None: host variants only), input by
    input: its cases and its cells. Long cpu passes show their bars; Ctrl-C raises MatrixInterrupted with the
    cases reached."""
    spread = SpreadMatrix(variants, inputs, listener, warn, in_order=True,
                          capability=getattr(gpu, "compute_capability", None))
    with passes_reported(emitted_progress(spread.listener)):
        return spread.run(InProcess(CaseGroupWork(plan, OpenDevice(gpu, None)), device), interrupted="interrupted")
