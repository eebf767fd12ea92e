"""The one seam through which work is spread: `Executor.run(jobs, listener)`.

A job is a compare's or a sweep's case group, or a class's (submission, case). What a job does is
a `Work` (picklable: it travels to worker processes); how jobs are spread is an executor: here in
this process (`InProcess`: a compare or sweep on one device, a class on one worker, and a Slurm node's
share), over this host's GPUs (`pool.GpuPool`),
or over Slurm jobs (`slurm.SlurmExecutor`, whose jobs are keyed calls, so a resume finds them).
Whatever runs them, what the caller hears is one stream of `Progress` events, so one listener shape
serves every executor. Which executor a run gets is data (`EXECUTORS`), checked in one place
(`choose_executor`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from attnbench.errors import AttnbenchError, UsageError
from attnbench.spread.devices import Device


@dataclass(frozen=True)
class Progress:
    """One thing that happened while jobs ran.

    `what` is the executor's word ("ready", "unusable", "done", "died", "not_run", "device_lost",
    "note") or the work's own ("info", "started", "cell", "entry", ...), or what a run tells its caller
    (a judge's "judged", or a class's: `attnbench.judge.classroom` lists them); `job` is the job's index in
    the list `run` was given (None for a device's or the run's own events)."""

    what: str
    job: int | None = None
    device: Device | None = None
    payload: Any = None


Listener = Callable[[Progress], None]
Emit = Callable[[str, Any], None]  # a job's own events: (what, payload)


def quiet_listener(event: Progress) -> None:
    """A listener that hears nothing."""


class Work(Protocol):
    """What every job of a run does; sent whole (pickled) to each worker that runs them."""

    def open(self, device: Device, workers: int) -> tuple[Any, Any]:
        """In the worker, once: get `device` ready; returns (state for `run`, what the "ready" event carries).
        Raises AttnbenchError when the device cannot be used (an "unusable" event)."""
        ...

    def run(self, job: Any, state: Any, emit: Emit) -> str | None:
        """One job on the opened device, each of its results emitted as it comes; why the device is lost
        (the worker then runs no more jobs), or None."""
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
            listener(Progress("unusable", None, self.device, str(exc)))
            for i in range(len(jobs)):
                listener(Progress("not_run", i, self.device, f"not run: {self.device.label} could not start ({exc})"))
            return
        listener(Progress("ready", None, self.device, about))
        lost: str | None = None
        for i, job in enumerate(jobs):
            if lost is not None:
                listener(Progress("not_run", i, self.device, f"not run: {lost}"))
                continue
            lost = self.work.run(job, state, lambda what, payload, i=i: listener(Progress(what, i, self.device, payload)))
            listener(Progress("done", i, self.device, lost))
            if lost is not None:
                listener(Progress("device_lost", None, self.device, lost))


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
