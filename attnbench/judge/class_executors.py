"""Where a class's jobs run: one small carrier per executor of `spread.executor.EXECUTORS`, each handing the one
class flow (`class_flow`) an executor of the one seam (`spread.executor.Executor`) and saying the little the
flow must know of it: whether the jobs run in this process (they then carry the cases prepared here), whether
they run on this host (then a CUDA program is not judged where it has no GPU: `judge.gpu_needed`), which folder every worker can read (the builds and the JIT caches go there), what the scoreboard records of it, and
what is kept when the class ends. A new executor (Ray, Kubernetes) is an `Executor` in spread/ and one carrier
here, registered in `CARRIERS`.

Over Slurm each submission's cases of a round are one Slurm job (`spread.slurm.SlurmWorkers`), its programs
built here into the jobs folder, which the nodes read as they read submitit's files. The jobs folder keeps the
run's record (`attnbench-class.pkl`: the request, every round's inputs as drawn, the Slurm job ids), so
`resume_class(folder)` runs the same flow again, finding what came back and submitting the rest; it is removed
once the class is judged, and kept (named on the scoreboard) while a resume could finish it.
"""

from __future__ import annotations

import contextlib
import operator
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Protocol, TypeVar

from attnbench.judge.class_work import ClassCaseWork, affinity, core_plan, pin
from attnbench.judge.classroom import ClassRequest, pinning
from attnbench.results.scoreboard import Scoreboard
from attnbench.sandbox.program_run import clear_after_workers
from attnbench.sandbox.reaper import descendants
from attnbench.spread.executor import EXECUTORS, GPU_POOL, IN_PROCESS, SLURM, Executor, InProcess
from attnbench.spread.pool import GpuPool
from attnbench.spread.slurm import (
    SlurmOptions,
    SlurmWorkers,
    cancel,
    folders_to_make,
    load_record,
    remove_unsubmitted,
    result_file,
    save_record,
)

T = TypeVar("T")


class Carrier(Protocol):
    """An executor as the class flow uses it."""

    here: bool  # the jobs run in this process: they carry the cases prepared here
    on_this_host: bool  # the programs run on this host (in this process or its workers), not on other nodes
    scratch: Path | None  # where builds and JIT caches go, a folder every worker reads (None: the temporary one)
    about: dict[str, Any]  # what the scoreboard's settings record of it

    def drawn(self, name: str, draw: Callable[[], T]) -> T:
        """A round's inputs (`draw()`), or those drawn for it before (a resume judges the same inputs)."""
        ...

    def executor(self) -> ContextManager[Executor]:
        """The executor the cases run on, once every build is done."""
        ...

    def stop_jobs(self) -> None:
        """The class is ending: end its jobs still out, before the builds they run are removed (a resume runs them
        again). Nothing where no job outlives the flow."""
        ...

    def close(self, board: Scoreboard) -> None:
        """The class has ended (judged, interrupted or stopped): give back what was held."""
        ...


class HereCarrier:
    """One worker, in this process: on its cores and the GPUs it sees."""

    here, on_this_host, scratch = True, True, None

    def __init__(self, request: ClassRequest) -> None:
        self.request = request
        self.about: dict[str, Any] = {}

    def drawn(self, name: str, draw: Callable[[], T]) -> T:
        return draw()

    def executor(self) -> ContextManager[Executor]:
        return contextlib.nullcontext(InProcess(ClassCaseWork(self.request.settings)))

    def stop_jobs(self) -> None:
        pass  # its jobs ran in this process, and are over

    def close(self, board: Scoreboard) -> None:
        pass


class PoolCarrier:
    """One worker process per device of this host, each on CPU cores of its own; this process keeps a share
    (input draws, checks), the builds before them use every core."""

    here, on_this_host, scratch = False, True, None

    def __init__(self, request: ClassRequest) -> None:
        self.request = request
        self.original = sorted(affinity())
        self.parent_cores, worker_cores = core_plan(len(request.devices), self.original)
        self.cores = {d.index: c for d, c in zip(request.devices, worker_cores)}
        self.about = {"workers": [d.label for d in request.devices], "cpu_pinning": pinning(request.settings),
                      "cpu_cores": {"builds (before any run)": self.original, "parent (inputs, checks)": self.parent_cores,
                                    **{d.label: c for d, c in zip(request.devices, worker_cores)}}}

    def drawn(self, name: str, draw: Callable[[], T]) -> T:
        return draw()

    @contextlib.contextmanager
    def executor(self) -> Iterator[Executor]:
        pin(self.parent_cores)
        work = ClassCaseWork(self.request.settings, self.cores, own_gpu=True)
        # a row's jobs of a round on the worker that takes its first (its warm-up): class_flow says why
        before = set(descendants(os.getpid()))
        try:
            with GpuPool(list(self.request.devices), work, group=operator.attrgetter("submission")) as pool:
                yield pool
        finally:  # what the workers left unreaped came to this process (a subreaper): no later sweep collects it
            clear_after_workers(before)

    def stop_jobs(self) -> None:
        pass  # its workers stopped with the executor

    def close(self, board: Scoreboard) -> None:
        pin(self.original)


CLASS_RUN_FILE = "attnbench-class.pkl"


@dataclass
class ClassRun:
    """What a Slurm class's jobs folder records: enough to run its flow again and find its jobs."""

    request: ClassRequest
    options: SlurmOptions  # its folder where the jobs folder is now
    draws: dict[str, Any] = field(default_factory=dict)  # each round's inputs as drawn
    ids: dict[Any, str | None] = field(default_factory=dict)  # (run, submission) -> its Slurm job

    @property
    def folder(self) -> Path:
        assert self.options.folder is not None
        return Path(self.options.folder)

    def save(self) -> None:
        save_record(self.folder, CLASS_RUN_FILE, self)


def load_class_run(folder: str | Path) -> ClassRun:
    return load_record(folder, CLASS_RUN_FILE, ClassRun, "class")


class SlurmCarrier:
    """Slurm jobs, one per submission's cases of a round; the jobs folder holds the builds, the JIT caches and
    the run's record."""

    here = False
    on_this_host = False  # the nodes may have GPUs this host lacks: nothing is refused for this host's

    def __init__(self, run: ClassRun) -> None:
        self.run = run
        self.made = folders_to_make(run.folder)  # what a run that ends is to remove, parents made for it included
        self.scratch: Path | None = run.folder
        self.about: dict[str, Any] = {}
        run.save()

    @classmethod
    def new(cls, request: ClassRequest) -> SlurmCarrier:
        assert request.slurm is not None and request.slurm.folder is not None, "the API chooses the jobs folder"
        return cls(ClassRun(request, request.slurm))

    def drawn(self, name: str, draw: Callable[[], T]) -> T:
        if name not in self.run.draws:
            self.run.draws[name] = draw()
            self.run.save()
        return self.run.draws[name]

    def executor(self) -> ContextManager[Executor]:
        work = ClassCaseWork(self.run.request.settings)
        return contextlib.nullcontext(SlurmWorkers(self.run.folder, self.run.options, "attnbench-class", work,
                                                   operator.attrgetter("submission"), self.run.ids, self.run.save))

    def stop_jobs(self) -> None:
        """Cancel the jobs with no result yet (the class was interrupted or stopped): they run the builds in the jobs
        folder, which the class removes as it ends, and those still queued or running came back as JUDGE ERRORs that
        a resume took for their results; cancelled, a resume submits them again."""
        waiting = [job for job in self.run.ids.values()
                   if job is not None and not result_file(self.run.folder, job).exists()]
        if waiting:
            cancel(waiting)

    def close(self, board: Scoreboard) -> None:
        if board.interrupted and any(self.run.ids.values()):  # jobs went out: a resume can finish it
            board.settings["slurm_jobs_folder"] = str(self.run.folder)
        else:  # judged, or no job went out (sbatch refused them): nothing to resume is there
            remove_unsubmitted(self.run.folder, self.made)


CARRIERS: dict[str, Callable[[ClassRequest], Carrier]] = {
    IN_PROCESS.name: HereCarrier, GPU_POOL.name: PoolCarrier, SLURM.name: SlurmCarrier.new}
assert set(CARRIERS) == {kind.name for kind in EXECUTORS}, "every executor carries a class"


def carrier_for(request: ClassRequest) -> Carrier:
    return CARRIERS[request.executor.name](request)


def resumed(folder: str | Path) -> tuple[ClassRequest, Carrier]:
    """A Slurm class's request and carrier, from its jobs folder, to run its flow again."""
    run = load_class_run(folder)
    return replace(run.request, slurm=run.options), SlurmCarrier(run)
