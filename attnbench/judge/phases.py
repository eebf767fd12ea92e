"""The judge's phases timed: builds, inputs and references, runs, checks, and the rest, so a class's scoreboard
says what judging cost beside the programs' own runs (attnbench.results.judge_cost).

The functions every executor's flow shares (building a row, preparing a case, judging it) say which phase they
are in (`phase`); the class's clock (`timing`) is current in this process while the class is judged and adds
up the time of each. Phases nest: a check inside a run counts as a check only. Work done in another process
(a GPU pool's worker, a Slurm job) is the time this process spent waiting for it, in the phase it waited in:
a pool's jobs are "runs", their workers' inputs and checks included; its builds' workers are "builds". So is work
done in another thread of this process: only the thread that started the clock counts, and what another thread does
is the time the clock's thread spent beside it or waiting for it, in that thread's phase.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from attnbench.results.judge_cost import PHASES, REST, JudgeCost

Clock = Callable[[], float]


class PhaseClock:
    """The seconds spent in each phase since it started, each counted once however phases nest."""

    def __init__(self, clock: Clock = time.perf_counter) -> None:
        self.clock = clock
        self.started = clock()
        self.thread = threading.get_ident()  # the one thread whose phases count (the module's opening says why)
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self._inner: list[float] = []  # per open phase: seconds its inner phases took

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if name not in self.seconds:
            raise ValueError(f"no phase named {name!r}")
        start = self.clock()
        self._inner.append(0.0)
        try:
            yield
        finally:
            elapsed = self.clock() - start
            self.seconds[name] += elapsed - self._inner.pop()
            if self._inner:
                self._inner[-1] += elapsed

    def cost(self, program_runs_s: float) -> JudgeCost:
        """The record so far: the wall time since the start, each phase, the rest, and the programs' runs."""
        wall = self.clock() - self.started
        return JudgeCost(wall, {**self.seconds, REST: max(0.0, wall - sum(self.seconds.values()))}, program_runs_s)


_current: list[PhaseClock] = []


@contextmanager
def timing(clock: Clock = time.perf_counter) -> Iterator[PhaseClock]:
    """A clock for the phases of what runs inside, current in this process meanwhile."""
    phases = PhaseClock(clock)
    _current.append(phases)
    try:
        yield phases
    finally:
        _current.remove(phases)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Count what runs inside as phase `name` on the current clock (nothing, where none is timing, or in a thread
    other than the clock's)."""
    if not _current or _current[-1].thread != threading.get_ident():
        yield
        return
    with _current[-1].phase(name):
        yield
