"""attnbench.explain.ceiling_benchmarks: measured once then read from the cache, the `ceilings` command, and
cuda/ceilings.cu compiles without spills (no GPU needed) and measures on a GPU."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from attnbench.explain import ceiling_benchmarks as measuring
from attnbench.kernels.nvcc import BASE_NVCC_OPTIONS
from attnbench.locations import kernel_dir
from attnbench.results import ceilings as cl
from tests.results.test_ceilings import cache, sample  # noqa: F401

CUDA_DIR = kernel_dir()
NVCC = shutil.which("nvcc")


def test_get_or_measure_uses_the_cache_unless_refreshed(cache, monkeypatch):  # noqa: F811
    class FakeGpu:
        name = "NVIDIA H200"

    monkeypatch.setattr(cl, "driver_version", lambda gpu: "580.159.04")
    fresh = sample()
    fresh.ceilings = fresh.ceilings[:1]
    calls = []
    monkeypatch.setattr(measuring, "measure", lambda gpu: calls.append(gpu) or fresh)
    got, cached = measuring.get_or_measure(FakeGpu())
    assert (got, cached, len(calls)) == (fresh, False, 1)
    got, cached = measuring.get_or_measure(FakeGpu())
    assert (got, cached, len(calls)) == (fresh, True, 1)
    got, cached = measuring.get_or_measure(FakeGpu(), refresh=True)
    assert (cached, len(calls)) == (False, 2)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_micro_benchmarks_compile_without_spills(arch, tmp_path):
    command = [NVCC, *BASE_NVCC_OPTIONS, f"-arch={arch}", "-cubin", "-Xptxas", "-v", str(CUDA_DIR / "ceilings.cu"),
               "-o", str(tmp_path / "c.cubin")]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    kernels = set(re.findall(r"Compiling entry function '(\w+)'", result.stderr))
    assert kernels == {"ceiling_ffma", "ceiling_mma_tf32", "ceiling_ex2", "ceiling_copy", "ceiling_wgmma_tf32"}
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", result.stderr)]
    assert spills and not any(spills)


CUOBJDUMP = shutil.which("cuobjdump")


@pytest.mark.skipif(NVCC is None or CUOBJDUMP is None, reason="nvcc or cuobjdump is not installed")
def test_micro_benchmarks_run_on_the_units_they_claim(tmp_path):
    """The loops are what they count: TF32 HMMA and HGMMA, MUFU.EX2 and FFMA in the SASS for sm_90a."""
    cubin = tmp_path / "c.cubin"
    subprocess.run([NVCC, *BASE_NVCC_OPTIONS, "-arch=sm_90a", "-cubin", str(CUDA_DIR / "ceilings.cu"), "-o", str(cubin)],
                   check=True, capture_output=True)
    sass = subprocess.run([CUOBJDUMP, "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
    functions = dict(re.findall(r"Function : (\w+)\n(.*?)(?=Function :|\Z)", sass, re.S))
    assert functions["ceiling_mma_tf32"].count("HMMA.1688.F32.TF32") >= 16
    assert functions["ceiling_ex2"].count("MUFU.EX2") >= 128
    assert functions["ceiling_ffma"].count("FFMA") >= 128
    assert functions["ceiling_wgmma_tf32"].count("HGMMA.64x128x8.F32.TF32") >= 8


@pytest.mark.gpu
def test_measured_ceilings_are_plausible(gpu, cache):  # noqa: F811
    """On a GPU: every ceiling is measured, below what the clocks allow, and cached."""
    found, cached = measuring.get_or_measure(gpu, refresh=True)
    assert not cached and cl.cached_for(gpu) == found
    ffma = found.get("ffma").value
    assert 0.5 * gpu.fp32_peak_flops / 1e12 < ffma < 1.1 * gpu.fp32_peak_flops / 1e12
    if gpu.compute_capability >= (8, 0):
        assert found.get("tf32_mma").value > ffma
    if gpu.compute_capability == (9, 0):
        assert found.get("tf32_wgmma").value > found.get("tf32_mma").value, found.get("tf32_wgmma").detail
    ex2_per_sm_clock = found.get("ex2").value * 1e9 / (gpu.sm_count * gpu.clock_khz * 1e3)
    assert 1 < ex2_per_sm_clock < 40
    assert found.get("dram_copy").value > 100


def test_ceilings_command_measures_once_then_reads_the_cache(cache, monkeypatch):  # noqa: F811
    from click.testing import CliRunner

    import attnbench.backends.gpu
    from attnbench.cli import main

    class FakeGpu:
        name = "NVIDIA H200"

        def __init__(self, index: int = 0) -> None:
            pass

    monkeypatch.setattr(attnbench.backends.gpu, "Gpu", FakeGpu)
    monkeypatch.setattr(cl, "driver_version", lambda gpu: "580.159.04")
    monkeypatch.setattr(measuring, "measure", lambda gpu: sample())
    runner = CliRunner()
    first = runner.invoke(main, ["ceilings"])
    assert first.exit_code == 0, first.output
    assert "measured" in first.output and "FP32 FFMA" in first.output and "4,000.0 GB/s" in first.output
    monkeypatch.setattr(measuring, "measure", lambda gpu: pytest.fail("measured again although cached"))
    second = runner.invoke(main, ["ceilings", "--json"])
    assert second.exit_code == 0 and json.loads(second.output) == sample().to_dict()


def test_ceilings_without_a_gpu_is_one_line_exit_3():
    pytest.importorskip("attnbench.backends.gpu")
    from click.testing import CliRunner

    from attnbench.backends.gpu import gpu_probe
    from attnbench.cli import main

    if gpu_probe() is None:
        pytest.skip("a GPU is present")
    result = CliRunner().invoke(main, ["ceilings"])
    assert result.exit_code == 3 and result.output.startswith("error:")
