"""A class spread over this host's GPUs: one worker process per GPU, one submission case at a time on each.

The submissions are built first, one after another, each in its sandbox. Then every (submission, case)
runs on whichever worker is free, case by case (all submissions' runs of one case before the next, so
a worker loads each case's reference once), in a sandbox of its own with CUDA_VISIBLE_DEVICES naming
its GPU. Workers are processes, not threads, because the judge kills every process that appears while
a program runs (attnbench.sandbox.process): two programs in one process would kill each other's.
A case's verdict does not depend on which worker ran it: the same program, input, sandbox and check.
Without GPUs, ATTNBENCH_CPU_WORKERS=N stands N cpu workers in for them (the tests use it).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Sequence

from attnbench.analysis.ranking import rank, top_rows
from attnbench.cases.inputs import BenchInput, ProgressFactory, no_progress
from attnbench.errors import GpuUnavailable
from attnbench.judge.classroom import (
    RERUN_RUNS,
    Checkpoint,
    ClassListener,
    ClassSettings,
    add_note,
    add_run,
    build_row,
    cache_of,
    confinement,
    cuda_caches,
    failure_text,
    gpu_name,
    judge_entry,
    new_board,
    pinning,
    record_seeds,
    warm_up_entry,
)
from attnbench.judge.course_judge import PreparedCase, prepare_case
from attnbench.judge.fresh_inputs import release
from attnbench.judge.case_verdict import JUDGE_ERROR
from attnbench.judge.submissions import Submission
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow
from attnbench.sandbox.room import SandboxUnavailable
from attnbench.sandbox.staging import remove_tree
from attnbench.spread.cellgroups import Device, parse_device_list
from attnbench.spread.workers import CPU_WORKERS_ENV

STAND_IN = "cpu worker (standing in for a GPU)"


def _affinity() -> set[int]:
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def class_devices(spec: str) -> list[Device]:
    """The devices `--gpus all|0,1,...` names: the host's GPUs (nvidia-smi counts them; no pycuda is
    needed to judge programs), or cpu workers standing in for them."""
    parse_device_list(spec, None)  # the syntax first: bad usage before a missing GPU
    stand_ins = os.environ.get(CPU_WORKERS_ENV, "").strip()
    if stand_ins.isdigit() and int(stand_ins) > 0:
        return [Device(i, stand_in=True) for i in parse_device_list(spec, int(stand_ins))]
    smi = shutil.which("nvidia-smi")
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60).stdout if smi else ""
    count = sum(line.startswith("GPU ") for line in listed.splitlines())
    if count == 0:
        raise GpuUnavailable("--gpus needs NVIDIA GPUs, and nvidia-smi lists none here")
    return [Device(i) for i in parse_device_list(spec, count)]


def core_plan(workers: int, available: Sequence[int]) -> tuple[list[int], list[list[int]]]:
    """CPU cores for the parent (builds, input draws, checks) and for each worker, disjoint where there are
    enough: the parent keeps a share like a worker's, the workers split the rest evenly. With fewer cores
    than workers + 1, workers share cores round-robin (and the parent keeps the first)."""
    cores = sorted(available)
    if len(cores) < workers + 1:
        return cores[:1], [[cores[i % len(cores)]] for i in range(workers)]
    share = len(cores) // (workers + 1)
    parent, rest = cores[:share], cores[share:]
    per = len(rest) // workers
    return parent, [rest[i * per:(i + 1) * per] if i < workers - 1 else rest[i * per:] for i in range(workers)]


def _pin(cores: Sequence[int]) -> None:
    try:
        os.sched_setaffinity(0, set(cores))
    except (AttributeError, OSError):  # no affinity here (not Linux), or cores the cgroup forbids: unpinned
        pass


# -- in a worker ------------------------------------------------------------------------------------
_worker: dict[str, object] = {}


def _start_worker(devices: "multiprocessing.Queue[tuple[Device, list[int]]]") -> None:
    device, cores = devices.get()
    _pin(cores)  # a timed run shares no core with another worker's run, nor with the parent's builds
    name = STAND_IN
    if not device.stand_in:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(device.index)
        name = gpu_name(device.index)
    _worker["device"] = name


def _case(bench_input: BenchInput) -> PreparedCase:
    """The case, loaded once per worker while the jobs stay on it (they come case by case)."""
    cached = _worker.get("case")
    if not isinstance(cached, PreparedCase) or _worker.get("input") != bench_input:
        if isinstance(cached, PreparedCase):
            release(cached.input_path)
        cached = _worker["case"] = prepare_case(bench_input)
        _worker["input"] = bench_input
    return cached


def _job(program: Path, bench_input: BenchInput, settings: ClassSettings, cache: Path) -> tuple[CaseEntry, str]:
    return judge_entry(program, _case(bench_input), settings, cache), str(_worker["device"])


# -- in the parent ----------------------------------------------------------------------------------
Job = tuple[str, int]  # (submission, index of the input)


def _run_jobs(pool: ProcessPoolExecutor, jobs: list[Job], programs: dict[str, Path], inputs: Sequence[BenchInput],
              settings: ClassSettings, caches: Path, on_done) -> None:
    """Run (submission, input index) jobs on the workers; `on_done` hears each entry as it comes back."""
    pending: dict[Future, Job] = {pool.submit(_job, programs[name], inputs[i], settings, cache_of(caches, name)):
                                  (name, i) for name, i in jobs}
    while pending:
        done, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in done:
            name, i = pending.pop(future)
            try:
                entry, device = future.result()
            except SandboxUnavailable:
                raise
            except Exception as exc:  # noqa: BLE001 - a worker that died on one case: that entry's error
                entry, device = CaseEntry(JUDGE_ERROR, failure_text(exc)), STAND_IN
            on_done(name, inputs[i].label, entry, device)


def _device_of(row: SubmissionRow) -> None:
    """The row's GPU kind: the one that ran most of its cases (first seen among equals); where they ran
    on several, its note says which and how many."""
    counts = Counter(e.device for e in row.entries.values() if e.device)
    if not counts:
        return
    row.gpu = counts.most_common(1)[0][0]
    row.gpu_note = "" if len(counts) == 1 else (
        "cases ran on " + ", ".join(f"{kind} ({n})" for kind, n in counts.most_common())
        + f": ranked with {row.gpu}, the kind that ran most")


def judge_class_spread(submissions: Sequence[Submission], inputs: Sequence[BenchInput], settings: ClassSettings,
                       devices: list[Device], progress: ProgressFactory = no_progress,
                       listener: ClassListener | None = None, metadata: dict | None = None,
                       checkpoint: Checkpoint | None = None) -> Scoreboard:
    """Build every submission here, then judge every case of every one on the devices' workers; rank,
    rerun the top rows there too, rank again. Ctrl-C keeps what was judged. `checkpoint` gets the board
    after the builds and after each case judged (to save it as it grows)."""
    listen = listener or (lambda *a: None)
    board = new_board(inputs, settings, metadata, confinement(settings))
    board.settings["workers"] = [d.label for d in devices]
    board.settings["cpu_pinning"] = pinning(settings)
    rows: dict[str, SubmissionRow] = {}
    programs: dict[str, Path] = {}

    def finished(name: str, label: str, entry: CaseEntry, device: str) -> None:
        entry.device = device
        rows[name].entries[label] = entry
        _device_of(rows[name])
        listen(name, label, entry.verdict)
        if checkpoint is not None:
            checkpoint(board)

    def rerun(name: str, label: str, entry: CaseEntry, device: str) -> None:
        if label in rows[name].entries and rows[name].entries[label].passed and not add_run(rows[name], label, entry):
            listen(name, label, f"rerun {entry.verdict}")

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    original = _affinity()
    parent_cores, worker_cores = core_plan(len(devices), sorted(original))
    board.settings["cpu_cores"] = {"parent (builds, inputs, checks)": parent_cores,
                                   **{d.label: c for d, c in zip(devices, worker_cores)}}
    for device, cores in zip(devices, worker_cores):
        queue.put((device, cores))
    _pin(parent_cores)
    caches = cuda_caches()
    tmp = Path(tempfile.mkdtemp(prefix="attnbench-class-"))
    try:
        first = settings.first_inputs(inputs)
        record_seeds(board, "first", first)
        for bench_input in inputs:  # suite files generated once, here; the workers read them (or draw fresh ones)
            if not settings.fresh_inputs:
                prepare_case(bench_input, progress)
        for submission in submissions:
            rows[submission.name], program = build_row(submission, settings, tmp, None, listen)  # type: ignore[arg-type]
            if program is not None:
                programs[submission.name] = program
                if inputs:  # here, before the spread: its JIT cache is sealed before any judged run
                    add_note(rows[submission.name], warm_up_entry(program, inputs[0].shape, inputs[0].label,
                                                                  settings, cache_of(caches, submission.name)))
        board.rows = list(rows.values())
        if checkpoint is not None:
            checkpoint(board)
        with ProcessPoolExecutor(len(devices), mp_context=context, initializer=_start_worker,
                                 initargs=(queue,)) as pool:
            _run_jobs(pool, [(n, i) for i in range(len(first)) for n in programs], programs, first, settings,
                      caches, finished)
            top = top_rows(rank(board), settings.rerun_top)
            for row in top:
                row.reruns = RERUN_RUNS
            for number, round_inputs in enumerate(settings.rerun_rounds(inputs) if top else [], start=2):
                record_seeds(board, f"rerun {number}", round_inputs)
                again = [(row.name, i) for i, b in enumerate(round_inputs) for row in top  # case by case
                         if row.entries.get(b.label) and row.entries[b.label].passed
                         and len(row.entries[b.label].runs_s) < number]
                _run_jobs(pool, again, programs, round_inputs, settings, caches, rerun)
    except KeyboardInterrupt:
        board.interrupted = True
    finally:
        _pin(sorted(original))
        remove_tree(caches)
        remove_tree(tmp)
    board.rows = list(rows.values())
    return rank(board)
