"""A class judged, written once whatever executor carries its jobs (`class_executors`: in this process, a GPU
pool, Slurm): the inputs and their references, every build (all at once: class_builds), the first runs, the
ranks, the top rows rerun round by round, the ranks again (`attnbench.judge.classroom` has the rules).

Each round (the first runs, then each rerun round) goes the same way on every executor: the round's inputs are
drawn (fresh ones anew each round) and their seeds saved on the scoreboard, each row of the round is warmed up
(its sealed JIT cache written, before any of its judged runs), and its (submission, case) jobs go to the
executor as one list. Where a row's jobs run back to back on one worker (in process; over Slurm, a row's jobs
are one Slurm job), they go row by row, the row's first job warming it up on that worker right before its runs,
so no run can tell a rerun from a first run by how long ago its cache was written (first runs came under 3 s
after theirs, reruns 7-9 s, when warm-ups ran apart); on a pool, whose workers take any job, every row is
warmed up here first and the jobs go case by case (all rows' runs of one case before the next, so a worker
loads each case once).
The listener hears the same typed events (`results.judge_events`, `ClassProgress`) whatever ran the jobs.
Ctrl-C keeps what was judged: the scoreboard says it was interrupted."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

from attnbench.analysis.ranking import rank, top_rows
from attnbench.cases.inputs import BenchInput, ProgressFactory, no_progress
from attnbench.judge.class_builds import build_all, build_workers
from attnbench.judge.class_executors import Carrier, carrier_for
from attnbench.judge.class_progress import ClassClock, expected_round
from attnbench.judge.class_work import CaseJob, affinity, device_of, diagnose_jobs, judge_jobs
from attnbench.judge.classroom import (
    RERUN_RUNS,
    Checkpoint,
    ClassRequest,
    ClassSettings,
    WarmedUp,
    add_run,
    add_warm_up,
    cache_of,
    confinement,
    cuda_caches,
    new_board,
    record_seeds,
    row_of,
    stopped,
    to_diagnose,
    warm_up_entry,
)
from attnbench.judge.course_judge import PreparedCase, prepare_case
from attnbench.judge.fresh_inputs import release
from attnbench.judge.phases import phase
from attnbench.printable import counted
from attnbench.results.judge_events import CaseJudged, JudgeListener, RerunJudged, hears_nothing
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow
from attnbench.sandbox.staging import remove_tree


def judge_class(request: ClassRequest, listener: JudgeListener = hears_nothing, checkpoint: Checkpoint | None = None,
                progress: ProgressFactory = no_progress, carrier: Carrier | None = None) -> Scoreboard:
    """Build and judge every submission on every input, rank them, rerun the top ones, rank again, on the
    request's executor (or `carrier`: a resumed Slurm run's); `listener` hears the class's events, `checkpoint`
    gets the board after the builds and after each case judged (to save it as it grows)."""
    settings = request.settings
    carrier = carrier or carrier_for(request)
    board = new_board(request.inputs, settings, request.metadata, confinement(settings))
    board.settings.update(carrier.about)
    rows: dict[str, SubmissionRow] = {}
    programs: dict[str, Path] = {}
    prepared: list[PreparedCase] = []
    tmp = Path(tempfile.mkdtemp(prefix="attnbench-class-", dir=carrier.scratch))
    caches = cuda_caches(carrier.scratch)
    clock = ClassClock(listener)

    def saved() -> None:
        board.rows = list(rows.values())
        if checkpoint is not None:
            checkpoint(board)

    def judged(name: str, label: str, entry: CaseEntry) -> None:
        rows[name].entries[label] = entry
        device_of(rows[name])
        listener(CaseJudged(name, label, entry))
        saved()

    def rerun(name: str, label: str, entry: CaseEntry) -> None:
        if label in rows[name].entries and rows[name].entries[label].passed:
            add_run(rows[name], label, entry)
            listener(RerunJudged(name, label, entry))

    def warmed(name: str, warm_up: WarmedUp) -> None:
        add_warm_up(rows[name], warm_up)

    def diagnosed(name: str, label: str, note: str) -> None:
        entry = rows[name].entries[label]
        entry.message = f"{entry.message}; {note}"
        saved()

    def jobs(names: Sequence[str], cases: Sequence[BenchInput | PreparedCase], number: int) -> list[CaseJob]:
        """The round's jobs: row by row, each row's first job warming it up, where the carrier runs a row's jobs
        back to back; else case by case, every row warmed up here first."""
        if not carrier.row_by_row:
            _warm_up([rows[name] for name in names], programs, request.inputs, settings, caches)
            return [CaseJob(name, programs[name], case, cache_of(caches, name)) for case in cases for name in names
                    if _wanted(rows[name], case.label, number)]
        round_jobs = []
        for name in names:
            mine = [case for case in cases if _wanted(rows[name], case.label, number)]
            round_jobs += [CaseJob(name, programs[name], case, cache_of(caches, name),
                                   request.inputs[0] if i == 0 and request.inputs else None)
                           for i, case in enumerate(mine)]
        return round_jobs

    try:
        first = carrier.drawn("first", lambda: settings.first_inputs(request.inputs))
        record_seeds(board, "first", first)
        clock.begin("inputs and references", len(first), f"{counted(len(first), 'case')}, "
                    + ("drawn fresh" if settings.fresh_inputs else "the suite's"))
        cases = [_ready(bench_input, carrier.here, settings, progress, prepared, clock) for bench_input in first]
        # every build first, on every core, before the first timed run (class_builds says why not beside them)
        cores = sorted(affinity())
        clock.begin("builds", len(request.submissions), f"{counted(len(request.submissions), 'submission')}, "
                    f"{build_workers(cores, len(request.submissions))} at a time")
        for built in build_all(request.submissions, tmp, settings, cores, clock.step):
            rows[built.submission.name] = row_of(built, None, listener)
            if built.program is not None:
                programs[built.submission.name] = built.program
        saved()
        labels = [case.label for case in cases]
        expected = expected_round(labels, len(programs), settings.rerun_top)
        clock.expect(labels * len(programs) + expected * (RERUN_RUNS - 1))
        with carrier.executor() as executor:
            first_jobs = jobs(list(programs), cases, 1)
            clock.begin("first runs", len(first_jobs), f"{counted(len(programs), 'submission')} x "
                        f"{counted(len(cases), 'case')}")
            with phase("runs"):  # the runs, with their inputs and checks: what this process waits for
                judge_jobs(executor, first_jobs, judged, warmed, clock)
                if settings.diagnose:  # once per submission, decided here: a worker would diagnose it again
                    diagnose_jobs(executor, _diagnosis_jobs([rows[name] for name in programs], programs, cases),
                                  diagnosed)
            top = top_rows(rank(board), settings.rerun_top)
            rounds = carrier.drawn("reruns", lambda: settings.rerun_rounds(request.inputs)) if top else []
            clock.instead(expected * (RERUN_RUNS - 1 - len(rounds)), [])
            for row in top:
                row.reruns = RERUN_RUNS
            for number, round_inputs in enumerate(rounds, start=2):
                record_seeds(board, f"rerun {number}", round_inputs)
                names = [row.name for row in top]
                needed = [b for b in round_inputs if any(_wanted(row, b.label, number) for row in top)]
                round_cases = [_ready(b, carrier.here, settings, progress, prepared) for b in needed]
                again = jobs(names, round_cases, number)
                clock.instead(expected, [job.case.label for job in again])
                clock.begin(f"reruns, round {number} of {RERUN_RUNS}", len(again), f"the top {len(top)} submissions")
                with phase("runs"):
                    judge_jobs(executor, again, rerun, warmed, clock)
    except KeyboardInterrupt:
        board.interrupted = True
    except Exception as exc:  # noqa: BLE001 - the judge's own failure (its disk, say): the board, seeds and all, is kept
        stopped(board, exc)
    finally:
        for case in prepared:  # fresh inputs are secrets: never left behind, whatever happened
            release(case.input_path)
        remove_tree(caches)
        remove_tree(tmp)
        board.rows = list(rows.values())
        carrier.close(board)
    return rank(board)


def _wanted(row: SubmissionRow, label: str, number: int) -> bool:
    """Whether the row runs this case in run `number` (1: the first runs; then only passed cases, until each
    has that many runs)."""
    if number == 1:
        return True
    entry = row.entries.get(label)
    return bool(entry and entry.passed and len(entry.runs_s) < number)


def _ready(bench_input: BenchInput, here: bool, settings: ClassSettings, progress: ProgressFactory,
           prepared: list[PreparedCase], clock: ClassClock | None = None) -> BenchInput | PreparedCase:
    """A case as its jobs carry it: prepared here for jobs that run here; otherwise the input, which each
    worker prepares (a suite file is generated here once, for the workers to read)."""
    job_case: BenchInput | PreparedCase = bench_input
    if here:
        job_case = prepare_case(bench_input, progress)
        prepared.append(job_case)
    elif not settings.fresh_inputs:
        prepare_case(bench_input, progress)
    if clock is not None:
        clock.step()
    return job_case


def _warm_up(rows: Sequence[SubmissionRow], programs: dict[str, Path], inputs: Sequence[BenchInput],
             settings: ClassSettings, caches: Path) -> None:
    """Each row's warm-up here before its round (a fresh sealed JIT cache), on the shape of the class's first
    case."""
    if not inputs:
        return
    for row in rows:
        add_warm_up(row, warm_up_entry(programs[row.name], inputs[0].shape, inputs[0].label, settings,
                                       cache_of(caches, row.name)))


def _diagnosis_jobs(rows: Sequence[SubmissionRow], programs: dict[str, Path],
                    cases: Sequence[BenchInput | PreparedCase]) -> list[CaseJob]:
    """--diagnose's jobs after the first runs: each row's first failed case that a memory or launch error
    explains (classroom.to_diagnose), on the input it failed on."""
    by_label = {case.label: case for case in cases}
    chosen = [(row.name, to_diagnose(row, list(by_label))) for row in rows]
    return [CaseJob(name, programs[name], by_label[label], None, diagnose=True) for name, label in chosen if label]
