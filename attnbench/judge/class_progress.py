"""A class's progress as a TA plans by it: each phase as it begins (builds, inputs and references, first runs,
reruns), and after each job the jobs done and the time left, estimated from the runs so far
(`attnbench.analysis.time_left`). The listener hears each as a `ClassProgress` event, whatever executor runs
the jobs."""

from __future__ import annotations

import time
from typing import Callable, Iterable

from attnbench.analysis.time_left import ClassProgress, TimeLeft
from attnbench.results.judge_events import JudgeListener


class ClassClock:
    """The class's phases and jobs as they go, told to `listener`."""

    def __init__(self, listener: JudgeListener, clock: Callable[[], float] = time.monotonic) -> None:
        self.listener, self.clock = listener, clock
        self.began = clock()
        self.estimate = TimeLeft()
        self.first_job: float | None = None  # when the first job began: the estimate's wall clock starts there
        self.started: dict[int, float] = {}  # job index -> when it began, in the phase's current batch
        self.phase, self.done, self.total = "", 0, 0

    def begin(self, phase: str, total: int, note: str = "") -> None:
        """A phase begins, with `total` steps (jobs, builds, cases prepared)."""
        self.phase, self.done, self.total = phase, 0, total
        self._tell(note)

    def step(self) -> None:
        """One step of the phase done that is no job (a build, a case's input prepared)."""
        self.done += 1
        self._tell()

    def expect(self, cases: Iterable[str]) -> None:
        """Jobs to come, one per case named: the estimate counts them."""
        self.estimate.plan(cases)

    def instead(self, expected: Iterable[str], actual: Iterable[str]) -> None:
        """Jobs once expected give way to those that will run (a rerun round, once ranks say which)."""
        self.estimate.drop(expected)
        self.estimate.plan(actual)

    def job_started(self, job: int) -> None:
        now = self.clock()
        self.started[job] = now
        if self.first_job is None:
            self.first_job = now

    def job_ended(self, job: int, case: str) -> None:
        """Job `job` (of the batch running now) of this case ended, with an entry or without one."""
        now = self.clock()
        began = self.started.pop(job, now)
        if self.first_job is None:
            self.first_job = began
        self.estimate.finish(case, now - began)
        self.done += 1
        self._tell()

    def job_dropped(self, case: str) -> None:
        """A planned job that will not run (its device was lost)."""
        self.estimate.drop([case])
        self.done += 1
        self._tell()

    def new_batch(self) -> None:
        """The executor numbers the next list of jobs from 0 again."""
        self.started.clear()

    def _tell(self, note: str = "") -> None:
        now = self.clock()
        left = self.estimate.left_s(now - self.first_job) if self.first_job is not None else None
        self.listener(ClassProgress(self.phase, self.done, self.total, now - self.began, left, note))


def expected_round(cases: Iterable[str], built: int, rerun_top: int) -> list[str]:
    """The jobs a rerun round is expected to hold before ranks say which rows it reruns: every case of the top
    `rerun_top` rows (ties may add rows, failed cases take some away; the round's own list replaces it)."""
    return list(cases) * min(rerun_top, built)
