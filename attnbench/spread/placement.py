"""Where a matrix runs: the executor `--gpus` and `--executor` choose (`executor.choose_executor`) runs it.

`run_placed` hands the cells to that executor's runner: in this process on the GPU it opens
(`workers.run_here`), on the host's GPUs (`workers.run_on_devices`) or as Slurm jobs (`matrix_slurm`), and
assembles what comes back into one ResultSet; a spread run lists every device used in the metadata
(`gpus`) and each cell's own device in its extra["gpu"]. `resume` finishes a Slurm run from its jobs folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any, Callable

from attnbench.backends.device import GpuDevice
from attnbench.bench.matrix import assemble
from attnbench.cases.inputs import BenchInput, CaseInfo
from attnbench.errors import UsageError
from attnbench.files import DEFAULT_RESULTS_DIR
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import Cell, ResultSet
from attnbench.spread.cellgroups import CellPlan
from attnbench.spread.devices import Device, devices_for
from attnbench.spread.executor import EXECUTORS, GPU_POOL, IN_PROCESS, SLURM, ExecutorKind, Listener, choose_executor
from attnbench.spread.matrix_slurm import SlurmRun, execute, load_run, pack_jobs
from attnbench.spread.slurm import SlurmOptions, default_folder
from attnbench.spread.workers import DeviceSummary, MatrixInterrupted, run_here, run_on_devices


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


@dataclass(frozen=True)
class MatrixRun:
    """What a compare or a sweep asks of wherever its cells run."""

    kind: str
    variants: list[Variant]
    inputs: list[BenchInput]
    plan: CellPlan
    record: dict[str, Any]  # the policy, baseline, settings and command the result set carries
    listener: Listener | None = None
    notice: Callable[[str], None] = lambda note: None
    before_run: Callable[[Any, list[BenchInput]], None] | None = None  # (the GPU or its facts, the inputs)
    open_here: Callable[[], GpuDevice | None] = lambda: None  # this process's GPU, for a run here
    device: int = 0  # the GPU of a run here


def run_placed(run: MatrixRun, placement: Placement) -> ResultSet:
    """Run the matrix where `placement` says (the executor its options choose): in this process, on the
    host's GPUs or on Slurm. Ctrl-C raises MatrixInterrupted with `partial`, the assembled result of what was
    measured."""
    return _RUNNERS[placement.kind.name](run, placement)


def _here(run: MatrixRun, placement: Placement) -> ResultSet:
    """In this process, on the GPU it opens (the variants' one-line refusal, where it cannot), input by input."""
    gpu = run.open_here()
    if run.before_run is not None:
        run.before_run(gpu, run.inputs)

    def assembled(infos: list[CaseInfo], cells: list[Cell]) -> ResultSet:
        return assemble(run.kind, run.variants, infos, cells, gpu, run.record["policy"], run.record["baseline"],
                        run.record["settings"], run.record["command"])

    try:
        infos, cells = run_here(Device(run.device), gpu, run.variants, run.plan, run.inputs, run.listener, run.notice)
    except MatrixInterrupted as exc:
        raise exc.with_partial(assembled(exc.cases, exc.cells)) from None
    return assembled(infos, cells)


def _on_gpus(run: MatrixRun, placement: Placement) -> ResultSet:
    """On a pool of the host's GPUs (or cpu workers standing in for them)."""
    assert placement.gpus is not None
    devices = devices_for(placement.gpus)
    if any(d.stand_in for d in devices) and any(not v.kind.runs_on_host for v in run.variants):
        raise UsageError("cpu workers standing in for GPUs run only the cpu variant")
    if run.before_run is not None:
        run.before_run(first_device_facts(devices), run.inputs)

    def on_devices() -> tuple[list[CaseInfo], list[Cell], DeviceSummary]:
        return run_on_devices(devices, run.variants, run.plan, run.inputs, run.listener, run.notice)

    where = "local: " + ", ".join(d.label for d in devices)
    return _finish(on_devices, run.kind, run.variants, run.record, where)


def _on_slurm(run: MatrixRun, placement: Placement) -> ResultSet:
    """As Slurm jobs, in the jobs folder of the Slurm options (by default one under the results folder)."""
    options = placement.slurm
    if options.folder is None:
        options = replace(options, folder=default_folder(placement.results_dir))
    slurm_run = SlurmRun(run.kind, run.plan, run.inputs, pack_jobs(run.variants, run.inputs, options.job_seconds),
                         options, run.record)
    return _finish(lambda: execute(slurm_run, run.listener, run.notice), run.kind, run.variants, run.record, "slurm")


_RUNNERS: dict[str, Callable[[MatrixRun, Placement], ResultSet]] = {
    IN_PROCESS.name: _here, GPU_POOL.name: _on_gpus, SLURM.name: _on_slurm}
assert set(_RUNNERS) == {kind.name for kind in EXECUTORS}, "every executor runs a matrix"


def _finish(work: Callable[[], tuple[list[CaseInfo], list[Cell], DeviceSummary]], kind: str,
            variants: list[Variant], record: dict[str, Any], where: str) -> ResultSet:
    try:
        infos, cells, summary = work()
    except MatrixInterrupted as exc:
        raise exc.with_partial(_assembled(kind, variants, exc.cases, exc.cells, exc.devices, record, where)) from None
    return _assembled(kind, variants, infos, cells, summary, record, where)


def resume(folder: str, listener: Listener | None = None,
           notice: Callable[[str], None] = lambda note: None) -> ResultSet:
    """Finish a Slurm run from its jobs folder: collect what finished, resubmit what was lost."""
    run = load_run(folder)
    variants = run.plan.variants()
    return _finish(lambda: execute(run, listener, notice), run.kind, variants, run.assemble, "slurm")
