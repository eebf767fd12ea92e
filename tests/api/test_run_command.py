"""`api.run`: one cell through the engine, returned as an outcome with its problems and exit status."""

from __future__ import annotations

import pytest

from attnbench import api
from attnbench.cases.testcase import Shape
from attnbench.errors import UsageError
from attnbench.kernels.catalogue import get_variant
from tests.conftest import skip_unless_runs


def test_run_returns_its_outcome_with_the_exit_status_the_command_exits_with(tmp_path):
    outcome = api.run("odd_17x48", "cpu", tmp_path / "out.bin", check=True, timing=api.TimingOptions(reps=1))
    assert isinstance(outcome, api.RunOutcome)
    assert outcome.exit_status == 0 and outcome.problems == ()
    assert outcome.measurement.verification.passed and (tmp_path / "out.bin").stat().st_size > 0


@pytest.mark.parametrize("tolerance", [{"atol": float("nan")}, {"atol": -1.0}, {"rtol": float("inf")}])
def test_run_and_verify_refuse_a_tolerance_that_is_no_finite_number_before_any_work(tmp_path, tolerance):
    """api.run(atol=nan, check=True) wrote the output and returned exit status 1 (a FAIL blamed on the variant);
    api.verify(atol=nan) said the output failed. The command line refused both options."""
    from attnbench.errors import UsageError

    with pytest.raises(UsageError, match="a tolerance must be a finite number"):
        api.run("odd_17x48", "cpu", tmp_path / "out.bin", check=True, timing=api.TimingOptions(reps=1), **tolerance)
    assert not (tmp_path / "out.bin").exists()
    api.run("odd_17x48", "cpu", tmp_path / "good.bin", timing=api.TimingOptions(reps=1))
    with pytest.raises(UsageError, match="a tolerance must be a finite number"):
        api.verify(tmp_path / "good.bin", "odd_17x48", **tolerance)
    with pytest.raises(UsageError, match="a tolerance must be a finite number"):
        api.compare(["cpu"], ["odd_17x48"], **tolerance)


def _hidden_input(path, rng):
    """The issue's hidden input: B 2, N 512, d 64, Q and K in [-3, 3], V up to 1000."""
    import numpy as np

    from attnbench.cases.testcase import Testcase, write_testcase

    qkv = rng.uniform(-3.0, 3.0, size=(2, 3, 512, 64))
    qkv[:, 2] *= 1000 / 3
    qkv[1, 2, 7, 9] = 1000.0
    write_testcase(path, Testcase(qkv.astype(np.float32)))
    return path


@pytest.mark.gpu
def test_wgmma16s_refuses_v_up_to_1000_before_any_launch_and_the_course_default_takes_wgmma3x(gpu, tmp_path, rng):
    from attnbench.errors import OutOfPrecision

    skip_unless_runs(get_variant("wgmma16s"), Shape(2, 512, 64), gpu)
    hidden = _hidden_input(tmp_path / "hidden.in", rng)
    out = tmp_path / "out.bin"
    with pytest.raises(OutOfPrecision, match=r"wgmma16s cannot meet 0.005 on this input: \|V\| up to 1000"):
        api.run(str(hidden), "wgmma16s", out, check=True, timing=api.TimingOptions(reps=2))
    assert not out.exists()  # refused before the first pass: nothing written
    notes = []
    outcome = api.run(str(hidden), None, out, check=True, timing=api.TimingOptions(reps=2), accuracy="course",
                      notice=notes.append)
    assert outcome.measurement.variant == "wgmma3x" and outcome.exit_status == 0
    assert any("wgmma16s cannot meet 0.005" in note for note in notes)


def test_run_refuses_an_input_out_of_its_variants_precision_before_writing_anything(tmp_path, rng):
    from dataclasses import replace

    from attnbench.errors import OutOfPrecision

    rounded = replace(get_variant("cpu"), unit="wgmma16s")  # the cpu variant given split FP16's roundings
    hidden, out = _hidden_input(tmp_path / "hidden.in", rng), tmp_path / "out.bin"
    with pytest.raises(OutOfPrecision, match=r"^cpu cannot meet 0.005 on this input: \|V\| up to 1000 gives FP16"):
        api.run(str(hidden), rounded, out, check=True, timing=api.TimingOptions(reps=1))
    assert not out.exists()
    outcome = api.run(str(hidden), rounded, out, check=True, atol=2.0, timing=api.TimingOptions(reps=1))
    assert outcome.exit_status == 0 and out.exists()  # a tolerance its rounding can hold: it runs


@pytest.mark.parametrize("case, out", [("", "o.bin"), ("t02", ""), ("  ", None)])
def test_an_empty_case_or_output_from_python_is_bad_usage_naming_which(case, out, tmp_path):
    """From Python `run("")` said ".: is a directory" (the command line refuses an empty word already)."""
    with pytest.raises(UsageError, match=("case" if not case.strip() else "out") + " is empty"):
        api.run(case, "cpu", tmp_path / out if out else out)


def test_hot_with_a_host_variant_is_said_to_change_nothing(tmp_path):
    """`run --variant cpu --hot` was taken and did nothing, without a word (the host flushes no GPU cache)."""
    said: list[str] = []
    api.run("odd_17x48", "cpu", tmp_path / "out.bin", timing=api.TimingOptions(reps=1, hot=True), notice=said.append)
    assert said == ["--hot: the cpu variant runs on the host, where no GPU cache is flushed; it changes nothing"]
    said.clear()
    api.run("odd_17x48", "cpu", tmp_path / "out.bin", timing=api.TimingOptions(reps=1), notice=said.append)
    assert said == []
