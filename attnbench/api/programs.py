"""The public API for the user's own code: judging whole programs as the course does, and a starting
kernel with its launch facts. The command line renders what these return."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from attnbench.judge import course_judge as judging
from attnbench.cases.inputs import ProgressFactory, bytes_to_write, no_progress
from attnbench.errors import UsageError
from attnbench.kernels.starter import StarterFiles, write_starter
from attnbench.results.metadata import collect
from attnbench.results.resultset import ResultSet

Finished = Callable[[int, int, "judging.JudgedCase"], None]


def judge(program: str, cases: str | Sequence[str] = "course", *, launcher: str | None = None, time_limits: str = "course",
          args: str = judging.DEFAULT_ARGS, timeout: float | None = None, progress: ProgressFactory = no_progress,
          finished: Finished | None = None, command: str | None = None) -> tuple[judging.Judgement, ResultSet]:
    """Run PROGRAM IN OUT on each case in its own process group, time the whole process, check the output
    by the course's rule; returns the judgement and its result set (kind "judge")."""
    prog = judging.make_program(program, launcher, args)
    limits = judging.load_time_limits(time_limits)
    inputs = judging.cases_for(cases)
    if not inputs:
        raise UsageError(f"--cases {cases if isinstance(cases, str) else ','.join(cases)!r} names no case")
    judgement = judging.run_judge(prog, inputs, limits, timeout, progress, finished or (lambda *a: None))
    return judgement, judging.judge_results(judgement, collect(None, False, command))


def judge_writes(cases: str | Sequence[str] = "course") -> int:
    """Bytes a judge of these cases will write to the suite's data folder before it starts (inputs and
    references not generated yet); 0 when all are there."""
    return bytes_to_write(judging.cases_for(cases))


def new_kernel(name: str, folder: str | Path = ".") -> StarterFiles:
    """Write NAME.cu (a simple, correct starting kernel) and its launch facts in attnbench.toml."""
    return write_starter(name, Path(folder))
