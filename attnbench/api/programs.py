"""The public API for the user's own code: judging whole programs as the course does, and a starting
kernel with its launch facts. The command line renders what these return."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, Sequence

from attnbench.judge import course_judge as judging
from attnbench.judge import class_slurm
from attnbench.judge.classroom import ClassListener, ClassSettings, RERUN_TOP
from attnbench.judge.classroom import judge_class as run_class
from attnbench.judge.submissions import find_submissions
from attnbench.cases.inputs import ProgressFactory, bytes_to_write, no_progress
from attnbench.errors import UsageError
from attnbench.judge.sandbox import Confinement, SandboxSettings
from attnbench.kernels.starter import StarterFiles, write_starter
from attnbench.results.metadata import collect
from attnbench.results.resultset import ResultSet
from attnbench.results.scoreboard import Scoreboard
from attnbench.spread.slurm import SlurmOptions, default_folder

Finished = Callable[[int, int, "judging.JudgedCase"], None]


def judge(program: str, cases: str | Sequence[str] = "course", *, launcher: str | None = None, time_limits: str = "course",
          args: str = judging.DEFAULT_ARGS, timeout: float | None = None, progress: ProgressFactory = no_progress,
          finished: Finished | None = None, command: str | None = None, sandbox: SandboxSettings | None = None,
          opened: Callable[[Confinement], None] | None = None) -> tuple[judging.Judgement, ResultSet]:
    """Run PROGRAM IN OUT on each case in its own case folder and sandbox (see attnbench.judge.sandbox),
    time the whole process, check the output by the course's rule; returns the judgement and its result
    set (kind "judge"). `opened` hears how cases are confined (bwrap, or the fallback and why) first."""
    prog = judging.make_program(program, launcher, args)
    limits = judging.load_time_limits(time_limits)
    inputs = judging.cases_for(cases)
    if not inputs:
        raise UsageError(f"--cases {cases if isinstance(cases, str) else ','.join(cases)!r} names no case")
    judgement = judging.run_judge(prog, inputs, limits, timeout, progress, finished or (lambda *a: None),
                                  sandbox, opened)
    return judgement, judging.judge_results(judgement, collect(None, False, command))


def judge_class(submissions: Sequence[str | Path], cases: str | Sequence[str] = "course", *,
                time_limits: str = "course", timeout: float | None = None, build_timeout: float = 300.0,
                rerun_top: int = RERUN_TOP, executor: str = "local", slurm: SlurmOptions | None = None,
                results_dir: str | Path = "results", progress: ProgressFactory = no_progress,
                listener: ClassListener | None = None, command: str | None = None) -> Scoreboard:
    """Build and judge every submission (folders, .cu or .c files, executables, or folders of them) on the
    same cases, rank them (passed cases first, then total time; ties within noise), rerun the top ones
    and rank again; returns the scoreboard, which the command line renders and saves. With
    `executor="slurm"`, each submission is a Slurm job (then each rerun), in the jobs folder of `slurm`
    (default results_dir/slurm/<date>_<time>)."""
    if executor not in ("local", "slurm"):
        raise UsageError(f"--executor {executor}: local or slurm")
    if rerun_top < 0:
        raise UsageError(f"--rerun-top {rerun_top}: give 0 or more")
    found = find_submissions(list(submissions))
    selector = cases if isinstance(cases, str) else ",".join(cases)
    inputs = judging.cases_for(selector)
    if not inputs:
        raise UsageError(f"--cases {selector!r} names no case")
    settings = ClassSettings(judging.load_time_limits(time_limits), timeout, build_timeout, rerun_top)
    metadata = collect(None, False, command)
    if executor == "slurm":
        options = slurm or SlurmOptions()
        if options.folder is None:
            options = replace(options, folder=default_folder(results_dir))
        return class_slurm.judge_class_slurm(found, inputs, settings, options, listener, metadata)
    return run_class(found, inputs, settings, progress, listener, metadata)


def resume_class(folder: str | Path, listener: ClassListener | None = None) -> Scoreboard:
    """Finish a class judged over Slurm from its jobs folder: what came back is kept, the rest resubmitted."""
    return class_slurm.resume_class(folder, listener)


def judge_writes(cases: str | Sequence[str] = "course") -> int:
    """Bytes a judge of these cases will write to the suite's data folder before it starts (inputs and
    references not generated yet); 0 when all are there."""
    return bytes_to_write(judging.cases_for(cases))


def new_kernel(name: str, folder: str | Path = ".") -> StarterFiles:
    """Write NAME.cu (a simple, correct starting kernel) and its launch facts in attnbench.toml."""
    return write_starter(name, Path(folder))
