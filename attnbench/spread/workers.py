"""Several GPUs of one host for a compare or a sweep: its case groups as the jobs of a `GpuPool`.

A job is one case group (`cellgroups`): an input with every variant that takes it, so a case's
baseline and its variants share one device. The groups are dealt in order of expected cost,
largest first, and what comes back is merged into the cells a one-process run would have made, in
the same order.

A worker that dies loses the cell it was running (an ERROR cell saying so); a new worker takes its
place on the same device and finishes the rest of that case. A worker whose CUDA context a kernel
fault has lost reports the rest of its case as not run and stops, and its device is given up, as a
one-process run stops measuring. Ctrl-C stops every worker and raises
`MatrixInterrupted` with what was measured so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from attnbench.bench.matrix import MatrixInterrupted, MatrixListener, QuietListener, cell_work
from attnbench.cases.inputs import BenchInput, CaseInfo
from attnbench.host_threads import claim_share
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import ERROR, REFUSED, Cell
from attnbench.spread.cellgroups import CellPlan, GroupReport, group_seconds, group_work, open_device, run_case_group
from attnbench.spread.devices import Device
from attnbench.spread.executor import Emit, Executor, Progress
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


@dataclass(frozen=True)
class CaseGroupWork:
    """A matrix's work on a device: open it (a GPU only when some variant needs one), then run case groups.

    The host's cores are shared out between the `workers`, so their references and checks do not fight
    over them."""

    plan: CellPlan

    def open(self, device: Device, workers: int) -> tuple[Any, Any]:
        claim_share(workers)
        opened = open_device(device, self.plan.variants())
        return opened, (opened.facts, opened.arch, opened.torch_versions)

    def run(self, job: tuple[BenchInput, list[str]], state: Any, emit: Emit) -> str | None:
        bench_input, names = job
        report = GroupReport(info=lambda info: emit("info", info), started=lambda name: emit("started", name),
                             finished=lambda cell: emit("cell", cell))
        return run_case_group(self.plan, bench_input, names, state, report)


class SpreadMatrix:
    """A matrix's case groups on an executor: hears its events and merges the cells they bring."""

    def __init__(self, variants: list[Variant], inputs: list[BenchInput], listener: MatrixListener | None = None,
                 warn: Callable[[str], None] = lambda note: None) -> None:
        self.variants, self.inputs = variants, inputs
        self.listener = listener or QuietListener()
        self.warn = warn
        self.summary = DeviceSummary()
        self.cells: dict[tuple[str, str], Cell] = {}
        self.infos: dict[int, CaseInfo] = {}
        self.jobs: list[tuple[int, list[str]]] = []  # (group, the names it still has to run)
        self.current: dict[int, str] = {}  # job -> the variant running now

    def run(self, executor: Executor) -> tuple[list[CaseInfo], list[Cell]]:
        """Every cell of variants x inputs; refused cells are recorded here and never sent out."""
        takers: dict[int, list[str]] = {}
        for g, bench_input in enumerate(self.inputs):
            names = [v.name for v in self.variants if v.refusal(bench_input.shape) is None]
            if names:
                takers[g] = names
        work = sum(group_work(self.variants, i) for i in self.inputs)
        self.listener.start(len(self.variants) * len(self.inputs), work)
        for bench_input in self.inputs:
            for variant in self.variants:
                refusal = variant.refusal(bench_input.shape)
                if refusal is not None:
                    self._finish(Cell.refused(bench_input.label, refusal))
        order = sorted(takers, key=lambda g: -group_seconds(self.variants, self.inputs[g]))
        self.jobs = [(g, list(takers[g])) for g in order]
        try:
            executor.run([(self.inputs[g], list(names)) for g, names in self.jobs], self.hear)
        except KeyboardInterrupt:
            raise MatrixInterrupted("interrupted; the workers were stopped", *self.merged(), self.summary) from None
        return self.merged()

    def hear(self, event: Progress) -> None:
        """One event of the executor's."""
        label = event.device.label if event.device is not None else ""
        if event.what == "ready":
            facts, arch, torch_versions = event.payload
            if facts is not None:
                assert event.device is not None
                self.summary.facts_by_index[event.device.index], self.summary.archs[event.device.index] = facts, arch
            self.summary.torch_versions = self.summary.torch_versions or torch_versions
        elif event.what == "unusable":
            self.warn(f"{label} cannot run: {event.payload}")
        elif event.what == "device_lost":
            self.warn(f"{label} runs no more cells: {event.payload}")
        elif event.what == "note":
            self.warn(event.payload)
        elif event.what == "info":
            self.infos[self.jobs[event.job][0]] = CaseInfo.from_dict(event.payload)
        elif event.what == "started":
            self.current[event.job] = event.payload
            self.listener.cell_started(event.payload, self.inputs[self.jobs[event.job][0]].label)
        elif event.what == "cell":
            cell = Cell.from_dict(event.payload)
            self.current.pop(event.job, None)
            names = self.jobs[event.job][1]
            if cell.variant in names:
                names.remove(cell.variant)
            self._finish(cell)
        elif event.what == "died":
            names = self.jobs[event.job][1]
            lost = self.current.pop(event.job, None)
            lost = lost if lost in names else names[0]
            names.remove(lost)
            self._lose(event.job, [lost], f"the worker on {label} died ({event.payload}) while running this cell")
        elif event.what == "not_run":
            self._lose(event.job, list(self.jobs[event.job][1]), event.payload)
            self.jobs[event.job][1].clear()

    def rest_of(self, job: int, sent: tuple[BenchInput, list[str]]) -> tuple[BenchInput, list[str]] | None:
        """What a job whose worker died still has to run: sent again to the device's new worker."""
        names = self.jobs[job][1]
        return (sent[0], list(names)) if names else None

    def _finish(self, cell: Cell) -> None:
        self.cells[(cell.variant, cell.case)] = cell
        work = 0.0
        if cell.status != REFUSED:
            bench_input = next(i for i in self.inputs if i.label == cell.case)
            variant = next(v for v in self.variants if v.name == cell.variant)
            work = cell_work(variant, bench_input)
        self.listener.cell_finished(cell, work)

    def _lose(self, job: int, names: list[str], message: str) -> None:
        for name in names:
            self._finish(Cell(name, self.inputs[self.jobs[job][0]].label, ERROR, message))

    def merged(self) -> tuple[list[CaseInfo], list[Cell]]:
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


def run_on_devices(devices: list[Device], variants: list[Variant], plan: CellPlan, inputs: list[BenchInput],
                   listener: MatrixListener | None = None, warn: Callable[[str], None] = lambda note: None,
                   ) -> tuple[list[CaseInfo], list[Cell], DeviceSummary]:
    """The matrix on a GpuPool of `devices`: its cases, its cells in one-process order, the devices used."""
    spread = SpreadMatrix(variants, inputs, listener, warn)
    with GpuPool(devices, CaseGroupWork(plan), spread.rest_of) as pool:
        infos, cells = spread.run(pool)
    return infos, cells, spread.summary
