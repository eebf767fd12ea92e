"""A class judged over a Slurm cluster through submitit: one job per submission, then one per rerun row.

Each job builds its submission in a folder of its own on the node and judges it on every case (suite
inputs are generated on the node from their seeds; a user's own input file must be on a shared file
system), and sends back only its row. Once every first job has answered, the rows are ranked, the top
ones go out again as rerun jobs (each passed case run until it has three runs), and the rows are ranked
once more. The jobs folder holds the run's record (`attnbench-class.pkl`), submitit's files and Slurm's
logs, so `resume_class(folder)` finishes a run that was interrupted or lost jobs: what came back is
kept, the rest is submitted again.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnbench.analysis.ranking import rank, top_rows
from attnbench.cases.inputs import BenchInput
from attnbench.judge.class_here import judge_submission, rerun_rows
from attnbench.judge.classroom import (
    ClassSettings,
    build_row,
    confinement,
    cuda_caches,
    gpu_name,
    new_board,
    record_seeds,
)
from attnbench.judge.course_judge import prepare_case
from attnbench.judge.submissions import Submission
from attnbench.results.scoreboard import Scoreboard, SubmissionRow
from attnbench.sandbox.room import Confinement
from attnbench.spread.executor import Listener, Progress, quiet_listener
from attnbench.spread.slurm import SlurmExecutor, SlurmOptions, load_record, save_record

CLASS_RUN_FILE = "attnbench-class.pkl"


@dataclass
class ClassRun:
    """What the jobs folder records of a class run: enough to collect or resume it."""

    submissions: list[Submission]
    inputs: list[BenchInput]
    settings: ClassSettings
    options: SlurmOptions
    metadata: dict[str, Any]
    first_ids: dict[str, str | None] = field(default_factory=dict)  # submission -> its judging job
    rerun_ids: dict[str, str | None] = field(default_factory=dict)  # submission -> its rerun job
    rows: dict[str, SubmissionRow] = field(default_factory=dict)  # the first jobs' rows, once all are back
    confined: Confinement | None = None  # how the nodes confined the programs (the first job's word)

    @property
    def folder(self) -> Path:
        assert self.options.folder is not None
        return Path(self.options.folder)

    def save(self) -> None:
        save_record(self.folder, CLASS_RUN_FILE, self)


def load_class_run(folder: str | Path) -> ClassRun:
    return load_record(folder, CLASS_RUN_FILE, ClassRun, "class")


# -- on the node -----------------------------------------------------------------------------------
def submission_job(submission: Submission, inputs: list[BenchInput], settings: ClassSettings) -> dict[str, Any]:
    """One Slurm job: build the submission and judge it on every case; its row comes back."""
    cases = [prepare_case(bench_input) for bench_input in inputs]
    caches = cuda_caches()
    try:
        with tempfile.TemporaryDirectory(prefix="attnbench-class-") as tmp:
            row, _ = judge_submission(submission, cases, settings, Path(tmp), gpu_name(), quiet_listener, caches)
    finally:
        shutil.rmtree(caches, ignore_errors=True)
    return {"row": row, "host": socket.gethostname(), "confinement": confinement(settings)}


def rerun_job(submission: Submission, inputs: list[BenchInput], settings: ClassSettings,
              row: SubmissionRow) -> dict[str, Any]:
    """A rerun job: build the submission again and run its passed cases until each has three runs."""
    with tempfile.TemporaryDirectory(prefix="attnbench-class-") as tmp:
        again, program = build_row(submission, settings, Path(tmp), gpu_name(), quiet_listener)
        if program is None:
            return {"error": f"the rerun's build failed: {again.build_message}"}
        rerun_rows([row], {row.name: program}, settings.rerun_rounds(inputs), settings, quiet_listener)
    return {"row": row, "host": socket.gethostname()}


# -- submitting and following ----------------------------------------------------------------------
def _lost_row(submission: Submission, error: str) -> SubmissionRow:
    return SubmissionRow(submission.name, str(submission.source), False, f"not judged: {error}")


def _first_pass(run: ClassRun, listener: Listener) -> None:
    by_name = {s.name: s for s in run.submissions}
    for name in by_name:
        run.first_ids.setdefault(name, None)

    def hear(event: Progress) -> None:
        if event.what == "result":
            row = event.payload["row"] if "row" in event.payload else _lost_row(by_name[event.job], event.payload["error"])
            listener(Progress("row", payload=(row, len(run.inputs))))

    jobs = {name: (submission_job, (by_name[name], run.inputs, run.settings)) for name in by_name}
    results = SlurmExecutor(run.folder, run.options, "attnbench-class", run.first_ids, run.save).run(jobs, hear)
    run.confined = next((r["confinement"] for r in results.values() if "confinement" in r), None)
    run.rows = {name: result["row"] if "row" in result else _lost_row(by_name[name], result["error"])
                for name, result in results.items()}
    run.save()


def _reruns(run: ClassRun, board: Scoreboard, listener: Listener) -> None:
    by_name = {s.name: s for s in run.submissions}
    if not run.rerun_ids:
        run.rerun_ids = {row.name: None for row in top_rows(board, run.settings.rerun_top)}

    def hear(event: Progress) -> None:
        if event.what == "result":
            listener(Progress("rerun_row", payload=(event.job, event.payload.get("error"))))

    jobs = {name: (rerun_job, (by_name[name], run.inputs, run.settings, run.rows[name])) for name in run.rerun_ids}
    results = SlurmExecutor(run.folder, run.options, "attnbench-class-rerun", run.rerun_ids, run.save).run(jobs, hear)
    for name, result in results.items():
        if "row" in result:
            run.rows[name] = result["row"]
        else:  # the first run's times stand; the note says the rerun was lost
            run.rows[name].build_message = f"rerun lost: {result['error']}"


def execute_class(run: ClassRun, listener: Listener | None = None) -> Scoreboard:
    """Submit (or resume) the run's jobs, wait, rank, rerun the top rows, rank again; `listener` hears the
    class's `Progress` events (classroom has their words)."""
    listen = listener or quiet_listener
    run.save()
    try:
        if len(run.rows) < len(run.submissions):
            _first_pass(run, listen)
        first = new_board(run.inputs, run.settings, run.metadata)
        first.rows = [run.rows[s.name] for s in run.submissions]
        _reruns(run, rank(first), listen)
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    board = new_board(run.inputs, run.settings, run.metadata, run.confined)
    record_seeds(board, "first", run.inputs)  # the reruns' are drawn on the nodes and not saved
    board.rows = [run.rows[s.name] for s in run.submissions if s.name in run.rows]
    board.settings["slurm_jobs_folder"] = str(run.folder)
    board.interrupted = interrupted
    return rank(board)


def judge_class_slurm(submissions: list[Submission], inputs: list[BenchInput], settings: ClassSettings,
                      options: SlurmOptions, listener: Listener | None = None,
                      metadata: dict | None = None) -> Scoreboard:
    """A class over Slurm: a new run in options.folder."""
    first = settings.first_inputs(inputs)  # drawn here, so every job judges the same fresh inputs
    return execute_class(ClassRun(list(submissions), first, settings, options, dict(metadata or {})), listener)


def resume_class(folder: str | Path, listener: Listener | None = None) -> Scoreboard:
    """Finish a class run from its jobs folder: what came back is kept, the rest is submitted again."""
    return execute_class(load_class_run(folder), listener)
