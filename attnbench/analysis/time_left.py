"""How long a class has left to judge, from its runs so far: what a TA plans the afternoon by.

Each (submission, case) job still planned is expected to take as long as that case's jobs have taken so far (a
case's time hardly depends on the submission next to the spread between cases: t30 is a thousand times t01's
work), or, for a case none has run yet, the mean of every job so far. The sum is in job-seconds; the wall clock
since the first job over the job-seconds done turns it into wall seconds, which counts what happens between
jobs (warm-ups, the judge's own work) and how many workers run jobs at once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable


@dataclass(frozen=True)
class ClassProgress:
    """Where a class stands: its phase ("builds", "first runs", "reruns"), the jobs of the phase done and in
    all, the wall seconds since the class began, and the estimated wall seconds left for every job still
    planned (None before any job has finished: nothing to estimate from). `note` says what a phase holds when
    it begins ("8 submissions, 8 at a time")."""

    phase: str
    done: int
    total: int
    elapsed_s: float
    left_s: float | None = None
    note: str = ""


@dataclass
class TimeLeft:
    """The jobs planned and the seconds of those finished, by case; `left_s` is the estimate."""

    pending: Counter = field(default_factory=Counter)  # case -> jobs planned and not finished
    seconds: dict[str, list[float]] = field(default_factory=dict)  # case -> the finished jobs' seconds

    def plan(self, cases: Iterable[str]) -> None:
        """More jobs to come, one per case named (a case named twice is two jobs)."""
        self.pending.update(cases)

    def drop(self, cases: Iterable[str]) -> None:
        """Jobs planned that will not run after all (fewer reruns than expected, say)."""
        self.pending.subtract(cases)
        self.pending = +self.pending  # no case below zero jobs

    def finish(self, case: str, seconds: float) -> None:
        """A job of this case finished, after `seconds` of its own."""
        self.seconds.setdefault(case, []).append(seconds)
        if self.pending[case] > 0:
            self.pending[case] -= 1

    def left_s(self, elapsed_s: float) -> float | None:
        """Wall seconds left for the jobs still planned, `elapsed_s` after the first job began; None before any
        job finished."""
        done = [s for times in self.seconds.values() for s in times]
        job_seconds = sum(done)
        if not done or job_seconds <= 0:
            return None
        mean = job_seconds / len(done)
        ahead = sum(n * (sum(self.seconds[case]) / len(self.seconds[case]) if case in self.seconds else mean)
                    for case, n in self.pending.items())
        return ahead * (elapsed_s / job_seconds)
