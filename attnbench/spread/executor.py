"""The one seam through which work is spread: `Executor.run(jobs, listener)`.

A job is a compare's or a sweep's case group, or a class's (submission, case). What a job does is
a `Work` (picklable: it travels to worker processes); how jobs are spread is an executor: here in
this process (`InProcess`: a compare or sweep on one device, a class on one worker, and a Slurm node's
share), over this host's GPUs (`pool.GpuPool`),
or over Slurm jobs (`slurm.SlurmExecutor`, whose jobs are keyed calls, so a resume finds them).
Whatever runs them, what the caller hears is one stream of typed events (`DeviceReady`, `JobTold`, `JobDone`,
...: one frozen dataclass each, a job's own events inside `JobTold`), so one listener serves every executor.
Which executor a run gets is data (`EXECUTORS`), checked in one place (`choose_executor`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from attnbench.errors import AttnbenchError, UsageError
from attnbench.spread.devices import Device


# -- what an executor tells its listener: one frozen dataclass per thing that happened ------------------
# `job` is the job's index in the list `run` was given; `device` the device that ran it (None where the executor
# does not know it: Slurm's nodes). They cross process boundaries (a pool's pipes, Slurm's pickles) as they are.
@dataclass(frozen=True)
class DeviceReady:
    """A worker opened its device; `about` is what `Work.open` said of it."""

    device: Device | None
    about: Any


@dataclass(frozen=True)
class DeviceUnusable:
    """A worker could not open its device (`Work.open` raised)."""

    device: Device | None
    why: str


@dataclass(frozen=True)
class DeviceLost:
    """A job lost its device: the worker runs no more jobs there."""

    device: Device | None
    why: str


@dataclass(frozen=True)
class WorkerNote:
    """Something the executor says of its workers (one died and another starts)."""

    device: Device | None
    text: str


@dataclass(frozen=True)
class JobTold:
    """One of a job's own events (`event`: a dataclass of the work's, as `Work.run` emitted it)."""

    job: int
    device: Device | None
    event: Any


@dataclass(frozen=True)
class JobDone:
    """A job ended; `lost` says why its device is lost, or is None."""

    job: int
    device: Device | None
    lost: str | None = None


@dataclass(frozen=True)
class JobDied:
    """A job's worker died while it ran (`how`: its exit code or signal)."""

    job: int
    device: Device | None
    how: str


@dataclass(frozen=True)
class JobNotRun:
    """A job no device ran, and why."""

    job: int
    device: Device | None
    why: str


JobEvent = JobTold | JobDone | JobDied | JobNotRun  # those of one job: `job` names it
ExecutorEvent = DeviceReady | DeviceUnusable | DeviceLost | WorkerNote | JobEvent
Listener = Callable[[ExecutorEvent], None]
Emit = Callable[[Any], None]  # a job's own events, each a dataclass of its work's


def quiet_listener(event: object) -> None:
    """A listener that hears nothing."""


class Work(Protocol):
    """What every job of a run does; sent whole (pickled) to each worker that runs them."""

    def open(self, device: Device, workers: int) -> tuple[Any, Any]:
        """In the worker, once: get `device` ready; returns (state for `run`, what `DeviceReady` carries).
        Raises AttnbenchError when the device cannot be used (`DeviceUnusable`)."""
        ...

    def run(self, job: Any, state: Any, emit: Emit) -> str | None:
        """One job on the opened device, each of its results emitted as it comes; why the device is lost
        (the worker then runs no more jobs), or None."""
        ...

    def close(self, state: Any) -> None:
        """In the worker, once its jobs are over or stopped (Ctrl-C included): let go what `state` still holds."""
        ...


class Executor(Protocol):
    """Runs a list of jobs of one `Work`, telling `listener` what happens; an exception from the listener
    (Ctrl-C included) stops the run and is raised."""

    def run(self, jobs: Sequence[Any], listener: Listener) -> None: ...


class InProcess:
    """The jobs one after another in this process, on one device."""

    def __init__(self, work: Work, device: Device = Device(0)) -> None:
        self.work, self.device = work, device

    def run(self, jobs: Sequence[Any], listener: Listener) -> None:
        try:
            state, about = self.work.open(self.device, 1)
        except AttnbenchError as exc:
            listener(DeviceUnusable(self.device, str(exc)))
            for i in range(len(jobs)):
                listener(JobNotRun(i, self.device, f"not run: {self.device.label} could not start ({exc})"))
            return
        try:
            listener(DeviceReady(self.device, about))
            lost: str | None = None
            for i, job in enumerate(jobs):
                if lost is not None:
                    listener(JobNotRun(i, self.device, f"not run: {lost}"))
                    continue
                lost = self.work.run(job, state, lambda event, i=i: listener(JobTold(i, self.device, event)))
                listener(JobDone(i, self.device, lost))
                if lost is not None:
                    listener(DeviceLost(self.device, lost))
        finally:  # a Ctrl-C between two jobs too: what one job left for the next is let go
            self.work.close(state)


# -- the list of executors --------------------------------------------------------------------------
@dataclass(frozen=True)
class ExecutorKind:
    """One way to spread a run, as the user chooses it."""

    name: str  # how settings and messages name it
    option: str  # its --executor value
    gpus: bool  # chosen by --gpus (with this --executor value); False: chosen without --gpus
    needs: str  # what it needs of the host


IN_PROCESS = ExecutorKind("in-process", "local", False, "nothing: the run stays in this process")
GPU_POOL = ExecutorKind("gpu-pool", "local", True,
                        "GPUs nvidia-smi lists (or ATTNBENCH_CPU_WORKERS=N cpu workers standing in for them)")
SLURM = ExecutorKind("slurm", "slurm", False, "submitit and Slurm's sbatch and squeue; each job's GPU from --gres")
EXECUTORS = (IN_PROCESS, GPU_POOL, SLURM)
EXECUTOR_OPTIONS = tuple(dict.fromkeys(kind.option for kind in EXECUTORS))  # --executor's choices


def choose_executor(gpus: str | None, executor: str) -> ExecutorKind:
    """The executor `--gpus` and `--executor` choose; one line of bad usage where they do not fit."""
    if executor not in EXECUTOR_OPTIONS:
        raise UsageError(f"--executor {executor}: choose {' or '.join(EXECUTOR_OPTIONS)}")
    fits = [kind for kind in EXECUTORS if kind.option == executor and kind.gpus == (gpus is not None)]
    if not fits:
        raise UsageError(f"--gpus spreads over this host's GPUs; with --executor {executor} each job gets its GPU "
                         "from --gres (e.g. --gres gpu:1): drop --gpus")
    return fits[0]
