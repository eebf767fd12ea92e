"""attnbench.results.ceilings: the cache (folder, keying, versions), which ceiling applies to which
variant, how run shows it (measuring them: tests/explain/test_ceilings.py)."""

from __future__ import annotations

import json

import pytest

from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import REGISTRY
from attnbench.output.render.markdown import render
from attnbench.output.tables.run_tables import measurement_table
from attnbench.results import ceilings as cl
from attnbench.results.compute_units import COMPUTE_UNITS
from attnbench.results.datasheet import DeviceFacts
from attnbench.results.measurement import Measurement
from attnbench.results.stats import KernelStats
from tests.fakes import FakeDriverVersion


def sample(gpu: str = "NVIDIA H200", driver: str = "580.159.04") -> cl.CeilingSet:
    return cl.CeilingSet(gpu, driver, "sm_90", 132, 1980.0, "2026-11-22T06:00:00+00:00", [
        cl.Ceiling("ffma", "FP32 FFMA", 64.0, "TFLOP/s"),
        cl.Ceiling("tf32_mma", "TF32 mma.sync m16n8k8", 300.0, "TFLOP/s"),
        cl.Ceiling("ex2", "MUFU ex2", 4100.0, "Gop/s"),
        cl.Ceiling("dram_copy", "DRAM copy (read + write)", 4000.0, "GB/s"),
    ])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cl.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_cache_folder_from_the_environment(cache, monkeypatch):
    assert cl.cache_dir() == cache
    monkeypatch.delenv(cl.CACHE_ENV)
    assert "attnbench" in str(cl.cache_dir())


def test_round_trip_keyed_by_gpu_and_driver(cache):
    path = cl.save(sample())
    assert path.parent == cache and path.name == "ceilings_nvidia-h200_driver-580-159-04.json"
    loaded = cl.load_cached("NVIDIA H200", "580.159.04")
    assert loaded == sample()
    assert cl.load_cached("NVIDIA H200", "590.10") is None  # another driver: measure again
    assert cl.load_cached("NVIDIA H100 80GB HBM3", "580.159.04") is None


def test_newest_for_a_gpu_name_whatever_the_driver(cache):
    old, new = sample(driver="570.1"), sample(driver="580.159.04")
    old.date, new.date = "2026-01-01T00:00:00+00:00", "2026-11-22T00:00:00+00:00"
    cl.save(new)
    cl.save(old)
    cl.save(sample(gpu="NVIDIA H200 NVL"))  # another model whose slug starts the same
    assert cl.newest_for_name("NVIDIA H200") == new
    assert cl.newest_for_name("NVIDIA A100") is None and cl.newest_for_name(None) is None


def test_driver_version_from_the_kernel_module_or_the_cuda_api(monkeypatch, tmp_path):
    class FakeGpu:
        driver = FakeDriverVersion()

    line = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U16)\n"
    real_path = cl.Path
    monkeypatch.setattr(cl, "Path", lambda p: tmp_path / "version" if p == "/proc/driver/nvidia/version" else real_path(p))
    (tmp_path / "version").write_text(line)
    assert cl.driver_version(FakeGpu()) == "580.159.04"
    (tmp_path / "version").unlink()
    assert cl.driver_version(FakeGpu()) == "cuda-13000"


def test_unreadable_or_old_cache_is_ignored(cache):
    path = cl.save(sample())
    path.write_text("{not json")
    assert cl.load_cached("NVIDIA H200", "580.159.04") is None
    data = sample().to_dict()
    data["version"] = 0
    path.write_text(json.dumps(data))
    assert cl.load_cached("NVIDIA H200", "580.159.04") is None


def test_which_ceiling_applies():
    shape = (2, 1024, 64)
    flops = 4 * 2 * 1024 * 1024 * 64
    seconds = flops / 32e12  # 32 TFLOP/s
    ffma = cl.applied_ceiling("ffma", flops, seconds, shape, sample())
    assert ffma.fraction == pytest.approx(0.5) and ffma.measured and "FFMA" in ffma.name
    x3 = cl.applied_ceiling("tf32x3", flops, seconds, shape, sample())
    assert x3.value == pytest.approx(100e12) and x3.fraction == pytest.approx(0.32)  # a third of 300
    tensor = cl.applied_ceiling("tensor", flops, seconds, shape, sample())
    assert tensor.fraction == pytest.approx(32 / 300)
    memory = cl.applied_ceiling("memory", flops, 1e-3, shape, sample())
    assert memory.fraction == pytest.approx(16 * 2 * 1024 * 64 / 1e-3 / 4000e9)
    assert cl.applied_ceiling("ffma", flops, seconds, shape, None) is None
    partial = sample()
    partial.ceilings = partial.ceilings[:1]
    assert cl.applied_ceiling("tf32x3", flops, seconds, shape, partial) is None


def test_every_builtin_variant_declares_a_unit_with_a_ceiling():
    for variant in REGISTRY.values():
        assert variant.unit in COMPUTE_UNITS, variant.name
    assert REGISTRY["tf32x3"].unit == "tf32x3" and REGISTRY["qreg"].unit == "ffma"


def test_run_table_names_the_measured_ceiling_or_the_datasheet():
    stats = KernelStats([2.0, 2.0, 2.0])
    m = Measurement("qreg", "t29", Shape(4, 32768, 32), "NVIDIA H200", 0.1, stats, peak_flops=66.9e12)
    def text(measurement):
        return render(measurement_table(measurement))

    assert "peak" not in text(m)  # no peak known for its unit: no share printed
    facts = DeviceFacts("NVIDIA H200", (9, 0), 132, 1_980_000, 60 << 20, 3_201_000, 6144)
    m.ceiling = cl.datasheet_ceiling("ffma", m.flops, 20e-3, (4, 32768, 32), facts).to_dict()
    assert f"{100 * m.ceiling['fraction']:.1f}% of FP32 FFMA peak (datasheet)" in text(m)
    applied = cl.applied_ceiling("ffma", m.flops, 20e-3, (4, 32768, 32), sample())
    m.ceiling = applied.to_dict()
    shown = text(m)
    assert f"{100 * applied.fraction:.1f}% of FP32 FFMA (measured)" in shown and "datasheet" not in shown
    assert Measurement.from_dict(m.to_dict()).ceiling == m.ceiling
    assert m.peak_fraction == applied.fraction  # the share of its unit's peak, never of another unit's


def test_a_share_above_its_peak_is_never_printed_as_a_percentage():
    m = Measurement("wgmma3x", "t22", Shape(4, 32768, 32), "NVIDIA H200", 0.1, KernelStats([0.2] * 3))
    m.ceiling = {"name": "FP32 FFMA peak", "value": 67e12, "fraction": 1.84, "measured": False}
    shown = render(measurement_table(m))
    assert "184" not in shown and "above the FP32 FFMA peak (datasheet): the peak or the timing is wrong" in shown
    assert cl.share_text({"name": "x", "fraction": 0.5, "measured": True}) == "50.0% of x (measured)"


def test_datasheet_shares_per_unit_on_an_h200():
    facts = DeviceFacts("NVIDIA H200", (9, 0), 132, 1_980_000, 60 << 20, 3_201_000, 6144)
    tf32 = 2048 * 132 * 1.98e9
    third = cl.datasheet_ceiling("wgmma3x", 1e12, 1e-2, (1, 1, 1), facts)
    assert third.name == "TF32 tensor-core peak / 3 (3xTF32)" and third.value == pytest.approx(tf32 / 3)
    assert third.fraction == pytest.approx(1e14 / (tf32 / 3)) and not third.measured
    assert cl.datasheet_ceiling("tensor", 1e12, 1e-2, (1, 1, 1), facts).value == pytest.approx(tf32)
    memory = cl.datasheet_ceiling("memory", 0, 1e-3, (1, 1024, 64), facts)
    assert memory.value == pytest.approx(2 * 3.201e9 * 768)
    assert memory.fraction == pytest.approx(16 * 1024 * 64 / 1e-3 / memory.value)
    old = DeviceFacts("GTX 1080", (6, 1), 20, 1_733_000, 2 << 20)
    assert cl.datasheet_ceiling("tensor", 1e12, 1e-2, (1, 1, 1), old) is None  # no tensor cores: no peak to share
    assert cl.datasheet_ceiling("memory", 0, 1e-3, (1, 1, 1), old) is None  # the bus width unknown
