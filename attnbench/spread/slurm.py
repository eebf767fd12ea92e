"""Slurm through submitit: `SlurmExecutor` submits keyed jobs as one array, follows them through
squeue and tells each result as it comes back; a matrix and a class both spread through it.

A matrix packs its case groups (`cellgroups`) into jobs of about a minute; each job gets the inputs'
recipes (suite cases are generated on the node from their seeds, never copied) and the plan, runs
them in process on the node's device, and sends back only plain results, merged into one run. The
jobs folder holds the run's record (`attnbench-run.pkl`), submitit's pickles and Slurm's logs, so
`resume(folder)` can finish a run whose jobs were lost or whose waiting was interrupted.

Without Slurm accounting `sacct` answers nothing and submitit cannot tell a job that died from one
still pending; here a job counts as lost once squeue no longer shows it as active and its result
has not appeared within a grace period, and its cells become ERROR cells (resume runs them again).
"""

from __future__ import annotations

import datetime as _dt
import pickle
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from attnbench.bench.matrix import MatrixListener, QuietListener, cell_work
from attnbench.cases.inputs import BenchInput, CaseInfo
from attnbench.errors import AttnbenchError, ResultsError
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import ERROR, Cell
from attnbench.spread.cellgroups import CellPlan, GroupReport, node_input, report_not_run
from attnbench.spread.cellgroups import group_seconds as cells_seconds
from attnbench.spread.devices import Device
from attnbench.spread.executor import InProcess, Listener, Progress
from attnbench.spread.workers import CaseGroupWork, DeviceSummary, MatrixInterrupted

RUN_FILE = "attnbench-run.pkl"
ACTIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED", "SIGNALING",
          "STAGE_OUT", "REQUEUE_HOLD", "REQUEUE_FED"}


class SlurmUnavailable(AttnbenchError):
    """No submitit, no sbatch, or a Slurm that does not answer."""

    exit_code = 3


@dataclass(frozen=True)
class SlurmOptions:
    """How the jobs are asked for, and how long a vanished job is waited for."""

    partition: str | None = None
    gres: str | None = None  # e.g. gpu:1
    time_min: int = 30  # each job's time limit
    array_parallelism: int = 16
    folder: Path | None = None  # the jobs folder [default: attnbench-results/slurm/<date>_<time>]
    job_seconds: float = 60.0  # the size jobs are packed to, by the FLOPs estimate
    poll_s: float = 2.0
    lost_after_s: float = 30.0  # a job out of squeue this long without its result is lost
    squeue_timeout_s: float = 300.0  # squeue failing this long ends the wait (resume later)


@dataclass
class SlurmRun:
    """What the jobs folder records of a run: enough to collect or resume it."""

    kind: str
    plan: CellPlan
    inputs: list[BenchInput]
    groups: list[list[int]]  # per job: the indices of its inputs
    options: SlurmOptions
    assemble: dict[str, Any]  # baseline, policy record, settings, command: what the result set needs
    job_ids: list[str | None] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        assert self.options.folder is not None
        return Path(self.options.folder)

    def save(self) -> None:
        save_record(self.folder, RUN_FILE, self)


def save_record(folder: Path, name: str, record: Any) -> None:
    """A run's record (pickled) in its jobs folder, replaced whole or not at all."""
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / (name + ".tmp")
    temporary.write_bytes(pickle.dumps(record))
    temporary.replace(folder / name)


def load_record(folder: str | Path, name: str, kind: type, what: str) -> Any:
    """The record `name` of a jobs folder, of type `kind`, its folder set to where it is now; one line
    naming the folder (`what` says which kind of jobs folder) when it is not there or not one."""
    path = Path(folder) / name
    try:
        record = pickle.loads(path.read_bytes())
    except FileNotFoundError:
        raise ResultsError(f"{folder}: not an attnbench {what} jobs folder (no {name})") from None
    except Exception as exc:
        raise ResultsError(f"{path}: unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(record, kind):
        raise ResultsError(f"{path}: not an attnbench {what} run")
    record.options = replace(record.options, folder=Path(folder))  # the folder may have moved
    return record


def load_run(folder: str | Path) -> SlurmRun:
    return load_record(folder, RUN_FILE, SlurmRun, "Slurm")


# -- packing cells into jobs -----------------------------------------------------------------------
COLD_COMPILE_S = 3.0  # a node's first build of a kernel, with no compile cache yet


def group_seconds(variants: list[Variant], bench_input: BenchInput) -> float:
    """An input's cells, plus generating it and its float64 reference on the node, and compiling."""
    cells = cells_seconds(variants, bench_input)
    if not cells:
        return 0.0
    builds = sum(1 for v in variants if v.refusal(bench_input.shape) is None and v.kind.compiled)
    return 1.0 + bench_input.shape.flops / 2e10 + COLD_COMPILE_S * builds + cells


def pack_jobs(variants: list[Variant], inputs: list[BenchInput], job_seconds: float) -> list[list[int]]:
    """Inputs (each with all its variants) packed into jobs of about `job_seconds`, largest first."""
    costs = {i: group_seconds(variants, bench_input) for i, bench_input in enumerate(inputs)}
    jobs: list[list[int]] = []
    loads: list[float] = []
    for i in sorted((i for i in costs if costs[i] > 0), key=lambda i: -costs[i]):
        fits = next((j for j, load in enumerate(loads) if load + costs[i] <= job_seconds), None)
        if fits is None:
            jobs.append([i])
            loads.append(costs[i])
        else:
            jobs[fits].append(i)
            loads[fits] += costs[i]
    return [sorted(job) for job in jobs]


# -- on the node -----------------------------------------------------------------------------------
def run_job(plan: CellPlan, inputs: list[BenchInput]) -> dict[str, Any]:
    """One Slurm job: its case groups, in this process (`InProcess`), on the job's device (Slurm makes the
    job's GPU device 0); a group after a lost CUDA context is not run, its input not loaded."""
    variants = plan.variants()
    jobs = [(node_input(b), [v.name for v in variants if v.refusal(b.shape) is None]) for b in inputs]
    groups: list[dict[str, Any]] = [{"label": b.label, "info": {}, "cells": []} for b in inputs]
    found: dict[str, Any] = {}

    def hear(event: Progress) -> None:
        if event.what == "ready":
            found["facts"], found["arch"], found["torch_versions"] = event.payload
        elif event.what == "unusable":
            found["error"] = f"{socket.gethostname()}: {event.payload}"
        elif event.what in ("info", "cell", "not_run"):
            group = groups[event.job]
            report = GroupReport(info=group["info"].update, finished=group["cells"].append)
            if event.what == "info":
                report.info(event.payload)
            elif event.what == "cell":
                report.finished(event.payload)
            else:
                report_not_run(inputs[event.job], jobs[event.job][1], event.payload, report)

    InProcess(CaseGroupWork(plan), Device(0)).run(jobs, hear)
    if "error" in found:
        return {"error": found["error"]}
    return {**found, "host": socket.gethostname(), "groups": groups}


# -- submitting and following ----------------------------------------------------------------------
def _submitit() -> Any:
    try:
        import submitit
    except ImportError:
        raise SlurmUnavailable("--executor slurm needs submitit: pip install -e '.[slurm]'") from None
    if shutil.which("sbatch") is None or shutil.which("squeue") is None:
        raise SlurmUnavailable("--executor slurm needs Slurm's sbatch and squeue on the PATH (try "
                               "tools/slurm_local.sh for a one-node cluster on this machine)")
    return submitit


def submit_array(folder: Path, options: SlurmOptions, job_name: str,
                 calls: list[tuple[Callable[..., Any], tuple]]) -> list[str]:
    """Submit one job per (function, arguments) as one array; returns their Slurm ids, in order."""
    submitit = _submitit()
    executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=0)
    parameters: dict[str, Any] = {"time": options.time_min, "array_parallelism": options.array_parallelism,
                                  "job_name": job_name, "nodes": 1, "ntasks_per_node": 1}
    if options.partition:
        parameters["partition"] = options.partition
    if options.gres:
        parameters["gres"] = options.gres
    executor.update_parameters(**parameters)
    try:
        with executor.batch():
            jobs = [executor.submit(function, *arguments) for function, arguments in calls]
    except Exception as exc:  # sbatch refused: no such partition, no controller, ...
        detail = getattr(exc, "stderr", None) or getattr(exc, "output", None) or exc
        raise SlurmUnavailable(f"sbatch refused the jobs: {str(detail).strip()}") from None
    return [job.job_id for job in jobs]


def squeue_states() -> dict[str, str] | None:
    """Job id (array tasks as 12_3) -> state, finished jobs included while Slurm keeps them; None
    when squeue does not answer."""
    try:
        done = subprocess.run(["squeue", "-h", "-r", "-t", "all", "-o", "%i %T"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return dict(line.split()[:2] for line in done.stdout.splitlines() if len(line.split()) >= 2)


def result_file(folder: Path, job_id: str | None) -> Path:
    """Where submitit leaves a job's pickled result."""
    return Path(folder) / f"{job_id}_0_result.pkl"


def read_outcome(folder: Path, job_id: str | None) -> dict[str, Any]:
    """A finished job's result, or {"error": ...} saying why it has none."""
    try:
        outcome, value = pickle.loads(result_file(folder, job_id).read_bytes())
    except Exception as exc:
        return {"error": f"Slurm job {job_id}: unreadable result ({type(exc).__name__}: {exc})"}
    if outcome != "success":
        last = [line for line in str(value).strip().splitlines() if line.strip()][-1:] or ["no trace"]
        return {"error": f"Slurm job {job_id} failed: {last[0].strip()}"}
    return value


def _log_tail(folder: Path, job_id: str | None) -> str:
    for suffix in ("err", "out"):
        path = Path(folder) / f"{job_id}_0_log.{suffix}"
        if path.exists():
            lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
            if lines:
                return f"; log {path.name}: {lines[-1].strip()}"
    return ""


Key = TypeVar("Key")


def wait_for_jobs(folder: Path, job_ids: dict[Key, str | None], options: SlurmOptions,
                  on_result: Callable[[Key, dict], None] = lambda key, result: None,
                  sleep: Callable[[float], None] = time.sleep) -> dict[Key, dict]:
    """Wait for every job's result; a job that leaves the queue without one is reported lost."""
    outstanding = set(job_ids)
    results: dict[Key, dict] = {}
    lost_since: dict[Key, float] = {}
    squeue_ok = time.monotonic()
    while outstanding:
        states = squeue_states()
        now = time.monotonic()
        if states is None and now - squeue_ok > options.squeue_timeout_s:
            raise SlurmUnavailable(f"squeue has not answered for {options.squeue_timeout_s:.0f} s; the jobs "
                                   f"may still run: finish the run with --resume {folder}")
        if states is not None:
            squeue_ok = now
        for key in sorted(outstanding, key=str):
            job_id = job_ids[key]
            if result_file(folder, job_id).exists():
                results[key] = read_outcome(folder, job_id)
            elif states is not None and states.get(str(job_id)) not in ACTIVE:
                since = lost_since.setdefault(key, now)
                state = states.get(str(job_id), "gone from the queue")
                grace = 5.0 if state in ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY") else \
                    options.lost_after_s
                if now - since < grace:
                    continue
                results[key] = {"error": f"Slurm job {job_id} ended ({state}) without a result"
                                         + _log_tail(folder, job_id)}
            else:
                lost_since.pop(key, None)
                continue
            outstanding.discard(key)
            on_result(key, results[key])
        if outstanding:
            sleep(options.poll_s)
    return results


class SlurmExecutor:
    """An executor: each job a call (function, arguments) run as one Slurm job of an array, followed
    through squeue; each result is told as a "result" event as it comes back.

    Its jobs are keyed (a compare's by number, a class's by submission): `ids` maps each key to its Slurm
    job id, None before it is submitted, and is the run's record of them, kept by `save` as soon as it
    changes, so that a later run of the same jobs (a resume) submits again only those with no result
    that Slurm no longer runs."""

    def __init__(self, folder: Path, options: SlurmOptions, job_name: str, ids: dict[Any, str | None],
                 save: Callable[[], None] = lambda: None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.folder, self.options, self.job_name, self.ids = Path(folder), options, job_name, ids
        self.save, self.sleep = save, sleep

    def outstanding(self, keys: Iterable[Any]) -> list[Any]:
        """The jobs to submit (again): never submitted, or with no result and no longer in the queue."""
        keys = list(keys)
        if all(self.ids.get(key) is None for key in keys):
            return keys
        states = squeue_states() or {}
        return [key for key in keys if self.ids.get(key) is None or (
            not result_file(self.folder, self.ids[key]).exists() and states.get(str(self.ids[key])) not in ACTIVE)]

    def submit(self, jobs: dict[Any, tuple[Callable[..., Any], tuple]], which: list[Any]) -> None:
        """Submit the jobs `which` as one array; their ids are saved at once."""
        ids = submit_array(self.folder, self.options, self.job_name, [jobs[key] for key in which])
        self.ids.update(zip(which, ids))
        self.save()

    def wait(self, keys: Iterable[Any], listener: Listener) -> dict[Any, dict]:
        """Every job's result, each told as it comes back; a job that leaves the queue without one is lost."""
        return wait_for_jobs(self.folder, {key: self.ids[key] for key in keys}, self.options,
                             lambda key, result: listener(Progress("result", key, None, result)), self.sleep)

    def run(self, jobs: dict[Any, tuple[Callable[..., Any], tuple]], listener: Listener) -> dict[Any, dict]:
        """Submit what has no result yet ("submitted" says which, and whether they go out again), then wait."""
        fresh = all(self.ids.get(key) is None for key in jobs)
        again = self.outstanding(jobs)
        if again:
            self.submit(jobs, again)
            listener(Progress("submitted", None, None, {"keys": again, "of": len(jobs), "again": not fresh,
                                                        "array": str(self.ids[again[0]]).split("_")[0]}))
        return self.wait(jobs, listener)


def _calls(run: SlurmRun) -> dict[int, tuple[Callable[..., Any], tuple]]:
    return {j: (run_job, (run.plan, [run.inputs[i] for i in group])) for j, group in enumerate(run.groups)}


def _executor(run: SlurmRun, sleep: Callable[[float], None] = time.sleep) -> SlurmExecutor:
    while len(run.job_ids) < len(run.groups):
        run.job_ids.append(None)
    ids = dict(enumerate(run.job_ids))

    def save() -> None:
        run.job_ids = [ids[j] for j in range(len(run.groups))]
        run.save()

    return SlurmExecutor(run.folder, run.options, f"attnbench-{run.kind}", ids, save, sleep)


def submit(run: SlurmRun, which: list[int]) -> None:
    """Submit the jobs `which` of a matrix's run as one array; their ids are saved in the run's record."""
    _executor(run).submit(_calls(run), which)


def collect(run: SlurmRun, listener: MatrixListener, sleep: Callable[[float], None] = time.sleep) -> dict[int, dict]:
    """Wait for every job's result; a job that leaves the queue without one is reported lost."""
    return _executor(run, sleep).wait(range(len(run.groups)), _hearing(run, listener, lambda note: None))


def _hearing(run: SlurmRun, listener: MatrixListener, notice: Callable[[str], None]) -> Listener:
    """The matrix's listener, hearing the Slurm executor's events."""

    def hear(event: Progress) -> None:
        if event.what == "result":
            _report(run, event.job, event.payload, listener)
        elif event.what == "submitted" and event.payload["again"]:
            notice(f"resubmitted {len(event.payload['keys'])} of {event.payload['of']} job(s) that had no result")
        elif event.what == "submitted":
            notice(f"{event.payload['of']} Slurm job(s) submitted as array {event.payload['array']}; "
                   f"jobs folder {run.folder} (finish an interrupted run with --resume {run.folder})")

    return hear


def _job_cells(run: SlurmRun, j: int, result: dict) -> list[Cell]:
    if "error" in result:
        variants = run.plan.variants()
        return [Cell(v.name, run.inputs[i].label, ERROR, result["error"]) for i in run.groups[j] for v in variants
                if v.refusal(run.inputs[i].shape) is None]
    return [Cell.from_dict(c) for group in result["groups"] for c in group["cells"]]


def _report(run: SlurmRun, j: int, result: dict, listener: MatrixListener) -> None:
    by_label = {b.label: b for b in run.inputs}
    variants = {v.name: v for v in run.plan.variants()}
    for cell in _job_cells(run, j, result):
        listener.cell_finished(cell, cell_work(variants[cell.variant], by_label[cell.case]))


def merged(run: SlurmRun, results: dict[int, dict]) -> tuple[list[CaseInfo], list[Cell], DeviceSummary]:
    """The jobs' results as one run's cases and cells, in one-process order."""
    variants = run.plan.variants()
    infos: dict[str, CaseInfo] = {}
    cells: dict[tuple[str, str], Cell] = {}
    summary = DeviceSummary()
    for j, result in sorted(results.items()):
        for cell in _job_cells(run, j, result):
            cells[(cell.variant, cell.case)] = cell
        if "error" in result:
            continue
        for group in result["groups"]:
            if group["info"]:
                infos[group["label"]] = CaseInfo.from_dict(group["info"])
        if result.get("facts") is not None:
            summary.facts_by_index[j], summary.archs[j] = result["facts"], result["arch"]
        summary.torch_versions = summary.torch_versions or result.get("torch_versions")
    ordered_infos, ordered_cells = [], []
    for bench_input in run.inputs:
        refusals = [v.refusal(bench_input.shape) for v in variants]
        note = "every variant refused it" if all(r is not None for r in refusals) else "not run"
        ordered_infos.append(infos.get(bench_input.label)
                             or CaseInfo(bench_input.label, bench_input.shape, None, "not loaded", "", note))
        for variant, refusal in zip(variants, refusals):
            if refusal is not None:
                ordered_cells.append(Cell.refused(bench_input.label, refusal))
            elif (variant.name, bench_input.label) in cells:
                ordered_cells.append(cells[(variant.name, bench_input.label)])
    return ordered_infos, ordered_cells, summary


def default_folder(results_dir: str | Path) -> Path:
    stamp = _dt.datetime.now().strftime("%Y-%m-%d_%H%M%S")
    return Path(results_dir) / "slurm" / stamp


def execute(run: SlurmRun, listener: MatrixListener | None = None,
            notice: Callable[[str], None] = lambda note: None) -> tuple[list[CaseInfo], list[Cell], DeviceSummary]:
    """Submit a new run's jobs (or, resuming, those without a result and not queued), wait, merge."""
    listener = listener or QuietListener()
    variants = run.plan.variants()
    listener.start(len(variants) * len(run.inputs),
                   sum(cell_work(v, i) for i in run.inputs for v in variants if v.refusal(i.shape) is None))
    if not run.job_ids:
        run.save()
    executor = _executor(run)
    try:
        results = executor.run(_calls(run), _hearing(run, listener, notice))
    except KeyboardInterrupt:
        done = {j: read_outcome(run.folder, run.job_ids[j]) for j in range(len(run.groups))
                if result_file(run.folder, run.job_ids[j]).exists()}
        raise MatrixInterrupted(f"interrupted; the Slurm jobs keep running: finish the run with --resume {run.folder}",
                                *merged(run, done)) from None
    return merged(run, results)
