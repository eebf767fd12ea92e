"""The Slurm options a compare or sweep states: a Slurm run's jobs folder is a new one under the results."""

from pathlib import Path

from attnbench.api.spread import slurm_options


def test_a_slurm_run_gets_a_jobs_folder_under_the_results_and_a_local_one_none(tmp_path):
    slurm = slurm_options("slurm", tmp_path, partition="nvidia", gres="gpu:1", time_min=5)
    assert (slurm.partition, slurm.gres, slurm.time_min) == ("nvidia", "gpu:1", 5)
    assert Path(slurm.folder).parent == tmp_path / "slurm"
    assert slurm_options("local", tmp_path, partition="nvidia").folder is None
