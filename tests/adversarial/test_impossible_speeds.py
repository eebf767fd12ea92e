"""The corpus's impossible speeds on the GPU: a kernel that skips the work is IMPOSSIBLE (exit 1), and
the built-in variants and the torch peer stay OK on t10 and t22 (none comes near its floor).

`zeros.cu` writes zeros and computes nothing. Its output is wrong, so it is run without `--check`: the
first pass's NaN/Inf scan passes zeros; the rows checked after every sample, or the physical floor, refuse it. `lazy.cu` computes right on
its first launch over an output buffer and skips the work afterwards (issue 22's lazy kernel), so its
checked first pass passes and only its timed passes lie. t11 keeps its float64 reference cheap (N =
128) while its floor (0.17 ms, memory-bound) is far above two near-empty launches. (A fake that only
shortens the reported time is the CPU tests' job: tests/bench/test_matrix.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnbench.cli import main

ZEROS = Path(__file__).parent / "kernels" / "impossible" / "zeros.cu"
LAZY = ZEROS.with_name("lazy.cu")
BUILTINS_ON_HOPPER = "qreg,tf32x3,wgmma3x,fa2simt,torch"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["t29", "t22"])
def test_a_kernel_that_does_no_work_gets_no_speed_in_run(gpu, tmp_path, case):
    result = invoke("run", case, str(tmp_path / "o.bin"), "--variant", str(ZEROS), "--reps", "10", "--json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["tflops"] is None and data["peak_fraction"] is None and data["nonfinite"] == 0
    assert data["timed_check"]["passed"] is False  # the rows checked after its first warm-up pass are zeros
    assert data["impossible"] is None or "below the physical floor" in data["impossible"]


@pytest.mark.gpu
def test_a_lazy_kernel_passes_its_check_and_is_impossible(gpu, tmp_path):
    # --no-pipeline: the pipeline's ring reuses its output buffers chunk after chunk, which this kernel
    # takes for "computed before" and fails its check; unpipelined, the first pass is one launch, right
    result = invoke("run", "t11", str(tmp_path / "o.bin"), "--variant", str(LAZY), "--check", "--json",
                    "--no-pipeline")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["tflops"] is None  # no speed, whichever check caught it
    # the floor's catch; a check of the timed passes' output may say WRONG first, which is as good
    assert data["impossible"] or not data["verification"]["passed"], data
    result = invoke("compare", "--variants", f"{LAZY},qreg", "--cases", "t11", "--no-save")
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert ("IMPOSSIBLE" in text or "WRONG" in text) and "FASTER" not in text


@pytest.mark.gpu
def test_a_kernel_that_does_no_work_gets_no_speed_in_compare(gpu, tmp_path):
    result = invoke("compare", "--variants", f"{ZEROS},qreg", "--cases", "t29", "--reps", "10", "--no-save")
    assert result.exit_code == 1, result.output
    assert "FASTER" not in " ".join(result.output.split())  # never a speedup: WRONG by its check


@pytest.mark.gpu
def test_the_builtins_and_torch_stay_ok_with_their_clock_and_no_share_above_100(gpu, tmp_path):
    pytest.importorskip("torch")
    if gpu.compute_capability != (9, 0):
        pytest.skip("the list of variants is Hopper's (wgmma3x)")
    result = invoke("compare", "--variants", BUILTINS_ON_HOPPER, "--cases", "t10,t22", "--results-dir", str(tmp_path),
                    "--name", "builtins")
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "builtins.json").read_text())
    for cell in saved["cells"]:
        assert cell["status"] == "ok", (cell["variant"], cell["case"], cell["message"])
        m = cell["measurement"]
        assert m["floor"] is not None and m["impossible"] is None
        assert m["peak_fraction"] is None or 0 < m["peak_fraction"] <= 1.0, (cell["variant"], m["ceiling"])
        assert m["kernel"]["sm_clock"] is None or m["kernel"]["sm_clock"]["median"] > 0
