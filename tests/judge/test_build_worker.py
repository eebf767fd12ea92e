"""attnbench.judge.build_worker: what a class's build worker, a fresh Python, imports to unpickle its work and its
job, and builds with, is what a build needs: nothing of the judge's runs, checks or numpy (0.85 s a worker before,
most of a small machine's builds phase)."""

from __future__ import annotations

import pickle
import subprocess
import sys

from attnbench.judge.build_worker import BuildSettings, ClassBuildWork, built_submission
from attnbench.judge.course_build import BuildRules
from attnbench.judge.submissions import find_submissions
from attnbench.sandbox.room import SandboxSettings
from tests.judge.classes import make_class

HEAVY = ("numpy", "attnbench.judge.classroom", "attnbench.judge.class_work", "attnbench.judge.course_judge",
         "attnbench.sandbox.program_run", "attnbench.sandbox.outcome", "attnbench.kernels.nvcc", "attnbench.bench",
         "attnbench.results.scoreboard", "rich", "click")


def test_a_worker_unpickles_its_work_and_job_without_the_judges_runs_or_numpy(tmp_path):
    (tmp_path / "class").mkdir()
    job = find_submissions([make_class(tmp_path / "class")])[0]
    work = ClassBuildWork(BuildSettings(5.0, SandboxSettings(), BuildRules()), tmp_path / "builds", (0,))
    payload = pickle.dumps((work, job))
    # what a spawned worker runs first: the pool's worker function, then the work and the job unpickled
    probe = ("import pickle, sys\nfrom attnbench.spread.pool import worker_main\n"
             "work, job = pickle.loads(sys.stdin.buffer.read())\n"
             f"print(sorted(m for m in sys.modules if m in {HEAVY!r} or m.startswith(tuple(h + '.' for h in {HEAVY!r}))))")
    done = subprocess.run([sys.executable, "-c", probe], input=payload, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "[]"


def test_a_judge_side_failure_is_the_rows_message_not_the_class_end(tmp_path, monkeypatch):
    from attnbench.judge import build_worker

    (tmp_path / "class").mkdir()
    job = find_submissions([make_class(tmp_path / "class")])[0]

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(build_worker, "build", broken)
    built = built_submission(job, tmp_path / "builds", BuildSettings(5.0, SandboxSettings(), BuildRules()))
    assert not built.ok and built.message == ("the judge could not finish this: OSError: [Errno 28] No space left "
                                              "on device")
