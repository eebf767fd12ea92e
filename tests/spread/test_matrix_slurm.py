"""attnbench.spread.matrix_slurm: packing cells into jobs, following jobs without sacct, and (marker `slurm`)
a compare through a real one-node cluster started by tools/slurm_local.sh (CI exports its SLURM_CONF)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnbench import api
from attnbench.bench.check_rule import CourseRule
from attnbench.bench.sampler import TimingPolicy
from attnbench.cases.inputs import inputs_for
from attnbench.cli import main
from attnbench.kernels.catalogue import variants_for
from attnbench.results.resultset import load
from attnbench.spread import matrix_slurm, slurm
from attnbench.spread.cellgroups import CellPlan
from attnbench.spread.executor import quiet_listener
from tests.spread.test_slurm import cluster  # noqa: F401 (the fixture: a Slurm that answers, or a skip)

CASES = "odd_17x48,odd_100x32,odd_1000x64"


def essentials(result):
    cells = [(c.variant, c.case, c.status, c.check) for c in result.cells]
    return cells, [c.to_dict() for c in result.cases], result.baseline


def test_cells_are_packed_into_jobs_of_about_the_target_length():
    variants = variants_for("cpu,naive")
    inputs = inputs_for("odd,t02,t29")
    jobs = matrix_slurm.pack_jobs(variants, inputs, 60.0)
    placed = sorted(i for job in jobs for i in job)
    assert placed == list(range(len(inputs)))  # every input once, with all its variants
    seconds = [sum(matrix_slurm.group_seconds(variants, inputs[i]) for i in job) for job in jobs]
    assert all(s <= 60.0 or len(job) == 1 for s, job in zip(seconds, jobs))
    assert len(matrix_slurm.pack_jobs(variants, inputs, 1e9)) == 1
    assert len(matrix_slurm.pack_jobs(variants, inputs, 1e-3)) == len(inputs)


def test_a_job_that_leaves_the_queue_without_a_result_is_lost_not_waited_for(tmp_path, monkeypatch):
    variants = variants_for("cpu")
    inputs = inputs_for(CASES)
    plan = CellPlan.of(variants, lambda v: TimingPolicy(warmup=0, reps=1, flush_l2=False), CourseRule(0.005, 0.0))
    options = slurm.SlurmOptions(folder=tmp_path, poll_s=0.01, lost_after_s=0.05)
    run = matrix_slurm.SlurmRun("compare", plan, inputs, [[0, 1], [2]], options, {}, job_ids=["7_0", "7_1"])
    (tmp_path / "7_1_0_log.err").write_text("slurmstepd: error: *** JOB 7 CANCELLED ***\n")
    monkeypatch.setattr(slurm, "squeue_states", lambda: {"7_0": "RUNNING"})
    with pytest.raises(AssertionError):  # job 7_0 is still running: the wait goes on (stopped here)
        matrix_slurm.collect(run, quiet_listener, sleep=lambda s: (_ for _ in ()).throw(AssertionError))
    monkeypatch.setattr(slurm, "squeue_states", lambda: {"7_0": "FAILED"})
    results = matrix_slurm.collect(run, quiet_listener, sleep=lambda s: None)
    infos, cells, _ = matrix_slurm.merged(run, results)
    assert [(c.case, c.status) for c in cells] == [(i.label, "error") for i in inputs]
    assert cells[0].message == "Slurm job 7_0 ended (FAILED) without a result"
    assert cells[2].message == ("Slurm job 7_1 ended (gone from the queue) without a result; "
                                "log 7_1_0_log.err: slurmstepd: error: *** JOB 7 CANCELLED ***")
    assert [i.note for i in infos] == ["not run"] * 3


def test_a_jobs_pytorch_versions_reach_the_merged_run():
    variants = variants_for("cpu")
    inputs = inputs_for(CASES)
    plan = CellPlan.of(variants, lambda v: TimingPolicy(), CourseRule(0.005, 0.0))
    run = matrix_slurm.SlurmRun("compare", plan, inputs, [[0, 1, 2]], slurm.SlurmOptions(), {}, job_ids=["7_0"])
    versions = {"torch_version": "2.11.0", "torch_cuda_version": "13.0"}
    result = {"facts": {"name": "NVIDIA H200"}, "arch": "sm_90", "torch_versions": versions, "host": "node1",
              "groups": []}
    _, _, summary = matrix_slurm.merged(run, {0: result})
    assert summary.torch_versions == versions and summary.facts() == {"name": "NVIDIA H200"}


def test_a_compare_whose_jobs_never_went_out_leaves_no_jobs_folder(tmp_path, monkeypatch):
    """A Slurm compare that sbatch refused left results/slurm/<stamp>/attnbench-run.pkl behind, --no-save or not:
    nothing went out, so nothing is there to resume."""
    def refused(*args, **kwargs):
        raise slurm.SlurmUnavailable("sbatch refused the jobs: invalid partition specified: nosuch")

    monkeypatch.setattr(slurm, "submit_array", refused)
    (tmp_path / "mine").mkdir()  # the user's own folder: kept
    results = tmp_path / "mine" / "results"
    result = CliRunner().invoke(main, ["compare", "-v", "cpu", "-c", CASES, "--executor", "slurm", "--partition",
                                       "nosuch", "--no-save", "--results-dir", str(results)])
    assert result.exit_code == 3 and "sbatch refused the jobs" in result.output, result.output
    assert not results.exists() and (tmp_path / "mine").is_dir()
    assert not list(tmp_path.rglob("*.pkl"))


def test_resume_refuses_a_folder_that_is_not_a_jobs_folder(tmp_path):
    result = CliRunner().invoke(main, ["compare", "--resume", str(tmp_path)])
    assert result.exit_code == 2 and "not an attnbench Slurm jobs folder" in result.output


@pytest.mark.slurm
def test_compare_through_slurm_equals_a_local_run(cluster, tmp_path):  # noqa: F811
    local = api.compare("cpu", CASES)
    result = CliRunner().invoke(main, ["compare", "-v", "cpu", "-c", CASES, "--executor", "slurm", "--time", "5",
                                       "--results-dir", str(tmp_path), "--job-seconds", "0.5"])
    assert result.exit_code == 0, result.output
    saved = load(next(tmp_path.glob("*_compare_*.json")))
    assert essentials(saved) == essentials(local)
    assert saved.settings.executor == "slurm"
    folder = next((tmp_path / "slurm").iterdir())
    assert len(list(folder.glob("*_result.pkl"))) == 3  # three jobs, one array, logs in the jobs folder
    assert len({p.name.split("_")[0] for p in folder.glob("*_result.pkl")}) == 1


@pytest.mark.slurm
def test_resume_resubmits_a_lost_job_and_finishes_the_run(cluster, tmp_path):  # noqa: F811
    local = api.compare("cpu", CASES)
    options = slurm.SlurmOptions(folder=tmp_path / "jobs", job_seconds=0.5, poll_s=0.5, time_min=5)
    first = api.compare("cpu", CASES, executor="slurm", slurm=options)
    assert essentials(first) == essentials(local)
    lost = sorted((tmp_path / "jobs").glob("*_result.pkl"))[1]
    lost.unlink()
    notes = []
    again = api.resume(tmp_path / "jobs", notice=notes.append)
    assert notes == ["resubmitted 1 of 3 job(s) that had no result"]
    assert essentials(again) == essentials(local)


@pytest.mark.slurm
def test_a_cancelled_job_becomes_error_cells_and_the_rest_come_back(cluster, tmp_path):  # noqa: F811
    variants = variants_for("cpu")
    inputs = inputs_for(CASES)
    plan = CellPlan.of(variants, lambda v: TimingPolicy(warmup=0, reps=1, flush_l2=False), CourseRule(0.005, 0.0))
    options = slurm.SlurmOptions(folder=tmp_path, poll_s=0.5, lost_after_s=5, array_parallelism=1, time_min=5)
    run = matrix_slurm.SlurmRun("compare", plan, inputs, [[0], [1], [2]], options, {})
    matrix_slurm.submit(run, [0, 1, 2])
    subprocess.run(["scancel", str(run.job_ids[2])], check=True, timeout=30)
    infos, cells, _ = matrix_slurm.merged(run, matrix_slurm.collect(run, quiet_listener))
    assert [c.status for c in cells] == ["ok", "ok", "error"]
    assert f"Slurm job {run.job_ids[2]} ended" in cells[2].message
    assert Path(run.folder, matrix_slurm.RUN_FILE).exists()


def test_resume_takes_its_selection_from_the_folder(tmp_path):
    result = CliRunner().invoke(main, ["compare", "--resume", str(tmp_path), "-v", "cpu"])
    assert result.exit_code == 2 and "drop --variants, --cases and --against" in result.output


def test_a_job_whose_context_is_lost_measures_no_more(monkeypatch):
    from attnbench.cases.inputs import SyntheticInput
    from attnbench.cases.testcase import Shape
    from attnbench.spread import workers
    from attnbench.spread.cellgroups import OpenDevice
    from tests.bench.fake_cells import LosingGpu, UnreadableInput, fake_cells

    fault = "an illegal memory access was encountered"
    ran = fake_cells(monkeypatch, {"naive": "error"})
    monkeypatch.setattr(workers, "open_device", lambda device, variants: OpenDevice(LosingGpu(fault), None, {}))
    plan = CellPlan.of(variants_for("naive,cpu"), lambda v: TimingPolicy(warmup=0, reps=1), CourseRule())
    first = SyntheticInput(Shape(1, 9, 8), 1)
    job = matrix_slurm.run_job(plan, [first, UnreadableInput(Shape(1, 9, 8), 2, "never_read")])  # loading it would raise
    why = f"not run: the CUDA context was lost after naive failed on {first.label} ({fault})"
    assert ran == ["naive"]
    assert [(c["variant"], c["status"], c["message"]) for c in job["groups"][0]["cells"]] == [
        ("naive", "error", "naive failed"), ("cpu", "error", why)]
    later = job["groups"][1]
    assert later["info"]["origin"] == "not loaded" and later["info"]["note"] == why
    assert [(c["variant"], c["status"], c["message"]) for c in later["cells"]] == [
        ("naive", "error", why), ("cpu", "error", why)]


def test_the_matrix_hears_the_slurm_executors_typed_events(tmp_path):
    """Each job's result becomes its cells (`CellFinished`, with their work); a submission is one notice, which
    says whether the jobs went out again."""
    from attnbench.results.matrix_events import CellFinished

    variants = variants_for("cpu")
    inputs = inputs_for("odd_17x48")
    plan = CellPlan.of(variants, lambda v: TimingPolicy(warmup=0, reps=1), CourseRule())
    run = matrix_slurm.SlurmRun("compare", plan, inputs, [[0]], slurm.SlurmOptions(folder=tmp_path), {})
    heard, notes = [], []
    hear = matrix_slurm._hearing(run, heard.append, notes.append)
    hear(slurm.JobsSubmitted([0], 1, False, "12"))
    hear(slurm.JobsSubmitted([0], 1, True, "13"))
    hear(slurm.JobResult(0, {"error": "Slurm job 12_0 failed: MemoryError"}))
    assert notes[0].startswith("1 Slurm job(s) submitted as array 12; jobs folder ")
    assert notes[1] == "resubmitted 1 of 1 job(s) that had no result"
    assert [(type(e), e.cell.case, e.cell.status, e.cell.message) for e in heard] == [
        (CellFinished, inputs[0].label, "error", "Slurm job 12_0 failed: MemoryError")]
    assert heard[0].work > 0
