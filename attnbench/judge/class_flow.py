"""A class judged in this process, on one worker: every submission built (all at once: class_builds), then
each judged case by case, ranked, the top ones rerun (`attnbench.judge.classroom` has the rules every executor
shares). The cases run through the executor seam, `InProcess` with the work a GPU pool's workers do (`class_work.ClassCaseWork`);
a Slurm node judges its submission this way too."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

from attnbench.analysis.ranking import rank, top_rows
from attnbench.cases.inputs import BenchInput, ProgressFactory, no_progress
from attnbench.judge.class_builds import build_all, build_workers
from attnbench.judge.class_progress import ClassClock, expected_round
from attnbench.judge.class_work import ClassCaseWork, Job, OnEntry, affinity, judge_jobs
from attnbench.judge.classroom import (
    RERUN_RUNS,
    Checkpoint,
    ClassSettings,
    add_note,
    add_run,
    build_row,
    cache_of,
    confinement,
    cuda_caches,
    gpu_name,
    new_board,
    record_seeds,
    row_of,
    stopped,
    warm_up_entry,
)
from attnbench.judge.course_judge import PreparedCase, prepare_case
from attnbench.judge.fresh_inputs import release
from attnbench.judge.submissions import Submission
from attnbench.printable import counted
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow
from attnbench.sandbox.staging import remove_tree
from attnbench.spread.executor import InProcess, Listener, Progress, quiet_listener


def judge_here(settings: ClassSettings, jobs: list[Job], on_done: OnEntry, clock: ClassClock | None = None) -> None:
    """(submission, case) jobs one after another in this process, through the executor seam (`InProcess`,
    the work a pool's workers do), each case prepared already; `on_done` hears each entry, `clock` each job."""
    judge_jobs(InProcess(ClassCaseWork(settings, here=True)), jobs, on_done, clock)


def judge_submission(submission: Submission, cases: list[PreparedCase], settings: ClassSettings, build_root: Path,
                     device: str, listener: Listener, caches: Path | None = None) -> tuple[SubmissionRow, Path | None]:
    """Build one submission under build_root and judge it on every case; its row and its program."""
    row, program = build_row(submission, settings, build_root, device, listener)
    judge_row(row, program, cases, settings, listener, caches)
    return row, program


def judge_row(row: SubmissionRow, program: Path | None, cases: list[PreparedCase], settings: ClassSettings,
              listener: Listener, caches: Path | None = None, clock: ClassClock | None = None) -> None:
    """A built submission's row judged on every case, after its warm-up (nothing, for one that did not build)."""
    if program is None:
        return
    cache = cache_of(caches, row.name) if caches else None
    if cache is not None and cases:
        add_note(row, warm_up_entry(program, cases[0].shape, cases[0].label, settings, cache))

    def judged(name: str, label: str, entry: CaseEntry) -> None:
        row.entries[label] = entry
        listener(Progress("case", payload=(name, label, entry)))

    judge_here(settings, [(row.name, program, case, cache) for case in cases], judged, clock)


def rerun_rows(rows: Sequence[SubmissionRow], programs: dict[str, Path], rounds: list[list[BenchInput]],
               settings: ClassSettings, listener: Listener, caches: Path | None = None,
               clock: ClassClock | None = None, expected: Sequence[str] = ()) -> None:
    """Round by round (each on its own inputs: fresh ones are drawn anew for each), run every passed case
    of every row once more; a run that fails makes the case fail. Each case ends with RERUN_RUNS runs.

    Row by row, as the first round ran: each row is warmed up again right before its runs of the round (a
    fresh sealed cache), which then run back to back, so no run can tell a rerun from a first run by how
    long ago its warm-up wrote the cache it reads (first runs came under 3 s after theirs, reruns 7-9 s)."""
    by_name = {row.name: row for row in rows}

    def rerun(name: str, label: str, again: CaseEntry) -> None:
        add_run(by_name[name], label, again)
        listener(Progress("rerun", payload=(name, label, again)))

    def wanted(row: SubmissionRow, label: str, number: int) -> bool:
        entry = row.entries.get(label)
        return bool(entry and entry.passed and len(entry.runs_s) < number)

    for number, round_inputs in enumerate(rounds, start=2):
        needed = [b for b in round_inputs if any(wanted(row, b.label, number) for row in rows)]
        if clock is not None:  # `expected`: the jobs the round was counted at before ranks said which
            actual = [b.label for row in rows for b in round_inputs if wanted(row, b.label, number)]
            clock.instead(expected, actual)
            clock.begin(f"reruns, round {number} of {RERUN_RUNS}", len(actual), f"the top {len(rows)} submissions")
        cases: list[PreparedCase] = []
        try:
            for bench_input in needed:
                cases.append(prepare_case(bench_input))
            for row in rows:
                mine = [case for case in cases if wanted(row, case.label, number)]
                if not mine:
                    continue
                cache = cache_of(caches, row.name) if caches else None
                if cache is not None:
                    first = round_inputs[0]  # the warm-up's shape, as in the first round: the first case's
                    note = warm_up_entry(programs[row.name], first.shape, first.label, settings, cache)
                    if note and note not in row.build_message:
                        add_note(row, note)
                judge_here(settings, [(row.name, programs[row.name], case, cache) for case in mine], rerun, clock)
        finally:
            for case in cases:
                release(case.input_path)
    for row in rows:
        row.reruns = RERUN_RUNS


def judge_class(submissions: Sequence[Submission], inputs: Sequence[BenchInput], settings: ClassSettings,
                progress: ProgressFactory = no_progress, listener: Listener | None = None,
                metadata: dict | None = None, checkpoint: Checkpoint | None = None) -> Scoreboard:
    """Build and judge every submission on every input, rank them, rerun the top ones, rank again;
    `listener` hears the class's `Progress` events (classroom has their words); `checkpoint` gets the board
    after each row (to save it as it grows)."""
    listen = listener or quiet_listener
    device = gpu_name()
    board = new_board(inputs, settings, metadata, confinement(settings))
    programs: dict[str, Path] = {}
    caches = cuda_caches()
    tmp = Path(tempfile.mkdtemp(prefix="attnbench-class-"))
    cases: list[PreparedCase] = []
    clock = ClassClock(listen)
    try:
        first = settings.first_inputs(inputs)
        record_seeds(board, "first", first)
        clock.begin("inputs and references", len(first), f"{counted(len(first), 'case')}, "
                    + ("drawn fresh" if settings.fresh_inputs else "the suite's"))
        for bench_input in first:
            cases.append(prepare_case(bench_input, progress))
            clock.step()
        # every build first, on every core, before the first timed run (class_builds says why not beside them)
        cores = sorted(affinity())
        clock.begin("builds", len(submissions), f"{counted(len(submissions), 'submission')}, "
                    f"{build_workers(cores, len(submissions))} at a time")
        builds = build_all(submissions, tmp / "builds", settings, cores, clock.step)
        built = sum(b.ok for b in builds)
        expected = expected_round([case.label for case in cases], built, settings.rerun_top)
        clock.expect([case.label for case in cases] * built + expected * (RERUN_RUNS - 1))
        clock.begin("first runs", built * len(cases),
                    f"{counted(built, 'submission')} x {counted(len(cases), 'case')}, one at a time")
        for one in builds:
            row, program = row_of(one, device, listen), one.program
            judge_row(row, program, cases, settings, listen, caches, clock)
            board.rows.append(row)
            if checkpoint is not None:
                checkpoint(board)
            if program is not None:
                programs[row.name] = program
        rank(board)
        top = top_rows(board, settings.rerun_top)
        rounds = settings.rerun_rounds(inputs) if top else []
        for number, round_inputs in enumerate(rounds, start=2):
            record_seeds(board, f"rerun {number}", round_inputs)
        clock.instead(expected * (RERUN_RUNS - 1 - len(rounds)), [])
        rerun_rows(top, programs, rounds, settings, listen, caches, clock, expected)
    except KeyboardInterrupt:
        board.interrupted = True
    except Exception as exc:  # noqa: BLE001 - the judge's own failure (its disk, say): the board, seeds and all, is kept
        stopped(board, exc)
    finally:
        for case in cases:  # fresh inputs are secrets: never left behind, whatever happened
            release(case.input_path)
        remove_tree(caches)
        remove_tree(tmp)
    return rank(board)
