"""What a judge's listener hears: one small frozen dataclass per thing that happened, the same whatever
executor ran the jobs (in process, a GPU pool, Slurm). A listener dispatches on the event's type; none
unpacks a payload by position. A class's phase and the time left is `analysis.time_left.ClassProgress`,
an event of the same kind (it sits beside the estimate that makes it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from attnbench.results.scoreboard import CaseEntry


@dataclass(frozen=True)
class ProgramCaseJudged:
    """One program's case judged (`number` counts from 1, of `cases`)."""

    number: int
    cases: int
    label: str
    verdict: str
    wall_s: float | None


@dataclass(frozen=True)
class SubmissionBuilt:
    """A class's submission built, or not; `not_built` says why when no build ran at all (not a submission, a
    link, HIP only) or its build failed for want of what this host lacks: a folder holding nothing was said as
    "build failed". `no_program` says why a build that ran and did not fail left nothing to judge (two
    executables and no hw4, say), which was said as "build failed"."""

    submission: str
    ok: bool
    not_built: str = ""
    no_program: str = ""


@dataclass(frozen=True)
class CaseJudged:
    """A class's case judged: a submission's first run of it."""

    submission: str
    case: str
    entry: CaseEntry


@dataclass(frozen=True)
class RerunJudged:
    """A rerun of a passed case, counted (a failed one fails the case)."""

    submission: str
    case: str
    entry: CaseEntry


@dataclass(frozen=True)
class NotJudgedHere:
    """A class's CUDA programs that will not run, said before any run: the host their runs are on has no NVIDIA
    GPU (`why`); `judged` submissions (C programs) are still run."""

    submissions: tuple[str, ...]
    why: str
    judged: int


JudgeListener = Callable[[object], None]  # hears the events above and ClassProgress


def hears_nothing(event: object) -> None:
    """A listener that hears nothing."""
