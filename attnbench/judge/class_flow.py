"""A class judged, written once whatever executor carries its jobs (`class_executors`: in this process, a GPU
pool, Slurm): every build (all at once: class_builds), the inputs and their references (the first round's made
beside the builds where this process makes them on a GPU: inputs_beside_builds), the first runs, the
ranks, the top rows rerun round by round, the ranks again (`attnbench.judge.classroom` has the rules). Where the
runs are on this host and it has no NVIDIA GPU, its CUDA programs are built but not run (`judge.gpu_needed`): their
rows are NOT JUDGED, said before any run, and a class of nothing else draws no input.

Each round (the first runs, then each rerun round) goes the same way on every executor: the round's inputs are
drawn (fresh ones anew each round) and their seeds saved on the scoreboard, and its (submission, case) jobs go
to the executor as one list, row by row. Every executor runs a row's jobs of a round back to back on one worker
(in process; on a pool, the worker that takes the row's first job; over Slurm, a row's jobs are one Slurm job),
the row's first job warming it up there right before its runs (its sealed JIT cache written before any of its
judged runs), so no run can tell a rerun from a first run by how long ago, or on which GPU, its cache was
written (first runs came under 3 s after theirs, reruns 7-9 s, when warm-ups ran apart). The saved `warm_up`
rule says so (WARM_UP_RULE).
The listener hears the same typed events (`results.judge_events`, `ClassProgress`) whatever ran the jobs.
Ctrl-C keeps what was judged: the scoreboard says it was interrupted."""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path
from typing import Iterator, Sequence

from attnbench.analysis.ranking import rank, top_rows
from attnbench.cases.inputs import BenchInput, ProgressFactory, no_progress
from attnbench.cases.testcase import Testcase
from attnbench.judge.class_builds import build_all, build_workers
from attnbench.judge.class_executors import Carrier, carrier_for
from attnbench.judge.class_progress import ClassClock, expected_round
from attnbench.judge.class_work import CaseJob, affinity, device_of, diagnose_jobs, diagnosis_jobs, judge_jobs
from attnbench.judge.classroom import (
    RERUN_RUNS,
    Checkpoint,
    ClassRequest,
    ClassSettings,
    WarmedUp,
    add_run,
    add_warm_up,
    confinement,
    failure_text,
    lose_round,
    new_board,
    row_of,
    stopped,
)
from attnbench.judge.course_judge import PreparedCase, drawn_ahead, prepare_case
from attnbench.cases.gpu_reference import one_gpu_context, shares_the_gpu, why_not_gpu
from attnbench.judge.fresh_inputs import record_seeds, release, round_inputs
from attnbench.judge.inputs_beside_builds import InputsBesideBuilds
from attnbench.judge.gpu_needed import not_judged_here
from attnbench.judge.phases import phase
from attnbench.printable import counted
from attnbench.results.judge_events import CaseJudged, JudgeListener, NotJudgedHere, RerunJudged, hears_nothing
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow
from attnbench.sandbox import staged_inputs
from attnbench.sandbox.owned_folders import make_owned, remove_owned, remove_stale
from attnbench.sandbox.owned_folders import release as release_folder  # its lock, once the folder is removed

WARM_UP_RULE = ("row by row on every executor: each row is warmed up (untimed, unjudged, on a throwaway input of the "
                "first case's shape, writing the CUDA cache its runs get copies of) on the worker that runs its jobs of "
                "a round, right before them, first runs and reruns alike, its sealed program copied afresh before and "
                "after the warm-up (a file's birth time cannot be set); they then run back to back there")
BUILDS_PREFIX = "attnbench-class-"  # the class's builds, locked by its judge for their life
CACHES_PREFIX = "attnbench-cuda-caches-"


def cuda_caches(within: Path | None = None) -> Path:
    """A folder for the class's CUDA JIT caches, one per submission (see Sandbox.cuda_cache), in `within`
    (default: the temporary folder): the programs' user may pass through it, not list it, and each cache's
    name is keyed by a secret only the judge reads (`cache_of`), so no program finds another's. The caller
    removes it; the next judge does, if this one is killed outright (up to 256 MiB a submission:
    attnbench.sandbox.owned_folders)."""
    remove_stale(CACHES_PREFIX, within)
    root = make_owned(CACHES_PREFIX, within)
    os.chmod(root, 0o711)
    salt = os.open(root / ".key", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(salt, secrets.token_bytes(32))
    os.close(salt)
    return root


def cache_of(caches: Path, name: str) -> Path:
    """The submission's own JIT cache folder in `caches` (made by its warm-up run)."""
    key = (caches / ".key").read_bytes()
    return caches / hmac.new(key, os.fsencode(name), "sha256").hexdigest()[:32]


def judge_class(request: ClassRequest, listener: JudgeListener = hears_nothing, checkpoint: Checkpoint | None = None,
                progress: ProgressFactory = no_progress, carrier: Carrier | None = None) -> Scoreboard:
    """Build and judge every submission on every input, rank them, rerun the top ones, rank again, on the
    request's executor (or `carrier`: a resumed Slurm run's); `listener` hears the class's events, `checkpoint`
    gets the board after the builds and after each case judged (to save it as it grows)."""
    settings = request.settings
    carrier = carrier or carrier_for(request)
    board = new_board(request.inputs, settings, request.metadata, confinement(settings))
    board.settings.update(carrier.about)
    board.settings["warm_up"] = WARM_UP_RULE
    rows: dict[str, SubmissionRow] = {}
    programs: dict[str, Path] = {}
    prepared: list[PreparedCase] = []
    caches = cuda_caches(carrier.scratch)
    remove_stale(BUILDS_PREFIX, carrier.scratch)  # a judge killed outright left its builds (owned_folders)
    tmp = make_owned(BUILDS_PREFIX, carrier.scratch)
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

    def filled(name: str, label: str, entry: CaseEntry) -> None:  # a filler's run: the program's time, no verdict
        rows[name].fillers_s += entry.program_s

    def diagnosed(name: str, label: str, note: str) -> None:
        entry = rows[name].entries[label]
        entry.message = f"{entry.message}; {note}"
        saved()

    def builds() -> bool:
        """Every build, and which programs can run here; whether there is anything for rounds to judge."""
        # every build first, on every core, before the first timed run (class_builds says why not beside them), and
        # before the inputs unless they are a GPU's beside them: a class whose every program is one that cannot run
        # here (no NVIDIA GPU) draws none
        cores = sorted(affinity())
        clock.begin("builds", len(request.submissions), f"{counted(len(request.submissions), 'submission')}, "
                    f"{build_workers(cores, len(request.submissions))} at a time")
        for built in build_all(request.submissions, tmp, settings, cores, clock.step):
            rows[built.submission.name] = row_of(built, None, listener)
            if built.program is not None:
                programs[built.submission.name] = built.program
        unrunnable = not_judged_here(programs) if carrier.on_this_host else None
        if unrunnable is not None:  # said before any run; the C programs beside them are judged as ever
            for name in unrunnable.evidence:
                rows[name].not_judged = unrunnable.reason(name)
                del programs[name]
            board.settings["not_judged_here"] = unrunnable.why
            listener(NotJudgedHere(tuple(unrunnable.evidence), unrunnable.why, len(programs)))
        saved()
        return bool(programs)  # none built, or none can run here: no input is drawn, no reference made

    def jobs(names: Sequence[str], cases: Sequence[BenchInput | PreparedCase], number: int) -> list[CaseJob]:
        """The round's jobs, row by row, each row's first job warming it up on the worker that runs the row."""
        round_jobs = []
        for name in names:
            mine = _in_the_rounds_order(rows[name], cases, number)
            round_jobs += [CaseJob(name, programs[name], case, cache_of(caches, name),
                                   request.inputs[0] if i == 0 and request.inputs else None,
                                   round_cases=tuple(c for c, _ in mine) if i == 0 else (),
                                   more_of_row=i < len(mine) - 1, filler=filler)
                           for i, (case, filler) in enumerate(mine)]
        return round_jobs

    def rounds(first: list[BenchInput], early: InputsBesideBuilds | None) -> None:
        """The inputs and references (`early`: made beside the builds), the first runs, the ranks and the rerun
        rounds of the built programs."""
        record_seeds(board, "first", first)
        clock.begin("inputs and references", len(first), f"{counted(len(first), 'case')}, "
                    + ("drawn fresh" if settings.fresh_inputs else "the suite's"))
        labels = [bench_input.label for bench_input in first]
        expected = expected_round(labels, len(programs), settings.rerun_top)
        clock.expect(labels * len(programs) + expected * (RERUN_RUNS - 1))
        if early is not None:
            with phase("inputs and references"):  # what was not ready when the builds ended
                cases = early.cases(clock.step)
        else:
            with phase("inputs and references"), one_gpu_context():  # one GPU context, let go before its runs
                cases = [_ready(bench_input, carrier.here, settings, progress, prepared, clock, drawn)
                         for bench_input, drawn in _drawn_here(first, carrier.here)]
        with carrier.executor() as executor:
            first_jobs = jobs(list(programs), cases, 1)
            clock.begin("first runs", len(first_jobs), f"{counted(len(programs), 'submission')} x "
                        f"{counted(len(cases), 'case')}")
            with phase("runs"):  # the runs, with their inputs and checks: what this process waits for
                judge_jobs(executor, first_jobs, judged, warmed, clock)
                if settings.diagnose:  # once per submission, decided here: a worker would diagnose it again
                    diagnose_jobs(executor, diagnosis_jobs([rows[name] for name in programs], programs, cases),
                                  diagnosed)
            top = top_rows(rank(board), settings.rerun_top)
            rounds = (carrier.drawn("reruns", lambda: [round_inputs(request.inputs, settings.fresh_inputs)
                                               for _ in range(RERUN_RUNS - 1)]) if top else [])
            clock.instead(expected * (RERUN_RUNS - 1 - len(rounds)), [])
            for row in top:
                row.reruns = RERUN_RUNS
            for number, round_drawn in enumerate(rounds, start=2):
                record_seeds(board, f"rerun {number}", round_drawn)
                names = [row.name for row in top]
                wanted = {c.label for row in top for c, _ in _in_the_rounds_order(row, round_drawn, number)}
                needed = [b for b in round_drawn if b.label in wanted]  # a rerun's fillers need their inputs too
                lost: dict[str, str] = {}  # the rows whose inputs the judge or a worker could not make, and why
                try:
                    with phase("inputs and references"), one_gpu_context():
                        round_cases = [_ready(b, carrier.here, settings, progress, prepared, None, drawn)
                                       for b, drawn in _drawn_here(needed, carrier.here)]
                except Exception as exc:  # noqa: BLE001 - the judge's own failure: this round is lost, not the class
                    lost = {row.name: failure_text(exc) for row in top
                            if any(_wanted(row, b.label, number) for b in needed)}
                    clock.instead(expected, [])
                else:
                    again = jobs(names, round_cases, number)
                    clock.instead(expected, [job.case.label for job in again])
                    clock.begin(f"reruns, round {number} of {RERUN_RUNS}", len(again),
                                f"the top {counted(len(top), 'submission')}")
                    with phase("runs"):
                        judge_jobs(executor, again, rerun, warmed, clock, lost.setdefault, filled)
                for name, why in lost.items():  # those rows keep the runs before this round
                    lose_round(board, [rows[name]], number, why)

    early: InputsBesideBuilds | None = None
    try:
        first = carrier.drawn("first", lambda: round_inputs(request.inputs, settings.fresh_inputs))
        if carrier.on_this_host and carrier.here and _first_inputs_beside_builds():
            early = InputsBesideBuilds(first, lambda bench_input, drawn, progress: _ready(
                bench_input, True, settings, progress, prepared, None, drawn))
        if builds():
            rounds(first, early)
    except KeyboardInterrupt:
        board.interrupted = True
    except Exception as exc:  # noqa: BLE001 - the judge's own failure (its disk, say): the board, seeds and all, is kept
        stopped(board, exc)
    finally:
        carrier.stop_jobs()  # before its builds go (a job still out would find them gone)
        if early is not None:  # nothing built, or the class stopped: its cases are released below
            try:
                early.stop()
            except KeyboardInterrupt:  # a second Ctrl-C in the wait for the case being made: clean up all the same
                board.interrupted = True
                early.stop()
        for case in prepared:  # fresh inputs are secrets: never left behind, whatever happened
            release(case.input_path)
        staged_inputs.unstage_all()
        for folder in (caches, tmp):
            remove_owned(folder)
            release_folder(folder)
        board.rows = list(rows.values())
        carrier.close(board)
    return rank(board)


def _in_the_rounds_order(row: SubmissionRow, cases: Sequence[BenchInput | PreparedCase],
                         number: int) -> list[tuple[BenchInput | PreparedCase, bool]]:
    """The row's jobs of run `number`, each with whether it is a filler: in a rerun round every case the row ran
    first, in the same order, those it does not rerun (failed, or run often enough) run all the same on the
    round's inputs, their verdicts thrown away, so that each rerun's place after the row's warm-up is its first
    run's: with a case it failed left out, the next case found its warm-up's cache 2 s younger in every rerun and
    told itself from a first run (red team 21). A row with nothing to rerun has no job."""
    if number == 1:
        return [(case, False) for case in cases]
    if not any(_wanted(row, case.label, number) for case in cases):
        return []
    return [(case, not _wanted(row, case.label, number)) for case in cases if case.label in row.entries]


def _wanted(row: SubmissionRow, label: str, number: int) -> bool:
    """Whether the row runs this case in run `number` (1: the first runs; then only passed cases, until each
    has that many runs)."""
    if number == 1:
        return True
    entry = row.entries.get(label)
    return bool(entry and entry.passed and len(entry.runs_s) < number)


def _drawn_here(inputs: Sequence[BenchInput], here: bool) -> Iterator[tuple[BenchInput, Testcase | None]]:
    """The round's inputs, each fresh one drawn ahead (drawn_ahead) where this process makes them; where the
    workers make their own, none is drawn here."""
    return drawn_ahead(inputs) if here else ((bench_input, None) for bench_input in inputs)


def _first_inputs_beside_builds() -> bool:
    """Whether the first round's inputs and references are made while the class builds (`inputs_beside_builds`):
    where the references are a GPU's that a build may share, or the CPU's (no GPU they could be made on here)."""
    return shares_the_gpu() or bool(why_not_gpu())


def _ready(bench_input: BenchInput, here: bool, settings: ClassSettings, progress: ProgressFactory,
           prepared: list[PreparedCase], clock: ClassClock | None = None,
           drawn: Testcase | None = None) -> BenchInput | PreparedCase:
    """A case as its jobs carry it: prepared here for jobs that run here, and staged (staged_inputs: bound into
    each run's box, not copied; a round's cases all staged before its first run, a label's replacing its last);
    otherwise the input, which each worker prepares (a suite file is generated here once, for the workers to read).
    `drawn`: a fresh input's values, drawn already."""
    job_case: BenchInput | PreparedCase = bench_input
    boxed = here and settings.sandbox.mode != "none"  # staged files are readable by every run's user: a box's only
    if here or not settings.fresh_inputs:
        case = prepare_case(bench_input, progress, boxed, drawn)  # a fresh input written where it is staged
        if here:
            job_case = case
            prepared.append(case)
        if boxed:
            with phase("inputs and references"):
                staged_inputs.stage(case.label, case.input_path)
    if clock is not None:
        clock.step()
    return job_case
