"""Every submission of a class built at once, so a class's builds cost about its longest build, not their sum.

Each build is `submissions.build` as ever (its copy, the sandbox, its limits and its timeout); only when they
run changes. They run in worker processes, never threads: the judge kills every process that appears under
it while a program runs (attnbench.sandbox.process), so two builds in one process would kill each other's
compilers. The workers are the one pool work is spread on (`spread.pool.GpuPool`, its workers standing in for
devices, as ATTNBENCH_CPU_WORKERS's do): spawned, not forked, a worker that dies is noticed, and Ctrl-C stops
them all at once.

The class's flow builds everything first, before any timed run, rather than beside the runs: a build is a
descendant of the judge, and the sweep that ends each run here kills every descendant that appeared while the
program ran, a build's compiler included; and a run in this process is kept on all of its cores, which a build
beside it would share. So while builds run, no core is a timed run's, and they may use every core the judge
has (`build_workers`). The results come back in the submissions' order, whatever order the builds end in.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

from attnbench.judge.build_worker import BuildEnded, BuildSettings, ClassBuildWork, SandboxMissing, built_submission
from attnbench.judge.classroom import ClassSettings
from attnbench.judge.phases import phase
from attnbench.judge.submissions import Built, Submission
from attnbench.sandbox.program_run import clear_after_workers
from attnbench.sandbox.reaper import descendants
from attnbench.sandbox.room import SandboxUnavailable
from attnbench.sandbox.staging import remove_tree
from attnbench.spread.devices import Device
from attnbench.spread.executor import ExecutorEvent, JobTold
from attnbench.spread.pool import GpuPool


def build_workers(cores: Sequence[int], builds: int) -> int:
    """How many builds run at once: one per core the builds may use, no more than there are builds, at least 1."""
    return max(1, min(len(cores), builds))


def _build_settings(settings: ClassSettings) -> BuildSettings:
    return BuildSettings(settings.build_timeout_s, settings.sandbox, settings.build)


def build_all(submissions: Sequence[Submission], build_root: Path, settings: ClassSettings,
              cores: Sequence[int], on_built: Callable[[], None] = lambda: None) -> list[Built]:
    """Every submission built under build_root, `build_workers` at a time on `cores` (phase "builds"); their
    builds in the submissions' order (`on_built` hears each as it ends). A build whose worker died is built
    again here, alone."""
    with phase("builds"):
        workers = build_workers(cores, len(submissions))
        # one at a time has nothing to overlap: no worker to start, every build is made here
        done = _built_on_workers(submissions, build_root, settings, cores, workers, on_built) if workers > 1 else {}
        for i, submission in enumerate(submissions):
            if i not in done:  # built here: alone, or once more, afresh, where its worker died (killed for memory, say)
                remove_tree(build_root / submission.slug)
                done[i] = built_submission(submission, build_root, _build_settings(settings))
                on_built()
        return [done[i] for i in range(len(submissions))]


def _built_on_workers(submissions: Sequence[Submission], build_root: Path, settings: ClassSettings,
                      cores: Sequence[int], workers: int, on_built: Callable[[], None]) -> dict[int, Built]:
    """The builds that `workers` worker processes finished, by the submission's index."""
    done: dict[int, Built] = {}

    def hear(event: ExecutorEvent) -> None:
        match event:
            case JobTold(job=i, event=BuildEnded(built=built)):
                done[i] = built
                on_built()
            case JobTold(event=SandboxMissing(why=why)):
                raise SandboxUnavailable(why)

    work = ClassBuildWork(_build_settings(settings), build_root, tuple(cores))
    before = set(descendants(os.getpid()))
    try:
        with GpuPool([Device(i, stand_in=True) for i in range(workers)], work) as pool:
            pool.run(list(submissions), hear)
    finally:
        clear_after_workers(before)
    return done
