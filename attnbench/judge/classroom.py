"""Judging a class: every submission built, judged on the same cases, ranked, the top ones rerun.

The suite's inputs and references are prepared once and shared by every submission (each case still
runs on its own copy of the input, as the course judge does). Each submission is built in a folder of
its own, then judged case by case; its verdicts depend only on its own runs. Once every submission is
judged, the top few (and any tied with them) run each passed case twice more, their case times become
the median of three, and the ranks are made again (`attnbench.analysis.ranking` has the rule).
Ctrl-C keeps what was judged: the scoreboard says it was interrupted.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from attnbench.analysis.ranking import RANKING_RULE, rank, top_rows
from attnbench.judge.course_judge import (
    PreparedCase,
    Program,
    TimeLimits,
    judge_case,
    prepare_case,
    timeout_for,
)
from attnbench.judge.submissions import Submission, build
from attnbench.cases.inputs import BenchInput, ProgressFactory, no_progress
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow

RERUN_TOP = 3  # how many submissions of each GPU kind are rerun before ranks are final
RERUN_RUNS = 3  # each of their passed cases runs this many times in all; the median counts


@dataclass(frozen=True)
class ClassSettings:
    """How a class is judged."""

    limits: TimeLimits
    timeout_s: float | None = None
    build_timeout_s: float = 300.0
    rerun_top: int = RERUN_TOP


ClassListener = Callable[[str, str, str], None]  # (submission, case or "build", what happened)


def gpu_name() -> str:
    """The name of the GPU the programs run on (nvidia-smi's first), or the host's CPU without one."""
    smi = shutil.which("nvidia-smi")
    if smi is not None:
        try:
            names = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                   text=True, timeout=30).stdout.split("\n")
            if names and names[0].strip():
                return names[0].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return "no GPU (the host's CPU)"


def _entry(program: Program, case: PreparedCase, settings: ClassSettings) -> CaseEntry:
    limit = settings.limits.limit_for(case.label)
    judged = judge_case(program, case, limit, timeout_for(limit, settings.timeout_s))
    runs = [judged.wall_s] if judged.passed and judged.wall_s is not None else []
    return CaseEntry(judged.verdict, "" if judged.passed else judged.message, runs)


def judge_submission(submission: Submission, cases: list[PreparedCase], settings: ClassSettings, build_root: Path,
                     device: str, listener: ClassListener) -> tuple[SubmissionRow, Path | None]:
    """Build one submission under build_root and judge it on every case; its row and its program."""
    built = build(submission, build_root, settings.build_timeout_s)
    listener(submission.name, "build", "built" if built.ok else "build failed")
    row = SubmissionRow(submission.name, str(submission.source), built.ok, built.message, device, reruns=1)
    if built.program is None:
        return row, None
    program = Program(built.program)
    for case in cases:
        row.entries[case.label] = entry = _entry(program, case, settings)
        listener(submission.name, case.label, entry.verdict)
    return row, built.program


def rerun_row(row: SubmissionRow, program: Path, cases: list[PreparedCase], settings: ClassSettings,
              listener: ClassListener) -> None:
    """Run each passed case until it has RERUN_RUNS runs; a run that fails makes the case fail."""
    for case in cases:
        entry = row.entries.get(case.label)
        while entry is not None and entry.passed and len(entry.runs_s) < RERUN_RUNS:
            again = _entry(Program(program), case, settings)
            if not again.passed:
                row.entries[case.label] = again
                listener(row.name, case.label, f"rerun {again.verdict}")
                break
            entry.runs_s.extend(again.runs_s)
    row.reruns = RERUN_RUNS


def new_board(inputs: Sequence[BenchInput], settings: ClassSettings, metadata: dict | None) -> Scoreboard:
    """An empty scoreboard for these cases, its rule and settings recorded."""
    return Scoreboard([b.label for b in inputs], [], dict(metadata or {}),
                      {"ranking": RANKING_RULE, "time_limits": settings.limits.describe(),
                       "reruns": f"the top {settings.rerun_top} of each GPU kind: median of {RERUN_RUNS} runs"})


def judge_class(submissions: Sequence[Submission], inputs: Sequence[BenchInput], settings: ClassSettings,
                progress: ProgressFactory = no_progress, listener: ClassListener | None = None,
                metadata: dict | None = None) -> Scoreboard:
    """Build and judge every submission on every input, rank them, rerun the top ones, rank again."""
    listen = listener or (lambda *a: None)
    device = gpu_name()
    board = new_board(inputs, settings, metadata)
    programs: dict[str, Path] = {}
    with tempfile.TemporaryDirectory(prefix="attnbench-class-") as tmp:
        try:
            cases = [prepare_case(bench_input, progress) for bench_input in inputs]
            for submission in submissions:
                row, program = judge_submission(submission, cases, settings, Path(tmp) / "builds", device, listen)
                board.rows.append(row)
                if program is not None:
                    programs[submission.name] = program
            rank(board)
            for row in top_rows(board, settings.rerun_top):
                rerun_row(row, programs[row.name], cases, settings, listen)
        except KeyboardInterrupt:
            board.interrupted = True
    return rank(board)
