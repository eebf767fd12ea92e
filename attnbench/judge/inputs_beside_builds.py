"""A class's first round of inputs and references made while its submissions build, where the references are a
GPU's on this host: the builds take the CPU's cores, the references the GPU, and neither is a timed run, so their
overlap hides the shorter (eight real submissions on t21-t30 on an H200: builds 3.2 s, inputs and references 2.2 s,
one after the other before). Where there is no GPU the references are the CPU's and share its cores with the builds,
but neither is timed and a build leaves cores idle (its sandbox, make, the linker's waits): four C programs on
t01-t05 on a 2-core machine, builds 1.5-1.8 s and inputs and references 2.5-2.8 s one after the other, 2.2-2.4 s and
1.6-1.7 s beside. A case being made is abandoned between two blocks of its reference once the thread is told to
stop, so a Ctrl-C during the builds does not wait for a large case's reference on the CPU (t29's: minutes).

Only where the GPU is in its default compute mode (`gpu_reference.shares_the_gpu`): a build that runs something on
the GPU (a Makefile's test step) still finds it free in an exclusive mode, as it did. The inputs are made on a
thread of this process, in their own GPU context, let go before any run. No build starts until the reference's
kernel is built: its compiler is a child of this process, which a build's clean-up of what its workers left
(`reap_orphans`) could collect from under it. Nothing of the inputs' making is timed as the builds': the class's
phases count the thread that started them (`judge.phases`), so the wait for inputs not ready when the builds end is
"inputs and references", as before.
"""

from __future__ import annotations

import queue
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from attnbench.cases.gpu_reference import kernel_built, one_gpu_context
from attnbench.cases.inputs import BenchInput, ProgressFactory
from attnbench.cases.testcase import Testcase
from attnbench.judge.course_judge import PreparedCase, drawn_ahead

Ready = Callable[[BenchInput, "Testcase | None", ProgressFactory], "BenchInput | PreparedCase"]
_END = object()  # the thread's last word: every case it made is in the queue before it


class _Abandoned(BaseException):
    """The case being made when the thread was told to stop: left unfinished (its staged file goes with the
    class's `unstage_all`). Not an Exception: the GPU reference takes any Exception for a failing GPU, and would
    send every later reference of the process to the CPU."""


class InputsBesideBuilds:
    """The round's cases, each made by `ready` on a thread begun at once; `cases` waits for them (after the
    builds), `stop` ends the thread early (nothing built, Ctrl-C, the judge's own failure)."""

    def __init__(self, inputs: Sequence[BenchInput], ready: Ready) -> None:
        self._made: queue.SimpleQueue = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._kernel_ready = threading.Event()
        self._thread = threading.Thread(target=self._make, args=(list(inputs), ready), daemon=True,
                                        name="inputs beside builds")
        self._thread.start()
        try:
            self._kernel_ready.wait()  # the module's opening says why no build starts before
        except BaseException:  # Ctrl-C here: the caller never gets this object to stop
            self.stop()
            raise

    def _make(self, inputs: list[BenchInput], ready: Ready) -> None:
        try:
            with one_gpu_context():
                kernel_built()
                self._kernel_ready.set()
                for bench_input, drawn in drawn_ahead(inputs):
                    if self._stopping.is_set():
                        break
                    self._made.put(ready(bench_input, drawn, self._progress))
        except _Abandoned:
            pass
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread, by `cases`
            self._made.put(exc)
        finally:
            self._kernel_ready.set()
            self._made.put(_END)

    def cases(self, step: Callable[[], None] = lambda: None) -> list[BenchInput | PreparedCase]:
        """Every case, in the inputs' order, once made (`step` hears each); the thread's failure raised here."""
        made: list[BenchInput | PreparedCase] = []
        try:
            while (item := self._made.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                made.append(item)
                step()
        finally:
            self.stop()
        return made

    @contextmanager
    def _progress(self, description: str, total: int) -> Iterator[Callable[[int], None]]:
        """Progress that abandons the case once the thread is told to stop (a reference's blocks report to it)."""
        def advance(done: int) -> None:
            if self._stopping.is_set():
                raise _Abandoned(description)

        yield advance

    def stop(self) -> None:
        """End the thread after the case it is making, and wait for it (its cases are the caller's to release)."""
        self._stopping.set()
        self._thread.join()
