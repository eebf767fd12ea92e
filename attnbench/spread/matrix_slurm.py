"""A compare or a sweep over Slurm: its case groups packed into jobs of about a minute, submitted as one
array through the Slurm executor (`slurm.SlurmExecutor`), merged into one run.

Each job gets a list of case groups (`cellgroups`): the inputs' recipes (suite cases are generated
on the node from their seeds, never copied) and the plan; it runs them in process on the node's
device and sends back only plain results. The jobs folder holds the run's record
(`attnbench-run.pkl`), submitit's pickles and Slurm's logs, so `resume(folder)` can finish a run
whose jobs were lost or whose waiting was interrupted.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from attnbench.bench.matrix import cell_work
from attnbench.cases.inputs import BenchInput, CaseInfo
from attnbench.kernels.variant import Variant
from attnbench.results.matrix_events import CellFinished, MatrixBegun
from attnbench.results.resultset import ERROR, Cell
from attnbench.spread.cellgroups import CellPlan, GroupReport, node_input, report_not_run
from attnbench.spread.cellgroups import group_seconds as cells_seconds
from attnbench.spread.devices import Device
from attnbench.spread.executor import (
    DeviceReady,
    DeviceUnusable,
    ExecutorEvent,
    InProcess,
    JobNotRun,
    JobTold,
    quiet_listener,
)
from attnbench.spread.slurm import (
    JobResult,
    JobsSubmitted,
    SlurmExecutor,
    SlurmListener,
    SlurmOptions,
    folders_to_make,
    load_record,
    read_outcome,
    remove_unsubmitted,
    result_file,
    save_record,
)
from attnbench.spread.workers import (
    CaseGroupWork,
    CaseLoaded,
    CellMeasured,
    DeviceSummary,
    MatrixInterrupted,
    MatrixListener,
)

RUN_FILE = "attnbench-run.pkl"


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

    def report(job: int) -> GroupReport:
        return GroupReport(info=groups[job]["info"].update, finished=groups[job]["cells"].append)

    def hear(event: ExecutorEvent) -> None:
        match event:
            case DeviceReady(about=(facts, arch, torch_versions)):
                found["facts"], found["arch"], found["torch_versions"] = facts, arch, torch_versions
            case DeviceUnusable(why=why):
                found["error"] = f"{socket.gethostname()}: {why}"
            case JobTold(job=job, event=CaseLoaded(info=info)):
                report(job).info(info)
            case JobTold(job=job, event=CellMeasured(cell=cell)):
                report(job).finished(cell)
            case JobNotRun(job=job, why=why):
                report_not_run(inputs[job], jobs[job][1], why, report(job))

    InProcess(CaseGroupWork(plan), Device(0)).run(jobs, hear)
    if "error" in found:
        return {"error": found["error"]}
    return {**found, "host": socket.gethostname(), "groups": groups}


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


def _hearing(run: SlurmRun, listener: MatrixListener, notice: Callable[[str], None]) -> SlurmListener:
    """The matrix's listener, hearing the Slurm executor's events."""

    def hear(event: JobsSubmitted | JobResult) -> None:
        match event:
            case JobResult(key=j, result=result):
                _report(run, j, result, listener)
            case JobsSubmitted(keys=keys, of=of, again=True):
                notice(f"resubmitted {len(keys)} of {of} job(s) that had no result")
            case JobsSubmitted(of=of, array=array):
                notice(f"{of} Slurm job(s) submitted as array {array}; "
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
        listener(CellFinished(cell, cell_work(variants[cell.variant], by_label[cell.case])))


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


def execute(run: SlurmRun, listener: MatrixListener | None = None,
            notice: Callable[[str], None] = lambda note: None) -> tuple[list[CaseInfo], list[Cell], DeviceSummary]:
    """Submit a new run's jobs (or, resuming, those without a result and not queued), wait, merge."""
    listener = listener or quiet_listener
    variants = run.plan.variants()
    listener(MatrixBegun(len(variants) * len(run.inputs),
                         sum(cell_work(v, i) for i in run.inputs for v in variants if v.refusal(i.shape) is None)))
    made = folders_to_make(run.folder) if not run.job_ids else []
    if not run.job_ids:
        run.save()
    executor = _executor(run)
    try:
        results = executor.run(_calls(run), _hearing(run, listener, notice))
    except Exception:
        if made and not any(run.job_ids):  # nothing went out: no jobs folder left to resume, no file behind
            remove_unsubmitted(run.folder, made)
        raise
    except KeyboardInterrupt:
        done = {j: read_outcome(run.folder, run.job_ids[j]) for j in range(len(run.groups))
                if result_file(run.folder, run.job_ids[j]).exists()}
        raise MatrixInterrupted(f"interrupted; the Slurm jobs keep running: finish the run with --resume {run.folder}",
                                *merged(run, done)) from None
    return merged(run, results)
