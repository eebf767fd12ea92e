"""`api.run`: one cell through the engine, returned as an outcome with its problems and exit status."""

from __future__ import annotations

from attnbench import api


def test_run_returns_its_outcome_with_the_exit_status_the_command_exits_with(tmp_path):
    outcome = api.run("odd_17x48", "cpu", tmp_path / "out.bin", check=True, timing=api.TimingOptions(reps=1))
    assert isinstance(outcome, api.RunOutcome)
    assert outcome.exit_status == 0 and outcome.problems == ()
    assert outcome.measurement.verification.passed and (tmp_path / "out.bin").stat().st_size > 0
