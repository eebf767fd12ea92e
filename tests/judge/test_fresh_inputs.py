"""attnbench.judge.fresh_inputs: suite cases drawn anew from secret seeds, in their shape and distribution,
with their reference; a saved seed rebuilds the very input."""

from __future__ import annotations

import numpy as np

from attnbench.cases.reference import reference_output
from attnbench.judge import course_judge as judging
from attnbench.judge.fresh_inputs import FreshInput, draw, seed_text, seeds_of


def test_a_fresh_input_keeps_the_cases_name_shape_and_distribution_and_its_seed_rebuilds_it():
    suite_input = judging.cases_for("odd_100x32")[0]
    first, second = draw([suite_input]), draw([suite_input])
    assert first[0].label == "odd_100x32" and first[0].shape == suite_input.shape
    assert first[0].seed != second[0].seed and first[0].seed.bit_length() > 64  # 128 bits of entropy
    case = judging.prepare_case(first[0])
    values = np.fromfile(case.input_path, dtype="<f4", offset=12)
    suite_values = suite_input.load().qkv.ravel()
    assert values.size == suite_values.size and values.min() >= -3 and values.max() < 3
    assert not np.array_equal(values, suite_values)  # not the suite's public values
    assert abs(values.mean()) < 0.05 and abs(values.std() - suite_values.std()) < 0.05
    assert case.input_path.stat().st_mode & 0o777 == 0o600
    seed = int(seeds_of(first)["odd_100x32"], 16)
    again = FreshInput("odd_100x32", suite_input.shape, seed, "odd_100x32").load()
    assert case.info.input_sha256 is None and seed_text(seed) in case.info.note  # the seed names the bytes
    assert np.array_equal(again.qkv.ravel(), values)
    assert np.allclose(case.reference, reference_output(again), atol=1e-6)


def test_one_program_keeps_the_suites_inputs_unless_asked(tmp_path):
    import shutil
    import subprocess

    import pytest

    from attnbench.api import programs as api_programs
    from tests.judge.classes import EXAMPLE

    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "attention"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(EXAMPLE), "-lm"], check=True)
    _, suite_run = api_programs.judge(str(exe), "odd_17x48", time_limits="none")
    _, fresh_run = api_programs.judge(str(exe), "odd_17x48", time_limits="none", fresh_inputs=True)
    assert suite_run.settings.seeds == {} and suite_run.cases[0].origin == "suite"
    assert list(fresh_run.settings.seeds) == ["odd_17x48"] and fresh_run.cases[0].origin == "fresh"
    assert [c.status for c in fresh_run.cells] == ["ok"]


def test_a_fresh_inputs_reference_is_made_on_the_judging_gpu_where_there_is_one(monkeypatch):
    from attnbench.cases import gpu_reference

    made = []
    monkeypatch.setattr(gpu_reference, "_availability", [""])  # as on a machine with a GPU
    monkeypatch.setattr(gpu_reference, "gpu_reference_output",
                        lambda testcase, progress, dtype: made.append(testcase.shape) or reference_output(
                            testcase, progress, dtype))
    fresh = draw(judging.cases_for("odd_17x48"))[0]
    case = judging.prepare_case(fresh)
    assert made == [fresh.shape] and case.reference.dtype == np.float32


def test_a_judge_killed_outright_leaves_fresh_inputs_the_next_judge_removes(tmp_path):
    """SIGKILL runs no exit handler: the folder stays, and the next process that draws inputs removes it."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = "from attnbench.judge.fresh_inputs import private_folder; print(private_folder(), flush=True)"
    env = {**__import__("os").environ, "TMPDIR": str(tmp_path)}
    killed = subprocess.Popen([sys.executable, "-c", code + "; import os; os.kill(os.getpid(), 9)"], cwd=root,
                              env=env, stdout=subprocess.PIPE, text=True)
    left = Path(killed.stdout.readline().strip())
    assert killed.wait(timeout=60) == -signal.SIGKILL and left.is_dir() and left.parent == tmp_path
    later = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                           timeout=60, check=True)
    assert not left.exists() and Path(later.stdout.strip()) != left
    assert not Path(later.stdout.strip()).exists()  # removed at its own exit
