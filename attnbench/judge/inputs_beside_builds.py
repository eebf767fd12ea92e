"""A class's first-round cases (inputs drawn, their references made) while its builds run.

The builds run in worker processes (class_builds); this process only waits for them meanwhile. A thread of it
makes the first round's cases then (`course_judge.prepare_case`), so a class costs about the longer of its builds
and its first inputs, not their sum. The time is counted once, as the flow's own thread spends it (judge.phases
counts that thread only): builds while the builds run, and "inputs and references" for the wait, after them, for
a case not made yet. The thread runs at the lowest CPU priority (`_yield_to_the_builds`): on a machine whose cores
the builds fill (2 cores), the builds took 60% longer beside it at the same priority, and the class gained nothing.

No run is timed meanwhile: the flow takes every case (or stops the thread and waits for it) before its first run,
so the thread never shares the host, nor the GPU a reference is made on, with a timed run. Where no program can run
here (CUDA programs without a GPU: judge.gpu_needed), the flow stops it: what it made is released unused, and its
seeds are never saved (a round saves the seeds of the inputs it judges).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Iterator, Sequence

from attnbench.cases.inputs import Advance, BenchInput
from attnbench.judge.course_judge import PreparedCase, prepare_case
from attnbench.judge.fresh_inputs import release


class _Stopped(Exception):
    """The flow no longer wants the cases (raised inside a case's making, at its next step)."""


class InputsBesideBuilds:
    """The cases of `inputs`, made in order by a thread of their own from the moment this is made."""

    def __init__(self, inputs: Sequence[BenchInput]) -> None:
        self.inputs = list(inputs)
        self._stop = threading.Event()
        self._ready = threading.Condition()
        self._made: dict[int, PreparedCase | BaseException] = {}
        self._finished = False
        self._thread = threading.Thread(target=self._make_all, name="attnbench-first-inputs", daemon=True)
        self._thread.start()

    @contextmanager
    def _progress(self, description: str, total: int) -> Iterator[Advance]:
        """A progress factory whose every step asks whether to go on: a stopped thread ends within a step."""

        def advance(done: int) -> None:
            if self._stop.is_set():
                raise _Stopped

        yield advance

    def _make_all(self) -> None:
        _yield_to_the_builds()
        try:
            for number, bench_input in enumerate(self.inputs):
                if self._stop.is_set():
                    break
                try:
                    made: PreparedCase | BaseException = prepare_case(bench_input, self._progress)
                except BaseException as exc:  # noqa: BLE001 - the flow makes that case again itself and meets it there
                    made = exc
                with self._ready:
                    self._made[number] = made
                    self._ready.notify_all()
        finally:
            with self._ready:
                self._finished = True
                self._ready.notify_all()

    def take(self, bench_input: BenchInput) -> PreparedCase | None:
        """The case made of this input (one of `inputs`), waiting for it if need be; None where it could not be made
        (the caller makes it, and meets why) or was never asked for."""
        number = next((i for i, given in enumerate(self.inputs) if given is bench_input), None)
        if number is None:
            return None
        with self._ready:
            while number not in self._made and not self._finished:
                self._ready.wait()
            made = self._made.pop(number, None)
        return made if isinstance(made, PreparedCase) else None

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
