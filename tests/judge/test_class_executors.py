"""attnbench.judge.class_executors: every executor carries a class; over Slurm the class judged through a real
one-node Slurm (marker `slurm`) gives the same verdicts and order as judged here, its jobs folder goes once it
is judged, a lost job is submitted again by resume, and a run none of whose jobs went out leaves no folder.
(The same class on every executor, without a cluster: tests/judge/test_class_flow.py.)"""

from __future__ import annotations

import pytest

from attnbench.api import programs as api_programs
from attnbench.judge import class_executors
from attnbench.spread import slurm
from attnbench.spread.executor import EXECUTORS
from attnbench.spread.slurm import SlurmOptions, result_file
from tests.judge.classes import CASES, ORDER, RANKS, class_sandbox, verdicts
from tests.spread.test_slurm import cluster  # noqa: F401 (the fixture: a Slurm that answers, or a skip)




def test_every_executor_a_run_can_choose_carries_a_class():
    assert set(class_executors.CARRIERS) == {kind.name for kind in EXECUTORS}


def test_a_slurm_class_none_of_whose_jobs_went_out_stops_and_leaves_no_jobs_folder(classroom, tmp_path, monkeypatch):
    def refused(*args):
        raise slurm.SlurmUnavailable("sbatch refused the jobs: invalid partition specified: nosuch")

    monkeypatch.setattr(slurm, "submit_array", refused)
    monkeypatch.setattr(api_programs, "refuse_without_slurm", lambda: None)  # no sbatch needed: it refuses here
    board = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=0, executor="slurm",
                                     slurm=SlurmOptions(folder=tmp_path / "results" / "jobs"), sandbox=class_sandbox())
    assert "sbatch refused the jobs" in board.settings["stopped_by"] and "slurm_jobs_folder" not in board.settings
    assert not (tmp_path / "results").exists()  # the folder and the parent made for it


def test_a_slurm_class_interrupted_cancels_its_jobs_still_out_before_their_builds_go(classroom, tmp_path, monkeypatch):
    """Ctrl-C while the jobs were queued or running: the class removed their builds and kept the jobs, which then
    sent back JUDGE ERRORs (the builds gone) that a resume took for their results (newcomer pass 16)."""
    jobs = tmp_path / "jobs"
    monkeypatch.setattr(api_programs, "refuse_without_slurm", lambda: None)
    monkeypatch.setattr(slurm, "submit_array", lambda folder, options, name, calls: [f"31_{i}" for i, _ in enumerate(calls)])

    def interrupted_while_out(self, work, listener):
        self.submit(work, list(work))  # the jobs go out (never to run here), then Ctrl-C in the wait
        raise KeyboardInterrupt

    cancelled: list = []
    monkeypatch.setattr(slurm.SlurmExecutor, "run", interrupted_while_out)
    monkeypatch.setattr(class_executors, "cancel", lambda ids: cancelled.append(
        (sorted(ids), any(p.name.startswith("attnbench-class-") for p in jobs.iterdir()))))
    board = api_programs.judge_class([classroom / "alice", classroom / "carol.c"], CASES, time_limits="none",
                                     rerun_top=0, executor="slurm", slurm=SlurmOptions(folder=jobs),
                                     sandbox=class_sandbox())
    assert board.interrupted and cancelled == [(["31_0", "31_1"], True)]  # both jobs, their builds still there


@pytest.mark.slurm
def test_a_class_through_slurm_gets_the_same_verdicts_and_order(cluster, classroom, tmp_path):  # noqa: F811
    local = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, sandbox=class_sandbox())
    options = SlurmOptions(folder=tmp_path / "jobs", poll_s=0.5, time_min=5)
    remote = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, executor="slurm",
                                      sandbox=class_sandbox(), slurm=options)
    assert [r.name for r in remote.rows] == ORDER and {r.name: r.rank for r in remote.rows} == RANKS
    assert verdicts(remote) == verdicts(local)
    assert [r.reruns for r in remote.rows] == [3, 1, 1, 1, 1]
    assert set(remote.settings["seeds"]) == {"first", "rerun 2", "rerun 3"}
    assert not (tmp_path / "jobs").exists() and "slurm_jobs_folder" not in remote.settings


@pytest.mark.slurm
def test_resume_resubmits_what_was_lost(cluster, classroom, tmp_path, monkeypatch):  # noqa: F811
    """Ctrl-C once the first jobs are back, before the flow heard them; one result then lost: the resume finds
    the one that is there and submits the lost one again."""
    options = SlurmOptions(folder=tmp_path / "jobs", poll_s=0.5, time_min=5)
    real = slurm.SlurmWorkers.run

    def interrupted_once_back(self, jobs, listener):
        real(self, jobs, lambda event: None)
        raise KeyboardInterrupt

    monkeypatch.setattr(slurm.SlurmWorkers, "run", interrupted_once_back)
    first = api_programs.judge_class([classroom / "alice", classroom / "carol.c"], CASES, time_limits="none",
                                     rerun_top=0, executor="slurm", slurm=options, sandbox=class_sandbox())
    assert first.interrupted and first.settings["slurm_jobs_folder"] == str(tmp_path / "jobs")
    monkeypatch.setattr(slurm.SlurmWorkers, "run", real)
    run = class_executors.load_class_run(tmp_path / "jobs")
    kept, lost = result_file(run.folder, run.ids[(1, "alice")]), result_file(run.folder, run.ids[(1, "carol")])
    lost.unlink()
    submitted: list = []
    submit = slurm.submit_array
    monkeypatch.setattr(slurm, "submit_array", lambda folder, options, name, calls: submitted.append(
        [job.submission for _, (_, jobs) in calls for job in jobs]) or submit(folder, options, name, calls))
    again = api_programs.resume_class(tmp_path / "jobs")
    assert submitted == [["carol", "carol"]]  # carol's two cases, one Slurm job; alice's result was there
    assert verdicts(again) == {"alice": {"odd_17x48": "PASS", "odd_100x32": "PASS"},
                               "carol": {"odd_17x48": "WRONG", "odd_100x32": "WRONG"}}
    assert not kept.exists() and not (tmp_path / "jobs").exists()  # judged: the jobs folder went
