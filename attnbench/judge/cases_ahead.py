"""A round's cases (inputs drawn, their references made) made ahead by a thread of their own, beside the flow.

The first round's are made while the class's builds run: those run in worker processes (class_builds), and this
process only waits for them meanwhile, so a class costs about the longer of its builds and its first inputs, not
their sum. A rerun round's are made two at a time: the thread and the flow's own thread each take the next case no
one has begun (a case's file written and its hash taken are one thread's work each). The time is counted once, as
the flow's own thread spends it (judge.phases counts that thread only): builds while the builds run, and "inputs and
references" for the flow's own making and its wait for a case the thread is making.

Beside the builds the thread runs at the lowest CPU priority (`_yield_to_the_builds`): on a machine whose cores the
builds fill (2 cores), the builds took 60% longer beside it at the same priority, and the class gained nothing. Once
the flow takes the cases (the builds over) it makes those not begun yet itself, and the thread gets its priority
back where the judge may give it (root): at nice 19 on a machine others were using too, it made almost nothing.

No run is timed meanwhile: the flow takes every case of a round (or stops the thread and waits for it) before the
round's first run, so the thread never shares the host, nor the GPU a reference is made on, with a timed run. Where
no program can run here (CUDA programs without a GPU: judge.gpu_needed), the flow stops it after the builds: what it
made is released unused, and its seeds are never saved (a round saves the seeds of the inputs it judges).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Iterator, Sequence

from attnbench.cases.inputs import Advance, BenchInput, ProgressFactory, no_progress
from attnbench.judge.course_judge import PreparedCase, prepare_case
from attnbench.judge.fresh_inputs import release


class _Stopped(Exception):
    """The flow no longer wants the cases (raised inside a case's making, at its next step)."""


class CasesAhead:
    """The cases of `inputs`, made in order by a thread of their own from the moment this is made (`beside_builds`:
    at the lowest priority until the flow takes them); the flow makes those not begun yet itself, beside the thread."""

    def __init__(self, inputs: Sequence[BenchInput], beside_builds: bool = False) -> None:
        self.inputs = list(inputs)
        self.beside_builds = beside_builds
        self._stop = threading.Event()
        self._ready = threading.Condition()
        self._begun: set[int] = set()  # the cases someone is making or has made
        self._made: dict[int, PreparedCase | BaseException] = {}
        self._finished = False
        self._native_id: int | None = None
        self._taken = False
        self._thread = threading.Thread(target=self._make_all, name="attnbench-cases-ahead", daemon=True)
        self._thread.start()

    @contextmanager
    def _progress(self, description: str, total: int) -> Iterator[Advance]:
        """A progress factory whose every step asks whether to go on: a stopped thread ends within a step."""

        def advance(done: int) -> None:
            if self._stop.is_set():
                raise _Stopped

        yield advance

    def _claim(self, number: int | None = None) -> int | None:
        """The next case no one has begun (or `number`, if no one has), now this caller's; None if none is left."""
        with self._ready:
            wanted = [number] if number is not None else range(len(self.inputs))
            free = next((i for i in wanted if i not in self._begun), None)
            if free is not None:
                self._begun.add(free)
            return free

    def _make_all(self) -> None:
        with self._ready:
            self._native_id = threading.get_native_id()
            if self.beside_builds and not self._taken:  # else the flow already took its first case: nothing to yield to
                _yield_to_the_builds()
        try:
            while not self._stop.is_set():
                number = self._claim()
                if number is None:
                    break
                self._keep(number, self._make(self.inputs[number], self._progress))
        finally:
            with self._ready:
                self._finished = True
                self._ready.notify_all()

    def take(self, bench_input: BenchInput, progress: ProgressFactory = no_progress) -> PreparedCase | None:
        """The case made of this input (one of `inputs`): made here, at the caller's priority, if the thread has not
        begun it; else, while the thread makes it, the next case no one has begun made here (two at a time), then
        it; None where it could not be made (the caller makes it, and meets why) or was never asked for. The thread
        is given back the caller's priority where this process may (as root): the builds it made way for are over."""
        number = next((i for i, given in enumerate(self.inputs) if given is bench_input), None)
        if number is None:
            return None
        with self._ready:
            self._taken = True  # from now on the thread keeps the flow's priority
        _same_priority_as_this_thread(self._native_id)
        if self._claim(number) is not None:
            return prepare_case(bench_input, progress)
        while (other := self._claim()) is not None and not self._has(number):
            self._keep(other, self._make(self.inputs[other], progress))
        with self._ready:
            while number not in self._made and not self._finished:
                self._ready.wait()
            made = self._made.pop(number, None)
        return made if isinstance(made, PreparedCase) else None

    def _has(self, number: int) -> bool:
        with self._ready:
            return number in self._made

    @staticmethod
    def _make(bench_input: BenchInput, progress: ProgressFactory) -> PreparedCase | BaseException:
        try:
            return prepare_case(bench_input, progress)
        except BaseException as exc:  # noqa: BLE001 - its taker makes it again and meets why
            return exc

    def _keep(self, number: int, made: PreparedCase | BaseException) -> None:
        with self._ready:
            self._made[number] = made
            self._ready.notify_all()

    def stop(self) -> None:
        """Stop making cases, wait for the thread to end, and release every case made and not taken (a fresh
        input is a secret: never left behind)."""
        self._stop.set()
        self._thread.join()
        with self._ready:
            left, self._made = list(self._made.values()), {}
        for made in left:
            if isinstance(made, PreparedCase):
                release(made.input_path)


def _yield_to_the_builds() -> None:
    """This thread (and the threads it starts, which inherit it) at nice 19: it takes only the CPU time the builds
    leave, and once they have ended (the flow waiting for its cases) all of it. Linux's nice is a thread's own."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):  # no thread priorities here: the thread runs as the builds do
        pass


def _same_priority_as_this_thread(native_id: int | None) -> None:
    """The thread `native_id` given this thread's priority back, where this process may raise one (root may)."""
    if native_id is None:
        return
    try:
        mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        if os.getpriority(os.PRIO_PROCESS, native_id) > mine:
            os.setpriority(os.PRIO_PROCESS, native_id, mine)
    except (AttributeError, OSError):  # not permitted (no root), or the thread has ended: it ends at nice 19
        pass
