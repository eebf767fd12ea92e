"""Judging a class: every submission built, judged on the same cases, ranked, the top ones rerun.

The suite's inputs and references are prepared once and shared by every submission (each case still
runs on its own copy of the input, as the course judge does). Each submission is built in a folder of
its own, then judged case by case; its verdicts depend only on its own runs. Once every submission is
judged, the top few (and any tied with them) run each passed case twice more, their case times become
the median of three, and the ranks are made again (`attnbench.analysis.ranking` has the rule).
Ctrl-C keeps what was judged: the scoreboard says it was interrupted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from attnbench.analysis.ranking import RANKING_RULE, RERUN_MARGIN
from attnbench.cases.inputs import BenchInput
from attnbench.cases.testcase import Shape
from attnbench.judge.course_judge import (
    PreparedCase,
    Program,
    TimeLimits,
    judge_case,
    record_case_kernels,
    timeout_for,
    warm_up,
)
from attnbench.judge.diagnose import diagnosis
from attnbench.judge.fresh_inputs import RULE as FRESH_RULE
from attnbench.judge.case_verdict import JUDGE_ERROR
from attnbench.judge.course_build import BuildRules
from attnbench.judge.phases import phase
from attnbench.judge.submissions import BUILD_FAILED, Built, Submission, failure_text
from attnbench.printable import printable
from attnbench.results.course_grade import limited_throughout
from attnbench.results.kernel_time import CUPTI_SOURCE
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow
from attnbench.sandbox.outcome import CRASH, RESOURCE, TIMEOUT
from attnbench.sandbox.room import Confinement, Sandbox, SandboxSettings, SandboxUnavailable
from attnbench.sandbox.staging import remove_tree
from attnbench.results.judge_events import JudgeListener, SubmissionBuilt
from attnbench.spread.devices import NO_GPU_NAME, Device
from attnbench.spread.executor import IN_PROCESS, ExecutorKind
from attnbench.spread.slurm import SlurmOptions

RERUN_TOP = 3  # how many submissions of each GPU kind are rerun before ranks are final
RERUN_RUNS = 3  # each of their passed cases runs this many times in all; the median counts
FORFEITS_WARM_UPS = (TIMEOUT, CRASH, RESOURCE)  # a warm-up that ended so is said on its row and not run again


@dataclass(frozen=True)
class ClassSettings:
    """How a class is judged: limits, reruns, and the sandbox every build and every case runs in."""

    limits: TimeLimits
    timeout_s: float | None = None
    build_timeout_s: float = 300.0
    rerun_top: int = RERUN_TOP
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    fresh_inputs: bool = True  # every case and every rerun on inputs drawn anew (attnbench.judge.fresh_inputs)
    build: BuildRules = field(default_factory=BuildRules)  # how submissions are built (--arch, --build-command)
    diagnose: bool = False  # a failed case runs once more under compute-sanitizer (attnbench.judge.diagnose)
    kernel_time: bool = False  # each passed run's kernels recorded in a second, untimed run (--kernel-time)
    rank_by: str = "wall"  # "kernel": ranked by those kernel times (--rank-by kernel; it records them)

    @property
    def records_kernels(self) -> bool:
        return self.kernel_time or self.rank_by == "kernel"


@dataclass(frozen=True)
class ClassRequest:
    """A class as a command asks for it, built once from its options and passed down whole: what is judged,
    how, and on which executor (`spread.executor.EXECUTORS`: its devices for a GPU pool, its jobs for Slurm)."""

    submissions: tuple[Submission, ...]
    inputs: tuple[BenchInput, ...]
    settings: ClassSettings
    executor: ExecutorKind = IN_PROCESS
    devices: tuple[Device, ...] = ()  # a GPU pool's
    slurm: SlurmOptions | None = None  # Slurm's, its jobs folder chosen
    metadata: dict = field(default_factory=dict)


# the board as it grows, to be saved
Checkpoint = Callable[[Scoreboard], None]


def gpu_name(index: int | str | None = None) -> str:
    """The name of the GPU the programs run on (nvidia-smi's first, or device `index`), or the host's CPU
    without one."""
    smi = shutil.which("nvidia-smi")
    if smi is not None:
        which = ["-i", str(index)] if index is not None else []
        try:
            names = subprocess.run([smi, *which, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                   text=True, timeout=30).stdout.split("\n")
            if names and names[0].strip():
                return names[0].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return NO_GPU_NAME


@dataclass(frozen=True)
class WarmedUp:
    """A row's warm-up as its row records it: a note ('' unless its cache was dropped or the warm-up forfeited)
    and how long the program ran (the programs' time in the judge's cost, results.judge_cost)."""

    note: str = ""
    program_s: float = 0.0


def warm_up_entry(program: Path, shape: Shape, label: str, settings: ClassSettings, cuda_cache: Path) -> WarmedUp:
    """The submission's warm-up run (course_judge.warm_up) on a throwaway input of this shape: untimed,
    unjudged, the only run whose CUDA cache is writable; never the class's end.

    A submission whose earlier warm-up sealed an empty cache (nothing for CUDA to compile: a program built for
    this GPU, a C program; or a cache dropped) is not warmed up again for a rerun round: its runs, first and
    rerun alike, all start from the same empty cache, which tells none of them how long ago it was sealed, and
    the warm-up cost a whole run of the program per round.

    A warm-up that timed out, crashed or hit a limit forfeits the row's warm-ups: its cache is emptied (its runs
    start cold, which harms only itself) and the row's note says so, so a program that hangs in its warm-up
    costs the judge one warm-up's timeout per class, not one per round. That timeout stays the judged run's
    (twice the case's limit): the warm-up is where an honest PTX build compiles its kernels, slower than a run."""
    if _sealed_empty(cuda_cache):
        return WarmedUp()
    limit = settings.limits.limit_for(label)
    try:
        with phase("runs"):  # its room's opening and closing are the run's cost too, not the rest
            sandbox = Sandbox.open(program, settings.sandbox, cuda_cache=cuda_cache, cache_writable=True)
            try:
                warmed = warm_up(Program(program), shape, sandbox, timeout_for(limit, settings.timeout_s))
            finally:
                sandbox.close()
    except SandboxUnavailable:
        raise
    except Exception:  # noqa: BLE001 - a warm-up that fails leaves the cache empty: the judged runs still run
        return WarmedUp()
    if warmed.ending in FORFEITS_WARM_UPS:
        remove_tree(cuda_cache)
        os.mkdir(cuda_cache, 0o755)  # sealed empty: no later round warms it up again
        return WarmedUp(f"its warm-up ended {warmed.ending} after {warmed.wall_s:.1f} s: not warmed up again, its "
                        "runs start with an empty CUDA cache", warmed.wall_s)
    return WarmedUp(warmed.dropped, warmed.wall_s)


def _sealed_empty(cuda_cache: Path) -> bool:
    """Whether an earlier warm-up left this submission's cache folder, and left it empty."""
    try:
        with os.scandir(cuda_cache) as entries:
            return next(entries, None) is None
    except OSError:  # not made yet: no warm-up ran
        return False


def stopped(board: Scoreboard, exc: BaseException) -> None:
    """The class stopped by an error of the judge's own (not a submission's: those are their rows'): the board
    is kept as judged so far, with every round's seeds, marked interrupted and saying why."""
    board.interrupted = True
    board.settings["stopped_by"] = failure_text(exc)


def lose_round(board: Scoreboard, rows: Sequence[SubmissionRow], number: int, why: str) -> None:
    """A rerun round whose inputs the judge could not make (its own disk full, say): no row's fault. Each row
    it would have rerun keeps the runs it has and is ranked by them, with a note; the board says which round
    was lost and why (the command then exits 3, as for any error of the judge's own), its seeds kept."""
    board.settings.setdefault("lost_rounds", {})[f"rerun {number}"] = why
    for row in rows:
        row.reruns -= 1
        add_note(row, f"rerun round {number} was not run (the judge could not make its inputs: {why}): "
                      f"ranked by the runs before it")


def add_note(row: SubmissionRow, note: str) -> None:
    """A note the judge adds to a row (after the build's own)."""
    if note:
        row.build_message = "; ".join(part for part in (row.build_message, note) if part)


def add_warm_up(row: SubmissionRow, warmed: WarmedUp) -> None:
    """A warm-up's time added to its row's, its note to the row's notes (once)."""
    row.warm_ups_s += warmed.program_s
    if warmed.note not in row.build_message:
        add_note(row, warmed.note)


def judge_entry(program: Path, case: PreparedCase, settings: ClassSettings, cuda_cache: Path | None = None,
                room: Sandbox | None = None, open_next: bool = False) -> tuple[CaseEntry, Sandbox | None]:
    """One run of a submission's program on one case, in a sandbox of its own (a fresh copy of the
    program and of the input; nothing of another submission is there but, given, its own JIT cache).
    Whatever goes wrong on the judge's side is this entry's JUDGE ERROR, never the class's end.
    `room`: its sandbox, opened already (`open_next` of its row's run before), else one is opened now; with
    `open_next` the row's next run's sandbox is opened while this run's output is checked (its opening and this
    one's closing were 10 ms of each run on an H200's host), and returned beside the entry (None where it could
    not be: the next run opens its own, and meets that failure itself)."""
    limit = settings.limits.limit_for(case.label)
    ahead: list[Sandbox] = []
    given_up = threading.Event()  # the run went wrong: no next run takes a room opened ahead, even one opened late
    taking = threading.Lock()

    def opened_ahead() -> None:
        try:
            opened = Sandbox.open(program, settings.sandbox, cuda_cache=cuda_cache)
        except Exception:  # noqa: BLE001 - not this run's failure: the next run opens its own room and says why
            return
        with taking:
            if not given_up.is_set():
                ahead.append(opened)
                return
        opened.close()  # a second Ctrl-C left the wait for this thread: the run was given up meanwhile

    try:
        with phase("runs"):  # its room's opening and closing are the run's cost too, not the rest
            sandbox = room or Sandbox.open(program, settings.sandbox, cuda_cache=cuda_cache)
            try:
                judged = judge_case(Program(program), case, limit, timeout_for(limit, settings.timeout_s), sandbox,
                                    opened_ahead if open_next else None)
                if judged.passed and settings.records_kernels:  # a second run in a room of its own, never the judged
                    judged.kernels = record_case_kernels(Program(program), case,
                                                         timeout_for(limit, settings.timeout_s), sandbox)
            finally:
                sandbox.close()
    except BaseException as exc:
        with taking:
            given_up.set()
        for opened in ahead:  # its run went wrong after the next room opened: no next run takes it
            opened.close()
        if isinstance(exc, SandboxUnavailable) or not isinstance(exc, Exception):
            raise
        return CaseEntry(JUDGE_ERROR, failure_text(exc)), None
    runs = [judged.wall_s] if judged.passed and judged.wall_s is not None else []
    # the program's time whatever its verdict: a TIMEOUT's wall_s is None, and its hang counted as the judge's (red team 22)
    entry = CaseEntry(judged.verdict, "" if judged.passed else judged.message, runs, program_s=judged.program_s)
    if judged.kernels is not None:
        entry.kernel_note = judged.kernels.why
        entry.kernel_runs_s = [judged.kernels.time.busy_s] if judged.kernels.time is not None else []
    return entry, (ahead[0] if ahead else None)


def diagnosed(program: Path, case: PreparedCase, settings: ClassSettings) -> str:
    """compute-sanitizer's word on a failed case (attnbench.judge.diagnose), with the case's judged timeout; its
    own failure is a note. The class flow asks for it once per submission (`class_work.to_diagnose`), whatever runs it."""
    limit = settings.limits.limit_for(case.label)
    try:
        return diagnosis(program, Program(program).spec(case.label, case.input_path, case.shape,
                                                        timeout_for(limit, settings.timeout_s)), settings.sandbox)
    except SandboxUnavailable:
        raise
    except Exception as exc:  # noqa: BLE001 - a diagnosis that fails never costs the row its verdict
        return f"--diagnose could not run: {failure_text(exc)}"


def row_of(built: Built, device: str | None, listener: JudgeListener) -> SubmissionRow:
    """A built (or unbuilt) submission's row, not judged yet; `listener` hears that it was built."""
    submission = built.submission
    failed = not built.ok and built.attempted and built.message.startswith(BUILD_FAILED)
    listener(SubmissionBuilt(submission.name, built.ok,
                             built.not_judged or ("" if built.ok or built.attempted else built.message),
                             "" if built.ok or not built.attempted or failed else built.message))
    message = "; ".join(part for part in (submission.note, built.message, submission.unjudged) if part)
    # a build the host failed (a library header its toolkit lacks) is NOT JUDGED, as a CUDA program where no GPU
    # is: no grade of 0 for the host's doing, and the judge exits 3
    return SubmissionRow(submission.name, printable(os.fsdecode(submission.source)), built.ok, message,
                         device if built.ok else None, reruns=1, not_judged=built.not_judged)


def add_run(row: SubmissionRow, label: str, again: CaseEntry) -> bool:
    """Add a rerun of a passed case to the row; a failed rerun makes the case fail (its earlier runs' program
    time kept). True while it passes."""
    if not again.passed:
        again.program_s += row.entries[label].program_s
        row.entries[label] = again
        return False
    row.entries[label].program_s += again.program_s
    row.entries[label].runs_s.extend(again.runs_s)
    row.entries[label].kernel_runs_s.extend(again.kernel_runs_s)
    return True


def confinement(settings: ClassSettings) -> Confinement:
    """How this machine confines the class's builds and cases (SandboxUnavailable for --sandbox required)."""
    sandbox = Sandbox.open(None, settings.sandbox)
    try:
        return sandbox.confinement
    finally:
        sandbox.close()


def pinning(settings: ClassSettings) -> str:
    """How runs on a worker are kept on its cores here (Sandbox.pinning)."""
    sandbox = Sandbox.open(None, settings.sandbox)
    try:
        return sandbox.pinning()
    finally:
        sandbox.close()


def new_board(inputs: Sequence[BenchInput], settings: ClassSettings, metadata: dict | None,
              confined: Confinement | None = None) -> Scoreboard:
    """An empty scoreboard for these cases, its rule and settings recorded (and how programs were confined)."""
    return Scoreboard([b.label for b in inputs], [], dict(metadata or {}),
                      {"ranking": RANKING_RULE, "time_limits": settings.limits.describe(),
                       "build": settings.build.describe(),
                       "reruns": f"the top {settings.rerun_top} of each GPU kind, and any row within "
                       f"{RERUN_MARGIN:.0%} of the total of row {settings.rerun_top}: median of {RERUN_RUNS} runs"
                       if settings.rerun_top else "none (--rerun-top 0): one run per case",
                       "inputs": FRESH_RULE if settings.fresh_inputs else "the suite's inputs (public seeds)",
                       "seeds": {},
                       "rank_by": settings.rank_by,
                       **({"kernel_time": f"{CUPTI_SOURCE}; ranks use it only with --rank-by kernel"}
                          if settings.records_kernels else {}),
                       "confinement": confined.to_dict() if confined else None,
                       "confinement_warning": confined.warning() if confined else None,
                       **({} if limited_throughout(settings.limits.limit_for) else
                          {"ungraded": "no grade: some of t01-t30 had no time limit, so none could fail by its time"})})
