"""Slurm through submitit: `SlurmExecutor` submits keyed jobs as one array, follows them through
squeue and tells each result as it comes back. A compare or a sweep (`matrix_slurm`) spreads through it,
and a class through `SlurmWorkers`, the executor seam (`executor.Executor`) over it; each keeps its run's record in its jobs folder
(`save_record`), beside submitit's pickles and Slurm's logs, so that a resume finds its jobs.

Without Slurm accounting `sacct` answers nothing and submitit cannot tell a job that died from one
still pending; here a job counts as lost once squeue no longer shows it as active and its result
has not appeared within a grace period (a compare's cells then become ERROR cells; resume runs
them again).
"""

from __future__ import annotations

import datetime as _dt
import pickle
import shutil
import contextlib
import io
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeVar

from attnbench.errors import AttnbenchError, ResultsError
from attnbench.locations import extra_install_command
from attnbench.spread.executor import ExecutorEvent, InProcess, JobDied, JobEvent, Listener

ACTIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED", "SIGNALING",
          "STAGE_OUT", "REQUEUE_HOLD", "REQUEUE_FED"}


class SlurmUnavailable(AttnbenchError):
    """No submitit, no sbatch, or a Slurm that does not answer."""

    exit_code = 3


@dataclass(frozen=True)
class SlurmOptions:
    """How the jobs are asked for, and how long a vanished job is waited for."""

    partition: str | None = None
    gres: str | None = None  # e.g. gpu:1
    time_min: int = 30  # each job's time limit
    array_parallelism: int = 16
    folder: Path | None = None  # the jobs folder [default: attnbench-results/slurm/<date>_<time>]
    job_seconds: float = 60.0  # the size jobs are packed to, by the FLOPs estimate
    poll_s: float = 2.0
    lost_after_s: float = 30.0  # a job out of squeue this long without its result is lost
    squeue_timeout_s: float = 300.0  # squeue failing this long ends the wait (resume later)


# -- what the Slurm executor tells its listener -------------------------------------------------------
@dataclass(frozen=True)
class JobsSubmitted:
    """Jobs went out as one array: `keys` of the run's `of`, `again` when they had gone out before (a resume)."""

    keys: list[Any]
    of: int
    again: bool
    array: str


@dataclass(frozen=True)
class JobResult:
    """A Slurm job's result came back (`result`: its value, or {"error": why it has none})."""

    key: Any
    result: dict


SlurmListener = Callable[[JobsSubmitted | JobResult], None]


def save_record(folder: Path, name: str, record: Any) -> None:
    """A run's record (pickled) in its jobs folder, replaced whole or not at all."""
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / (name + ".tmp")
    temporary.write_bytes(pickle.dumps(record))
    temporary.replace(folder / name)


def folders_to_make(folder: Path) -> list[Path]:
    """The folders a record saved in `folder` would create (it and its missing parents), innermost first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def remove_unsubmitted(folder: Path, made: list[Path]) -> None:
    """After a run none of whose jobs went out (sbatch refused them, no Slurm here), remove the jobs folder it
    made and the parents made for it: nothing to resume is there, and --no-save promised no file."""
    shutil.rmtree(folder, ignore_errors=True)
    for parent in made[1:]:
        try:
            parent.rmdir()  # only while empty: anything else put there stays
        except OSError:
            break


def load_record(folder: str | Path, name: str, kind: type, what: str) -> Any:
    """The record `name` of a jobs folder, of type `kind`, its folder set to where it is now; one line
    naming the folder (`what` says which kind of jobs folder) when it is not there or not one."""
    path = Path(folder) / name
    try:
        record = pickle.loads(path.read_bytes())
    except FileNotFoundError:
        raise ResultsError(f"{folder}: not an attnbench {what} jobs folder (no {name})") from None
    except Exception as exc:
        raise ResultsError(f"{path}: unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(record, kind):
        raise ResultsError(f"{path}: not an attnbench {what} run")
    record.options = replace(record.options, folder=Path(folder))  # the folder may have moved
    return record


# -- submitting and following ----------------------------------------------------------------------
def refuse_without_slurm() -> None:
    """SlurmUnavailable (exit 3) when submitit, sbatch or squeue is missing: said before a class's builds and
    inputs, not after them (a class of 20 built and drew its inputs, then stopped on the missing extra)."""
    _submitit()


def _submitit() -> Any:
    try:
        import submitit
    except ImportError:
        raise SlurmUnavailable(f"--executor slurm needs submitit: {extra_install_command('slurm')}") from None
    if shutil.which("sbatch") is None or shutil.which("squeue") is None:
        raise SlurmUnavailable("--executor slurm needs Slurm's sbatch and squeue on the PATH (try "
                               "tools/slurm_local.sh for a one-node cluster on this machine)")
    return submitit


def submit_array(folder: Path, options: SlurmOptions, job_name: str,
                 calls: list[tuple[Callable[..., Any], tuple]]) -> list[str]:
    """Submit one job per (function, arguments) as one array; returns their Slurm ids, in order."""
    submitit = _submitit()
    executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=0)
    parameters: dict[str, Any] = {"time": options.time_min, "array_parallelism": options.array_parallelism,
                                  "job_name": job_name, "nodes": 1, "ntasks_per_node": 1}
    if options.partition:
        parameters["partition"] = options.partition
    if options.gres:
        parameters["gres"] = options.gres
    executor.update_parameters(**parameters)
    swallowed = io.StringIO()  # submitit copies sbatch's stderr to ours: four raw lines above the error's one
    try:
        with contextlib.redirect_stderr(swallowed), contextlib.redirect_stdout(swallowed), executor.batch():
            jobs = [executor.submit(function, *arguments) for function, arguments in calls]
    except Exception as exc:  # sbatch refused: no such partition, no controller, ...
        detail = getattr(exc, "stderr", None) or getattr(exc, "output", None) or swallowed.getvalue() or exc
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        said = [line.strip() for line in str(detail).splitlines() if line.strip()]
        # its last line says why (sbatch's "fatal: ..."): one line, not its whole stderr joined by escaped newlines
        raise SlurmUnavailable(f"sbatch refused the jobs: {said[-1] if said else type(exc).__name__}") from None
    return [job.job_id for job in jobs]


def squeue_states() -> dict[str, str] | None:
    """Job id (array tasks as 12_3) -> state, finished jobs included while Slurm keeps them; None
    when squeue does not answer."""
    try:
        done = subprocess.run(["squeue", "-h", "-r", "-t", "all", "-o", "%i %T"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return dict(line.split()[:2] for line in done.stdout.splitlines() if len(line.split()) >= 2)


def cancel(job_ids: Sequence[str]) -> None:
    """End these jobs at once: those running killed outright (submitit ignores scancel's SIGTERM, and a job that ran
    on for its grace time found its class's builds removed and sent back JUDGE ERRORs a resume took as results),
    those pending taken from the queue. Quiet where scancel fails: a resume asks squeue, as ever."""
    for words in (["scancel", "--full", "--signal=KILL"], ["scancel"]):
        try:
            subprocess.run([*words, *job_ids], capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return


def result_file(folder: Path, job_id: str | None) -> Path:
    """Where submitit leaves a job's pickled result."""
    return Path(folder) / f"{job_id}_0_result.pkl"


def read_outcome(folder: Path, job_id: str | None) -> dict[str, Any]:
    """A finished job's result, or {"error": ...} saying why it has none."""
    try:
        outcome, value = pickle.loads(result_file(folder, job_id).read_bytes())
    except Exception as exc:
        return {"error": f"Slurm job {job_id}: unreadable result ({type(exc).__name__}: {exc})"}
    if outcome != "success":
        last = [line for line in str(value).strip().splitlines() if line.strip()][-1:] or ["no trace"]
        return {"error": f"Slurm job {job_id} failed: {last[0].strip()}"}
    return value


def _log_tail(folder: Path, job_id: str | None) -> str:
    for suffix in ("err", "out"):
        path = Path(folder) / f"{job_id}_0_log.{suffix}"
        if path.exists():
            lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
            if lines:
                return f"; log {path.name}: {lines[-1].strip()}"
    return ""


Key = TypeVar("Key")


def wait_for_jobs(folder: Path, job_ids: dict[Key, str | None], options: SlurmOptions,
                  on_result: Callable[[Key, dict], None] = lambda key, result: None,
                  sleep: Callable[[float], None] = time.sleep) -> dict[Key, dict]:
    """Wait for every job's result; a job that leaves the queue without one is reported lost."""
    outstanding = set(job_ids)
    results: dict[Key, dict] = {}
    lost_since: dict[Key, float] = {}
    squeue_ok = time.monotonic()
    while outstanding:
        states = squeue_states()
        now = time.monotonic()
        if states is None and now - squeue_ok > options.squeue_timeout_s:
            raise SlurmUnavailable(f"squeue has not answered for {options.squeue_timeout_s:.0f} s; the jobs "
                                   f"may still run: finish the run with --resume {folder}")
        if states is not None:
            squeue_ok = now
        for key in sorted(outstanding, key=str):
            job_id = job_ids[key]
            if result_file(folder, job_id).exists():
                results[key] = read_outcome(folder, job_id)
            elif states is not None and states.get(str(job_id)) not in ACTIVE:
                since = lost_since.setdefault(key, now)
                state = states.get(str(job_id), "gone from the queue")
                grace = 5.0 if state in ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY") else \
                    options.lost_after_s
                if now - since < grace:
                    continue
                results[key] = {"error": f"Slurm job {job_id} ended ({state}) without a result"
                                         + _log_tail(folder, job_id)}
            else:
                lost_since.pop(key, None)
                continue
            outstanding.discard(key)
            on_result(key, results[key])
        if outstanding:
            sleep(options.poll_s)
    return results


class SlurmExecutor:
    """An executor: each job a call (function, arguments) run as one Slurm job of an array, followed
    through squeue; each result is told as a "result" event as it comes back.

    Its jobs are keyed (a compare's by number, a class's by submission): `ids` maps each key to its Slurm
    job id, None before it is submitted, and is the run's record of them, kept by `save` as soon as it
    changes, so that a later run of the same jobs (a resume) submits again only those with no result
    that Slurm no longer runs."""

    def __init__(self, folder: Path, options: SlurmOptions, job_name: str, ids: dict[Any, str | None],
                 save: Callable[[], None] = lambda: None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.folder, self.options, self.job_name, self.ids = Path(folder), options, job_name, ids
        self.save, self.sleep = save, sleep

    def outstanding(self, keys: Iterable[Any]) -> list[Any]:
        """The jobs to submit (again): never submitted, or with no result and no longer in the queue."""
        keys = list(keys)
        if all(self.ids.get(key) is None for key in keys):
            return keys
        states = squeue_states() or {}
        return [key for key in keys if self.ids.get(key) is None or (
            not result_file(self.folder, self.ids[key]).exists() and states.get(str(self.ids[key])) not in ACTIVE)]

    def submit(self, jobs: dict[Any, tuple[Callable[..., Any], tuple]], which: list[Any]) -> None:
        """Submit the jobs `which` as one array; their ids are saved at once."""
        ids = submit_array(self.folder, self.options, self.job_name, [jobs[key] for key in which])
        self.ids.update(zip(which, ids))
        self.save()

    def wait(self, keys: Iterable[Any], listener: SlurmListener) -> dict[Any, dict]:
        """Every job's result, each told (`JobResult`) as it comes back; a job that leaves the queue without one is
        lost."""
        return wait_for_jobs(self.folder, {key: self.ids[key] for key in keys}, self.options,
                             lambda key, result: listener(JobResult(key, result)), self.sleep)

    def run(self, jobs: dict[Any, tuple[Callable[..., Any], tuple]], listener: SlurmListener) -> dict[Any, dict]:
        """Submit what has no result yet (`JobsSubmitted` says which, and whether they go out again), then wait."""
        fresh = all(self.ids.get(key) is None for key in jobs)
        again = self.outstanding(jobs)
        if again:
            self.submit(jobs, again)
            listener(JobsSubmitted(again, len(jobs), not fresh, str(self.ids[again[0]]).split("_")[0]))
        return self.wait(jobs, listener)


def default_folder(results_dir: str | Path) -> Path:
    stamp = _dt.datetime.now().strftime("%Y-%m-%d_%H%M%S")
    return Path(results_dir) / "slurm" / stamp


# -- the executor seam over Slurm ------------------------------------------------------------------
def run_group(work: Any, jobs: list[Any]) -> list[ExecutorEvent]:
    """On the node: one Slurm job's share of a run's jobs, in process (`executor.InProcess`), each event kept as
    it was told (its job the index in the share) for the parent to tell: they come back pickled, as they are."""
    heard: list[ExecutorEvent] = []
    InProcess(work).run(jobs, heard.append)
    return heard


class SlurmWorkers:
    """The executor seam (`executor.Executor`) over Slurm: each `run`'s jobs grouped by `group` (a class's by
    submission: one Slurm job builds nothing, warms nothing, it runs that submission's cases back to back),
    each group one Slurm job of an array that runs the `Work` in process on its node; each job's events are
    told as the parent hears them from an in-process run (the job index the run's own), once its Slurm job is
    back, each the same dataclass a pool's worker sends, its job the run's and its device None (the node's device 0
    is no device of this host's). A Slurm job lost costs each of its jobs a `JobDied`.

    Runs are numbered in the order they are asked for, so the same sequence of runs (a resume's) finds its
    Slurm jobs again in `ids`: (run number, group) -> Slurm job id, kept by `save` as soon as it changes."""

    def __init__(self, folder: Path, options: SlurmOptions, job_name: str, work: Any, group: Callable[[Any], str],
                 ids: dict[Any, str | None], save: Callable[[], None] = lambda: None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.slurm = SlurmExecutor(folder, options, job_name, ids, save, sleep)
        self.work, self.group = work, group
        self.runs = 0

    def run(self, jobs: Sequence[Any], listener: Listener) -> None:
        self.runs += 1
        shares: dict[Any, list[int]] = {}
        for i, job in enumerate(jobs):
            shares.setdefault((self.runs, self.group(job)), []).append(i)
        if not shares:
            return

        def told(event: JobsSubmitted | JobResult) -> None:
            if not isinstance(event, JobResult):
                return
            share = shares[event.key]
            if "error" in event.result:
                for i in share:
                    listener(JobDied(i, None, event.result["error"]))
                return
            for heard in event.result["events"]:
                if isinstance(heard, JobEvent):
                    heard = replace(heard, job=share[heard.job])
                listener(replace(heard, device=None))

        calls = {key: (_events_of, (self.work, [jobs[i] for i in share])) for key, share in shares.items()}
        self.slurm.run(calls, told)


def _events_of(work: Any, jobs: list[Any]) -> dict[str, Any]:
    return {"events": run_group(work, jobs)}
