"""attnbench.judge.class_slurm: the same class judged through a real one-node Slurm (marker `slurm`) gives the
same verdicts and order as judged here; a lost job is resubmitted by resume; and (with each job's call made
here) what the class's listener hears."""

from __future__ import annotations

import pytest

from attnbench.api import programs as api_programs
from attnbench.judge import class_slurm
from attnbench.spread.slurm import SlurmOptions, result_file
from tests.judge.classes import CASES, ORDER, RANKS, can_build, class_sandbox, make_class, verdicts
from tests.spread.test_slurm import cluster  # noqa: F401 (the fixture: a Slurm that answers, or a skip)


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    if not can_build():
        pytest.skip("no C compiler or make")
    return make_class(tmp_path_factory.mktemp("class"))


@pytest.mark.slurm
def test_a_class_through_slurm_gets_the_same_verdicts_and_order(cluster, classroom, tmp_path):  # noqa: F811
    local = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, sandbox=class_sandbox())
    options = SlurmOptions(folder=tmp_path / "jobs", poll_s=0.5, time_min=5)
    events = []
    remote = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, executor="slurm", sandbox=class_sandbox(),
                                      slurm=options, listener=events.append)
    assert [r.name for r in remote.rows] == ORDER and {r.name: r.rank for r in remote.rows} == RANKS
    assert verdicts(remote) == verdicts(local)
    assert [r.reruns for r in remote.rows] == [3, 1, 1, 1, 1]  # the top one, rerun in a job of its own
    assert remote.settings["slurm_jobs_folder"] == str(tmp_path / "jobs")
    assert len(list((tmp_path / "jobs").glob("*_result.pkl"))) == 6  # five submissions, one rerun
    erin = next(r for r in remote.rows if r.name == "erin")
    assert [(row.name, row.build_message, cases) for row, cases in (e.payload for e in events if e.what == "row")
            if row.name == "erin"] == [("erin", erin.build_message, 2)]


@pytest.mark.slurm
def test_resume_resubmits_what_was_lost(cluster, classroom, tmp_path):  # noqa: F811
    options = SlurmOptions(folder=tmp_path / "jobs", poll_s=0.5, time_min=5)
    first = api_programs.judge_class([classroom / "alice", classroom / "carol.c"], CASES, time_limits="none",
                                     rerun_top=0, executor="slurm", slurm=options, sandbox=class_sandbox())
    run = class_slurm.load_class_run(tmp_path / "jobs")
    lost = result_file(run.folder, run.first_ids["carol"])
    lost.unlink()
    run.rows = {}  # as if the wait had been interrupted before every row was back
    run.save()
    again = api_programs.resume_class(tmp_path / "jobs")
    assert verdicts(again) == verdicts(first), {r.name: r.build_message for r in again.rows}  # why a row is empty
    resumed = class_slurm.load_class_run(tmp_path / "jobs")
    assert resumed.first_ids["alice"] == run.first_ids["alice"]  # kept: its result was there
    assert resumed.first_ids["carol"] != run.first_ids["carol"]  # submitted again
    assert result_file(resumed.folder, resumed.first_ids["carol"]).exists() and not lost.exists()


def test_a_class_through_slurm_tells_its_listener_each_row_and_rerun_as_progress(classroom, tmp_path, monkeypatch):
    """Without a Slurm: each job's call made here, its result heard as the executor hears it; the class's
    caller hears `Progress` events, one "row" per submission and one "rerun_row" per rerun job."""
    from attnbench.output.render.terminal import judge_line
    from attnbench.spread.executor import Progress

    class InThisProcess:
        def __init__(self, *settings):
            pass

        def run(self, jobs, listener):
            results = {}
            for key, (call, args) in jobs.items():
                results[key] = call(*args)
                listener(Progress("result", key, None, results[key]))
            return results

    monkeypatch.setattr(class_slurm, "SlurmExecutor", InThisProcess)
    events = []
    board = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=1, executor="slurm",
                                     sandbox=class_sandbox(), slurm=SlurmOptions(folder=tmp_path / "jobs"),
                                     listener=events.append)
    assert [r.name for r in board.rows] == ORDER and all(isinstance(e, Progress) for e in events)
    erin = next(r for r in board.rows if r.name == "erin")
    assert [judge_line(e) for e in events] == [
        "alice judged: 2 of 2 passed", "bob judged: 2 of 2 passed", "carol judged: 0 of 2 passed",
        "dave judged: 0 of 2 passed", f"erin judged: {erin.build_message}", "alice rerun: done"]
