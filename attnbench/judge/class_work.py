"""A class's work, whatever executor carries it: one (submission, case) per job, judged in a sandbox of its
own (`classroom.judge_entry`), its entry sent back as an event. The one class flow (`class_flow`) hands its
jobs to an executor of the one seam (`spread.executor.Executor`, chosen in `class_executors`): in this
process, a pool of worker processes (one per GPU, or ATTNBENCH_CPU_WORKERS=N cpu workers standing in for
them: the tests use it) or Slurm jobs. Workers are processes, not threads, because the judge kills every
process that appears while a program runs (attnbench.sandbox.process): two programs in one process would
kill each other's. A case's verdict does not depend on which worker ran it: the same program, input,
sandbox and check. A pool's workers each keep to CPU cores of their own (`core_plan`).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from attnbench.cases.inputs import BenchInput
from attnbench.judge.build_worker import SandboxMissing  # a case's job says it as a build's does
from attnbench.judge.class_progress import ClassClock
from attnbench.judge.classroom import (
    ClassSettings,
    WarmedUp,
    diagnosed,
    failure_text,
    gpu_name,
    judge_entry,
    warm_up_entry,
)
from attnbench.judge.course_judge import PreparedCase, prepare_case
from attnbench.judge.fresh_inputs import release
from attnbench.judge.case_verdict import JUDGE_ERROR
from attnbench.judge.diagnose import DIAGNOSED
from attnbench.printable import printable
from attnbench.results.scoreboard import CaseEntry, SubmissionRow
from attnbench.sandbox.room import Sandbox, SandboxUnavailable
from attnbench.sandbox.staging import reborn_program
from attnbench.spread.devices import STAND_IN_NAME, Device, cuda_visible
from attnbench.spread.executor import Emit, Executor, ExecutorEvent, JobDied, JobNotRun, JobTold


def affinity() -> set[int]:
    """The cores this process may run on."""
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def core_plan(workers: int, available: Sequence[int]) -> tuple[list[int], list[list[int]]]:
    """CPU cores for the parent (input draws, checks) and for each worker, disjoint where there are
    enough: the parent keeps a share like a worker's, the workers split the rest evenly. With fewer cores
    than workers + 1, workers share cores round-robin (and the parent keeps the first)."""
    cores = sorted(available)
    if len(cores) < workers + 1:
        return cores[:1], [[cores[i % len(cores)]] for i in range(workers)]
    share = len(cores) // (workers + 1)
    parent, rest = cores[:share], cores[share:]
    per = len(rest) // workers
    return parent, [rest[i * per:(i + 1) * per] if i < workers - 1 else rest[i * per:] for i in range(workers)]


def pin(cores: Sequence[int]) -> None:
    try:
        os.sched_setaffinity(0, set(cores))
    except (AttributeError, OSError):  # no affinity here (not Linux), or cores the cgroup forbids: unpinned
        pass


# -- what a class's job tells, from its worker (plain data: they cross to the parent as they are) ----
@dataclass(frozen=True)
class RunStarted:
    """The job began: a worker that dies from now on died on this case."""


@dataclass(frozen=True)
class RowWarmedUp:
    """The row's warm-up ran on this worker, right before its runs of the round."""

    warm_up: WarmedUp


@dataclass(frozen=True)
class EntryMade:
    """The case judged: its entry, naming the device that ran it."""

    entry: CaseEntry


@dataclass(frozen=True)
class InputNotDrawn:
    """The worker could not make the case's input (its disk, say): no run's fault."""

    why: str


@dataclass(frozen=True)
class Diagnosed:
    """--diagnose's note on the case: the tool's word, or why it did not run."""

    note: str


# -- in a worker ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CaseJob:
    """One submission's run of one case. `case`: the input, which the worker prepares, or a case prepared already
    by the process that runs the job (an executor that runs jobs here). `warm_up`: the input whose shape the
    submission is warmed up on right before this run (its round's first job where a row's jobs run back to back
    on one worker: `ClassCaseWork._warm_up`, after making `round_cases`, the row's cases of the round), or None.
    `diagnose`: the job runs the case under compute-sanitizer instead of judging it (--diagnose, once per
    submission: the class flow decides which)."""

    submission: str
    program: Path
    case: BenchInput | PreparedCase
    cache: Path | None
    warm_up: BenchInput | None = None
    diagnose: bool = False
    round_cases: tuple[BenchInput | PreparedCase, ...] = ()  # with warm_up: the row's cases of the round
    more_of_row: bool = False  # the row's next job of the round follows on this worker: its room is opened ahead
    filler: bool = False  # run as any job, its entry thrown away: a rerun round's case the row does not rerun


@dataclass(frozen=True)
class ClassCaseWork:
    """A class's work on a device: one (submission, case) per job, each case of a round loaded once per worker
    (`_case`); a row's first job of a round warms it up here first; each entry names the device that ran it.

    `cores`: a pool's workers keep to their own (device index -> cores); none: the cores the process has.
    `own_gpu`: a pool's worker, which makes its device the one GPU its runs see; otherwise the runs see the
    GPUs the process was given (this process's, or those Slurm gave a node)."""

    settings: ClassSettings
    cores: dict[int, list[int]] = field(default_factory=dict)
    own_gpu: bool = False

    def open(self, device: Device, workers: int) -> tuple[dict[str, object], None]:
        if self.cores:
            pin(self.cores[device.index])  # a timed run shares no core with another worker's, nor the parent's
        if device.stand_in:
            name = STAND_IN_NAME
        elif self.own_gpu:
            visible = cuda_visible(device)
            os.environ["CUDA_VISIBLE_DEVICES"] = visible
            name = gpu_name(visible)
        else:
            name = gpu_name()
        return {"device": name}, None

    def close(self, state: dict[str, object]) -> None:
        _close_room_ahead(state)  # a row's next room opened ahead whose run never came (Ctrl-C between two jobs)

    def run(self, job: CaseJob, state: dict[str, object], emit: Emit) -> None:
        room = _room_ahead(state, job)
        try:
            emit(RunStarted())  # so that a worker that dies is known to have died on this case
            self._judged(job, state, emit, room)
        except BaseException:  # Ctrl-C, say: the room opened for the row's next run is no run's
            _close_room_ahead(state)
            raise
        return None

    def _judged(self, job: CaseJob, state: dict[str, object], emit: Emit, room: Sandbox | None) -> None:
        try:
            if job.diagnose:
                emit(Diagnosed(diagnosed(job.program, _case(state, job.case), self.settings)))
                return
            if job.warm_up is not None:  # the row's first job of the round, on this worker: its warm-up, right before
                self._warm_up(job, state, emit)  # its runs, between two renewals of its program
            try:
                case = _case(state, job.case)
            except Exception as exc:  # noqa: BLE001 - the judge could not make the input (its disk, say): no run's fault
                if room is not None:
                    room.close()
                emit(InputNotDrawn(failure_text(exc)))
                return
            entry, ahead = judge_entry(job.program, case, self.settings, job.cache, room, job.more_of_row)
            if ahead is not None:
                state[ROOM_AHEAD] = (job.program, job.cache, ahead)
        except SandboxUnavailable as exc:
            emit(SandboxMissing(str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - one bad case is that entry's error, never the class's end
            if job.diagnose:
                emit(Diagnosed(f"--diagnose could not run: {failure_text(exc)}"))
                return
            entry = CaseEntry(JUDGE_ERROR, failure_text(exc))
        entry.device = str(state["device"])
        emit(EntryMade(entry))

    def _warm_up(self, job: CaseJob, state: dict[str, object], emit: Emit) -> None:
        """The row's inputs of the round made on this worker, those not made yet (a run whose input was made
        between its warm-up and it knew that its row came first to this worker in the round, which the first row
        by name always did in the first round and not in a rerun round that took it later), then its warm-up
        (when it has a cache folder) between two renewals of its sealed program (staging.reborn_program: a file's
        birth time cannot be set): one before, so that no warm-up meets a program born at the build or a round
        ago (a warm-up marked its cache "rerun" by that age), and one after, so that no run meets one born before
        a warm-up that a later round may skip (a row whose cache is empty)."""
        assert job.warm_up is not None
        for case in job.round_cases:
            try:
                _case(state, case)
            except Exception:  # noqa: BLE001 - its own job makes it again and says why it could not (InputNotDrawn)
                break
        reborn_program(job.program)
        if job.cache is not None:
            emit(RowWarmedUp(warm_up_entry(job.program, job.warm_up.shape, job.warm_up.label, self.settings,
                                           job.cache)))
        reborn_program(job.program)


ROOM_AHEAD = "room ahead"  # the worker's state: (program, cache, room) for its row's next run (judge_entry's open_next)


def _room_ahead(state: dict[str, object], job: CaseJob) -> Sandbox | None:
    """The room opened for this job by the row's run before it, where this job is that next run (its program and
    cache, judged, no warm-up between); any other is closed, and this job opens its own."""
    kept = state.pop(ROOM_AHEAD, None)
    if kept is None:
        return None
    assert isinstance(kept, tuple)
    program, cache, room = kept
    if job.diagnose or job.warm_up is not None or (program, cache) != (job.program, job.cache):
        room.close()
        return None
    return room


def _close_room_ahead(state: dict[str, object]) -> None:
    kept = state.pop(ROOM_AHEAD, None)
    if isinstance(kept, tuple):
        kept[2].close()


def _case(state: dict[str, object], bench_input: BenchInput | PreparedCase) -> PreparedCase:
    """The case: as the job brought it, or loaded once per worker and round. A worker runs a row's jobs of a round
    back to back, so it meets each case of the round once per row it takes: it keeps each label's latest case
    (one round's cases at most), releasing a label's earlier one (an earlier round's) when a new one comes."""
    if isinstance(bench_input, PreparedCase):
        return bench_input
    kept = state.setdefault("cases", {})
    assert isinstance(kept, dict)
    held = kept.get(bench_input.label)
    if held is not None and held[0] == bench_input:
        return held[1]
    if held is not None:
        release(held[1].input_path)
    case = prepare_case(bench_input)
    kept[bench_input.label] = (bench_input, case)
    return case


# -- in the parent ----------------------------------------------------------------------------------
OnEntry = Callable[[str, str, CaseEntry], None]


def judge_jobs(pool: Executor, jobs: list[CaseJob], on_done: OnEntry, on_warm_up: Callable[[str, WarmedUp], None],
               clock: ClassClock | None = None, on_not_drawn: Callable[[str, str], None] | None = None,
               on_filler: OnEntry | None = None) -> None:
    """Run (submission, case) jobs; `on_done` hears each entry as it comes back, `on_warm_up` a warm-up run for
    its row (and `clock` each job's start and end). A job whose worker died or found no device is that entry's
    JUDGE ERROR; so is one whose input the worker could not make, unless `on_not_drawn` (a rerun round's) hears
    it: (submission, why). A filler's entry goes to `on_filler` alone (its run is the program's time, its
    verdict nothing of the row's)."""
    if clock is not None:
        clock.new_batch()

    def hear(event: ExecutorEvent) -> None:
        if not isinstance(event, (JobTold, JobDied, JobNotRun)):
            return
        name, label = jobs[event.job].submission, jobs[event.job].case.label
        if jobs[event.job].filler:  # its run only keeps the row's order of runs: nothing of it is the row's
            match event:
                case JobTold(event=RunStarted()) if clock is not None:
                    clock.job_started(event.job)
                case JobTold(event=RowWarmedUp(warm_up=warm_up)):
                    on_warm_up(name, warm_up)
                case JobTold(event=SandboxMissing(why=why)):
                    raise SandboxUnavailable(why)
                case JobTold(event=EntryMade(entry=entry)):
                    if on_filler is not None:
                        on_filler(name, label, entry)
                    if clock is not None:
                        clock.job_ended(event.job, label)
                case JobTold(event=InputNotDrawn()) | JobDied() if clock is not None:
                    clock.job_ended(event.job, label)
                case JobNotRun() if clock is not None:
                    clock.job_dropped(label)
            return
        match event:
            case JobTold(event=RowWarmedUp(warm_up=warm_up)):
                on_warm_up(name, warm_up)
            case JobTold(event=RunStarted()) if clock is not None:
                clock.job_started(event.job)
            case JobTold(event=EntryMade(entry=entry)):
                on_done(name, label, entry)
            case JobTold(event=SandboxMissing(why=why)):
                raise SandboxUnavailable(why)
            case JobDied(device=device, how=how):  # no device finished it: none named (the row's GPU kind ignores it)
                where = device.label if device else "its device"
                on_done(name, label, CaseEntry(JUDGE_ERROR, failure_text(
                    RuntimeError(f"the worker on {where} died ({how})"))))
            case JobTold(event=InputNotDrawn(why=why)) if on_not_drawn is not None:
                on_not_drawn(name, why)
            case JobTold(event=InputNotDrawn(why=why)):
                on_done(name, label, CaseEntry(JUDGE_ERROR, why))
            case JobNotRun(why=why):
                on_done(name, label, CaseEntry(JUDGE_ERROR, why))
                if clock is not None:
                    clock.job_dropped(label)
        match event:
            case JobTold(event=EntryMade() | InputNotDrawn()) | JobDied() if clock is not None:
                clock.job_ended(event.job, label)

    pool.run(jobs, hear)


def diagnose_jobs(pool: Executor, jobs: list[CaseJob], on_diagnosis: OnEntry) -> None:
    """Run --diagnose jobs (`CaseJob.diagnose`); `on_diagnosis` hears each one's note for its row's case: the
    tool's word, or why it did not run."""

    def hear(event: ExecutorEvent) -> None:
        match event:
            case JobTold(job=i, event=Diagnosed(note=note)):
                on_diagnosis(jobs[i].submission, jobs[i].case.label, note)
            case JobTold(event=SandboxMissing(why=why)):
                raise SandboxUnavailable(why)
            case JobDied(job=i, how=why) | JobNotRun(job=i, why=why):
                on_diagnosis(jobs[i].submission, jobs[i].case.label, f"--diagnose could not run: {printable(why)}")

    pool.run(jobs, hear)


def diagnosis_jobs(rows: Sequence[SubmissionRow], programs: dict[str, Path],
                    cases: Sequence[BenchInput | PreparedCase]) -> list[CaseJob]:
    """--diagnose's jobs after the first runs: each row's first failed case that a memory or launch error
    explains (`to_diagnose`), on the input it failed on."""
    by_label = {case.label: case for case in cases}
    chosen = [(row.name, to_diagnose(row, list(by_label))) for row in rows]
    return [CaseJob(name, programs[name], by_label[label], None, diagnose=True) for name, label in chosen if label]


def to_diagnose(row: SubmissionRow, labels: Sequence[str]) -> str | None:
    """The one case of the row --diagnose runs again: its first failed one (in `labels`' order) whose verdict
    a memory or launch error explains, or None. Decided once per submission by the class flow, never by the
    workers (each of which would diagnose a submission again)."""
    return next((label for label in labels if label in row.entries and row.entries[label].verdict in DIAGNOSED),
                None)


def device_of(row: SubmissionRow) -> None:
    """The row's GPU kind: the one that ran most of its cases (first seen among equals); where they ran
    on several, its note says which and how many."""
    counts = Counter(e.device for e in row.entries.values() if e.device)
    if not counts:
        return
    row.gpu = counts.most_common(1)[0][0]
    row.gpu_note = "" if len(counts) == 1 else (
        "cases ran on " + ", ".join(f"{kind} ({n})" for kind, n in counts.most_common())
        + f": ranked with {row.gpu}, the kind that ran most")
