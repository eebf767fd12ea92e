"""A class's builds on a pool's worker process (`class_builds` runs them): one submission per job, built in the
sandbox as `submissions.build` builds it. Each worker is a fresh Python (spawned), and its imports were most of a
class's builds phase on a small machine (0.85 s a worker, for builds of 0.3 s): so this module, and what a job
and its settings unpickle into, import what a build needs and nothing of the judge's runs, checks or numpy
(a test keeps it so)."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

from attnbench.judge.course_build import BuildRules
from attnbench.judge.submissions import Built, Submission, build, failure_text
from attnbench.sandbox.room import SandboxSettings, SandboxUnavailable
from attnbench.spread.devices import Device
from attnbench.spread.executor import Emit


@dataclass(frozen=True)
class SandboxMissing:
    """--sandbox required and none could be made (a build's job or a case's): the class's end, raised in the
    parent."""

    why: str


@dataclass(frozen=True)
class BuildEnded:
    """A submission's build ended, built or not (a build's own event, from its worker)."""

    built: Built


@dataclass(frozen=True)
class BuildSettings:
    """What a build takes from the class's settings: its timeout, its sandbox and the course's build rules."""

    timeout_s: float
    sandbox: SandboxSettings
    rules: BuildRules


def _stopped(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@dataclass(frozen=True)
class ClassBuildWork:
    """A class's builds on a pool's worker: one submission per job, on the cores the builds may use."""

    settings: BuildSettings
    build_root: Path
    cores: tuple[int, ...]

    def open(self, device: Device, workers: int) -> tuple[None, None]:
        try:  # each build's cgroup cpuset is the cores of the process that runs it
            os.sched_setaffinity(0, set(self.cores))
        except (AttributeError, OSError):  # no affinity here (not Linux), or cores the cgroup forbids: unpinned
            pass
        # the pool stops a worker at once with SIGTERM (Ctrl-C): as an exception, so the build it runs is killed
        # whole on the way out (attnbench.sandbox.process), not left to run on
        signal.signal(signal.SIGTERM, _stopped)
        return None, None

    def close(self, state: None) -> None:
        pass  # each build let go of its own room: nothing is kept between jobs

    def run(self, job: Submission, state: None, emit: Emit) -> None:
        try:
            emit(BuildEnded(built_submission(job, self.build_root, self.settings)))
        except SandboxUnavailable as exc:  # --sandbox required, unmet: the class's end, raised in the parent
            emit(SandboxMissing(str(exc)))
        return None


def built_submission(submission: Submission, build_root: Path, settings: BuildSettings) -> Built:
    """One submission built (in the sandbox) under build_root; what goes wrong on the judge's side is its row's
    message, never the class's end (SandboxUnavailable, for --sandbox required, is raised)."""
    try:
        return build(submission, build_root, settings.timeout_s, settings.sandbox, settings.rules)
    except SandboxUnavailable:
        raise
    except Exception as exc:  # noqa: BLE001 - one submission's failure is its row's, never the class's
        return Built(submission, None, failure_text(exc))
