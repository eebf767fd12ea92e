"""A class spread over this host's GPUs: one worker process per GPU, one submission case at a time on each.

The submissions are built first, all at once on every core, each in its sandbox (attnbench.judge.class_builds).
Then every (submission, case)
runs on whichever worker is free, case by case (all submissions' runs of one case before the next, so
a worker loads each case's reference once), in a sandbox of its own with CUDA_VISIBLE_DEVICES naming
its GPU. Workers are processes, not threads, because the judge kills every process that appears while
a program runs (attnbench.sandbox.process): two programs in one process would kill each other's.
A case's verdict does not depend on which worker ran it: the same program, input, sandbox and check.
The workers are a `GpuPool` (spread.pool), the one pool a compare's case groups run on too; each keeps
to CPU cores of its own. Their work (`ClassCaseWork`) is also what a class on one worker runs in process
(`class_flow`). Without GPUs, ATTNBENCH_CPU_WORKERS=N stands N cpu workers in for them (the
tests use it).
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from attnbench.analysis.ranking import rank, top_rows
from attnbench.cases.inputs import BenchInput, ProgressFactory, no_progress
from attnbench.judge.class_builds import build_all, build_workers
from attnbench.judge.class_progress import ClassClock, expected_round
from attnbench.judge.classroom import (
    RERUN_RUNS,
    Checkpoint,
    ClassSettings,
    add_note,
    add_run,
    cache_of,
    confinement,
    cuda_caches,
    failure_text,
    gpu_name,
    judge_entry,
    new_board,
    pinning,
    record_seeds,
    row_of,
    stopped,
    warm_up_entry,
)
from attnbench.judge.course_judge import PreparedCase, prepare_case
from attnbench.judge.fresh_inputs import release
from attnbench.judge.phases import phase
from attnbench.judge.case_verdict import JUDGE_ERROR
from attnbench.judge.submissions import Submission
from attnbench.printable import counted
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow
from attnbench.sandbox.room import SandboxUnavailable
from attnbench.sandbox.staging import remove_tree
from attnbench.spread.devices import STAND_IN_NAME, Device, cuda_visible
from attnbench.spread.executor import Emit, Executor, Listener, Progress, quiet_listener
from attnbench.spread.pool import GpuPool


def affinity() -> set[int]:
    """The cores this process may run on."""
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def core_plan(workers: int, available: Sequence[int]) -> tuple[list[int], list[list[int]]]:
    """CPU cores for the parent (input draws, checks, warm-ups) and for each worker, disjoint where there are
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
# (submission, its program, the input, its JIT cache): the input a worker prepares, or a case prepared
# already by the process that runs the job (`here`)
Job = tuple[str, Path, "BenchInput | PreparedCase", "Path | None"]


@dataclass(frozen=True)
class ClassCaseWork:
    """A class's work on a device: one (submission, case) per job, on the worker's own cores, each case
    loaded once while the jobs stay on it (they come case by case).

    `here`: the jobs run in the process that asked (`InProcess`, one worker), on its cores and the GPUs it
    sees, on cases it prepared; the row names its GPU, so the entries do not."""

    settings: ClassSettings
    cores: dict[int, list[int]] = field(default_factory=dict)  # device index -> the cores its worker keeps to
    here: bool = False

    def open(self, device: Device, workers: int) -> tuple[dict[str, object], None]:
        if self.here:
            return {}, None
        _pin(self.cores[device.index])  # a timed run shares no core with another worker's, nor the parent's builds
        name = STAND_IN_NAME
        if not device.stand_in:
            visible = cuda_visible(device)
            os.environ["CUDA_VISIBLE_DEVICES"] = visible
            name = gpu_name(visible)
        return {"device": name}, None

    def run(self, job: Job, state: dict[str, object], emit: Emit) -> None:
        name, program, bench_input, cache = job
        emit("started", None)  # so that a worker that dies is known to have died on this case
        try:
            entry = judge_entry(program, _case(state, bench_input), self.settings, cache)
        except SandboxUnavailable as exc:
            emit("unjudgeable", str(exc))
            return None
        except Exception as exc:  # noqa: BLE001 - one bad case is that entry's error, never the class's end
            entry = CaseEntry(JUDGE_ERROR, failure_text(exc))
        if not self.here:
            entry.device = str(state["device"])
        emit("entry", entry)
        return None


def _case(state: dict[str, object], bench_input: BenchInput | PreparedCase) -> PreparedCase:
    """The case: as the job brought it, or loaded once per worker while the jobs stay on it."""
    if isinstance(bench_input, PreparedCase):
        return bench_input
    cached = state.get("case")
    if not isinstance(cached, PreparedCase) or state.get("input") != bench_input:
        if isinstance(cached, PreparedCase):
            release(cached.input_path)
        cached = state["case"] = prepare_case(bench_input)
        state["input"] = bench_input
    return cached


# -- in the parent ----------------------------------------------------------------------------------
OnEntry = Callable[[str, str, CaseEntry], None]


def judge_jobs(pool: Executor, jobs: list[Job], on_done: OnEntry, clock: ClassClock | None = None) -> None:
    """Run (submission, case) jobs; `on_done` hears each entry as it comes back (and `clock` each job's start
    and end). A job whose worker died or found no device is that entry's JUDGE ERROR."""
    if clock is not None:
        clock.new_batch()

    def hear(event: Progress) -> None:
        if event.job is None:
            return
        name, _, bench_input, _ = jobs[event.job]
        if event.what == "started" and clock is not None:
            clock.job_started(event.job)
        elif event.what == "entry":
            on_done(name, bench_input.label, event.payload)
        elif event.what == "unjudgeable":
            raise SandboxUnavailable(event.payload)
        elif event.what == "died":  # no device finished it, so none is named (the row's GPU kind ignores it)
            where = event.device.label if event.device else "its device"
            on_done(name, bench_input.label, CaseEntry(JUDGE_ERROR, failure_text(
                RuntimeError(f"the worker on {where} died ({event.payload})"))))
        elif event.what == "not_run":
            on_done(name, bench_input.label, CaseEntry(JUDGE_ERROR, str(event.payload)))
            if clock is not None:
                clock.job_dropped(bench_input.label)
        if event.what in ("entry", "died") and clock is not None:
            clock.job_ended(event.job, bench_input.label)

    pool.run(jobs, hear)


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
                       listener: Listener | None = None, metadata: dict | None = None,
                       checkpoint: Checkpoint | None = None) -> Scoreboard:
    """Build every submission here, then judge every case of every one on the devices' workers; rank,
    rerun the top rows there too, rank again. Ctrl-C keeps what was judged. `checkpoint` gets the board
    after the builds and after each case judged (to save it as it grows); `listener` hears the class's
    `Progress` events (classroom has their words)."""
    listen = listener or quiet_listener
    board = new_board(inputs, settings, metadata, confinement(settings))
    board.settings["workers"] = [d.label for d in devices]
    board.settings["cpu_pinning"] = pinning(settings)
    rows: dict[str, SubmissionRow] = {}
    programs: dict[str, Path] = {}

    def finished(name: str, label: str, entry: CaseEntry) -> None:
        rows[name].entries[label] = entry
        _device_of(rows[name])
        listen(Progress("case", payload=(name, label, entry)))
        if checkpoint is not None:
            checkpoint(board)

    def rerun(name: str, label: str, entry: CaseEntry) -> None:
        if label in rows[name].entries and rows[name].entries[label].passed:
            add_run(rows[name], label, entry)
            listen(Progress("rerun", payload=(name, label, entry)))

    original = affinity()
    parent_cores, worker_cores = core_plan(len(devices), sorted(original))
    board.settings["cpu_cores"] = {"builds (before any run)": sorted(original), "parent (inputs, checks)": parent_cores,
                                   **{d.label: c for d, c in zip(devices, worker_cores)}}
    work = ClassCaseWork(settings, {d.index: c for d, c in zip(devices, worker_cores)})
    caches = cuda_caches()
    tmp = Path(tempfile.mkdtemp(prefix="attnbench-class-"))
    clock = ClassClock(listen)
    try:
        first = settings.first_inputs(inputs)
        record_seeds(board, "first", first)
        # every build first, on every core (no timed run yet: class_builds says why not beside them); then the
        # parent keeps to its own cores
        clock.begin("builds", len(submissions), f"{counted(len(submissions), 'submission')}, "
                    f"{build_workers(sorted(original), len(submissions))} at a time")
        builds = build_all(submissions, tmp, settings, sorted(original), clock.step)
        _pin(parent_cores)
        for bench_input in inputs:  # suite files generated once, here; the workers read them (or draw fresh ones)
            if not settings.fresh_inputs:
                prepare_case(bench_input, progress)
        for built in builds:
            submission, program = built.submission, built.program
            rows[submission.name] = row_of(built, None, listen)
            if program is not None:
                programs[submission.name] = program
                if inputs:  # here, before the spread: its JIT cache is sealed before any judged run
                    add_note(rows[submission.name], warm_up_entry(program, inputs[0].shape, inputs[0].label,
                                                                  settings, cache_of(caches, submission.name)))
        board.rows = list(rows.values())
        if checkpoint is not None:
            checkpoint(board)
        jobs = [(n, programs[n], b, cache_of(caches, n)) for b in first for n in programs]
        expected = expected_round([b.label for b in first], len(programs), settings.rerun_top)
        clock.expect([b.label for _, _, b, _ in jobs] + expected * (RERUN_RUNS - 1))
        clock.begin("first runs", len(jobs), f"{counted(len(programs), 'submission')} x {counted(len(first), 'case')}, "
                    f"{len(devices)} at a time")
        with GpuPool(devices, work) as pool:
            with phase("runs"):  # the workers' runs, with their inputs and checks: what this process waits for
                judge_jobs(pool, jobs, finished, clock)
            top = top_rows(rank(board), settings.rerun_top)
            for row in top:
                row.reruns = RERUN_RUNS
            rounds = settings.rerun_rounds(inputs) if top else []
            clock.instead(expected * (RERUN_RUNS - 1 - len(rounds)), [])
            for number, round_inputs in enumerate(rounds, start=2):
                record_seeds(board, f"rerun {number}", round_inputs)
                for row in top:  # warmed up again right before the round, as before the first (class_flow.rerun_rows)
                    if inputs:
                        note = warm_up_entry(programs[row.name], inputs[0].shape, inputs[0].label, settings,
                                             cache_of(caches, row.name))
                        if note and note not in row.build_message:
                            add_note(row, note)
                again = [(row.name, programs[row.name], b, cache_of(caches, row.name))
                         for b in round_inputs for row in top  # case by case
                         if row.entries.get(b.label) and row.entries[b.label].passed
                         and len(row.entries[b.label].runs_s) < number]
                clock.instead(expected, [b.label for _, _, b, _ in again])
                clock.begin(f"reruns, round {number} of {RERUN_RUNS}", len(again), f"the top {len(top)} submissions")
                with phase("runs"):
                    judge_jobs(pool, again, rerun, clock)
    except KeyboardInterrupt:
        board.interrupted = True
    except Exception as exc:  # noqa: BLE001 - the judge's own failure (its disk, say): the board, seeds and all, is kept
        stopped(board, exc)
    finally:
        _pin(sorted(original))
        remove_tree(caches)
        remove_tree(tmp)
    board.rows = list(rows.values())
    return rank(board)
