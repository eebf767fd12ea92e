"""attnbench.output.plots.roofline: intensity, the roofs from saved or cached ceilings, and the plot file."""

from __future__ import annotations

import pytest

from attnbench.output.plots import roofline
from attnbench.results import ceilings as cl
from tests.results.test_ceilings import sample
from tests.synthetic import COURSE_SHAPES, result_set

PNG = b"\x89PNG\r\n\x1a\n"


def test_intensity_is_n_over_four():
    assert roofline.intensity(4, 32768, 32) == pytest.approx(8192)
    assert roofline.intensity(10, 2048, 64) == pytest.approx(512)


def test_roofs_from_saved_ceilings_then_cache_then_datasheet(tmp_path, monkeypatch):
    monkeypatch.setenv(cl.CACHE_ENV, str(tmp_path))
    r = result_set({"qreg": {"t10": 2.0}}, {"t10": COURSE_SHAPES["t10"]})
    (datasheet,) = roofline.roofs(r)
    assert not datasheet.measured and datasheet.tflops == pytest.approx(66.9) and "datasheet" in datasheet.label
    cl.save(sample(r.metadata["gpu"]["name"]))  # measured under some driver: the newest is drawn
    by_label = {roof.label.split(":")[0]: roof for roof in roofline.roofs(r)}
    assert by_label["TF32 mma.sync / 3 (3xTF32)"].tflops == pytest.approx(100.0)
    assert by_label["FP32 FFMA"].bandwidth_gbs == 4000.0 and by_label["FP32 FFMA"].measured
    r.metadata["ceilings"] = sample(driver="other").to_dict()  # saved with the result: wins over the cache
    assert roofline.ceilings_of(r).driver == "other"


def test_without_ceilings_the_datasheet_peaks_of_each_unit_are_drawn(tmp_path, monkeypatch):
    monkeypatch.setenv(cl.CACHE_ENV, str(tmp_path))
    r = result_set({"qreg": {"t10": 2.0}}, {"t10": COURSE_SHAPES["t10"]})
    r.metadata["gpu"] = {**r.metadata["gpu"], "name": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132,
                         "sm_clock_mhz": 1980.0, "l2_bytes": 60 * 2**20, "memory_clock_mhz": 3201.0,
                         "memory_bus_bits": 6144}  # a copy: the synthetic H200 is shared
    by_name = {roof.label.split(":")[0]: roof for roof in roofline.roofs(r)}
    assert set(by_name) == {"FP32 FFMA peak", "TF32 tensor-core peak / 3 (3xTF32)", "TF32 tensor-core peak"}
    assert by_name["TF32 tensor-core peak"].tflops == pytest.approx(2048 * 132 * 1.98e9 / 1e12)
    assert by_name["FP32 FFMA peak"].bandwidth_gbs == pytest.approx(2 * 3.201e9 * 768 / 1e9)
    assert not any(roof.measured for roof in by_name.values())


def test_plot_has_a_point_per_variant_and_case(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib", reason="matplotlib (the plot extra) is not installed")
    monkeypatch.setenv(cl.CACHE_ENV, str(tmp_path))
    cases = {c: COURSE_SHAPES[c] for c in ("t10", "t29")}
    r = result_set({"qreg": {"t10": 2.0, "t29": 46.6}, "tf32x3": {"t10": 0.28, "t29": 10.7}}, cases)
    r.metadata["ceilings"] = sample().to_dict()
    assert len(roofline.points([r])) == 4
    path = roofline.roofline_plot([r], tmp_path / "roof.png")
    assert path.read_bytes().startswith(PNG)


def test_saved_ceilings_are_listed_in_the_report_environment():
    from attnbench.output.render.markdown import environment_lines

    r = result_set({"qreg": {"t10": 2.0}}, {"t10": COURSE_SHAPES["t10"]})
    assert not any("measured ceilings" in line for line in environment_lines(r))
    r.metadata["ceilings"] = sample().to_dict()
    (line,) = [line for line in environment_lines(r) if "measured ceilings" in line]
    assert "FP32 FFMA 64.0 TFLOP/s" in line and "DRAM copy (read + write) 4,000.0 GB/s" in line
