"""Where a matrix runs when it does not run in this process: the host's GPUs or a Slurm cluster.

`run_spread` sends the cells to the devices (`workers`) or to Slurm jobs (`slurm`) and assembles
what comes back into the same ResultSet a one-process run makes, with every device used listed in
the metadata (`gpus`) and each cell's own device in its extra["gpu"]. `resume` finishes a Slurm run
from its jobs folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any, Callable

from attnbench.bench.matrix import MatrixListener, assemble
from attnbench.cases.inputs import BenchInput, CaseInfo
from attnbench.errors import UsageError
from attnbench.files import DEFAULT_RESULTS_DIR
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import Cell, ResultSet
from attnbench.spread.cellgroups import CellPlan
from attnbench.spread.devices import Device, devices_for
from attnbench.spread.executor import IN_PROCESS, SLURM, ExecutorKind, choose_executor
from attnbench.spread.matrix_slurm import SlurmRun, execute, load_run, pack_jobs
from attnbench.spread.slurm import SlurmOptions, default_folder
from attnbench.spread.workers import DeviceSummary, MatrixInterrupted, run_on_devices


@dataclass(frozen=True)
class Placement:
    """`--gpus` and `--executor` with the Slurm options, as the user gave them."""

    gpus: str | None = None  # all, or 0,1,...: one worker per GPU of this host
    executor: str = "local"
    slurm: SlurmOptions = field(default_factory=SlurmOptions)
    results_dir: str = DEFAULT_RESULTS_DIR  # the Slurm jobs folder goes under it unless slurm.folder is given

    @property
    def kind(self) -> ExecutorKind:
        """The executor these options choose (bad usage where they do not fit)."""
        return choose_executor(self.gpus, self.executor)

    @property
    def spread(self) -> bool:
        """Whether the cells leave this process."""
        return self.kind != IN_PROCESS


def first_device_facts(devices: list[Device]) -> Any | None:
    """Name and SM count of the first device, without a context (for refusing an incomparable saved run)."""
    if not devices or devices[0].stand_in:
        return None
    import pycuda.driver as driver

    driver.init()  # this process has not started CUDA: its workers count and open the devices
    device = driver.Device(devices[0].index)
    return SimpleNamespace(name=device.name(),
                           sm_count=device.get_attribute(driver.device_attribute.MULTIPROCESSOR_COUNT))


def _distinct(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen, kept = set(), []
    for item in facts:
        key = (item.get("host"), item.get("uuid") or item.get("index"), item.get("name"))
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def _assembled(kind: str, variants: list[Variant], infos: list[CaseInfo], cells: list[Cell],
               summary: DeviceSummary, record: dict[str, Any], where: str) -> ResultSet:
    result = assemble(kind, variants, infos, cells, summary if summary.used else None, record["policy"],
                      record["baseline"], {**record["settings"], "executor": where}, record["command"],
                      summary.torch_versions)
    if summary.used:
        result.metadata["gpus"] = _distinct(summary.all_facts())
    return result


def run_spread(kind: str, variants: list[Variant], inputs: list[BenchInput], plan: CellPlan, placement: Placement,
               record: dict[str, Any], listener: MatrixListener | None = None,
               notice: Callable[[str], None] = lambda note: None,
               before_run: Callable[[Any, list[BenchInput]], None] | None = None) -> ResultSet:
    """Run the matrix on the host's GPUs or on Slurm; `record` holds the policy, baseline, settings and
    command the result set carries. Ctrl-C raises MatrixInterrupted with `partial`, the assembled
    result of what was measured."""
    if placement.kind == SLURM:
        options = placement.slurm
        if options.folder is None:
            options = replace(options, folder=default_folder(placement.results_dir))
        run = SlurmRun(kind, plan, inputs, pack_jobs(variants, inputs, options.job_seconds), options, record)
        return _finish(lambda: execute(run, listener, notice), kind, variants, record, "slurm")
    assert placement.gpus is not None
    devices = devices_for(placement.gpus)
    if any(d.stand_in for d in devices) and any(not v.kind.runs_on_host for v in variants):
        raise UsageError("cpu workers standing in for GPUs run only the cpu variant")
    if before_run is not None:
        before_run(first_device_facts(devices), inputs)
    def on_devices() -> tuple[list[CaseInfo], list[Cell], DeviceSummary]:
        return run_on_devices(devices, variants, plan, inputs, listener, notice)

    where = "local: " + ", ".join(d.label for d in devices)
    return _finish(on_devices, kind, variants, record, where)


def _finish(work: Callable[[], tuple[list[CaseInfo], list[Cell], DeviceSummary]], kind: str,
            variants: list[Variant], record: dict[str, Any], where: str) -> ResultSet:
    try:
        infos, cells, summary = work()
    except MatrixInterrupted as exc:
        raise exc.with_partial(_assembled(kind, variants, exc.cases, exc.cells, exc.devices, record, where)) from None
    return _assembled(kind, variants, infos, cells, summary, record, where)


def resume(folder: str, listener: MatrixListener | None = None,
           notice: Callable[[str], None] = lambda note: None) -> ResultSet:
    """Finish a Slurm run from its jobs folder: collect what finished, resubmit what was lost."""
    run = load_run(folder)
    variants = run.plan.variants()
    return _finish(lambda: execute(run, listener, notice), run.kind, variants, run.assemble, "slurm")
