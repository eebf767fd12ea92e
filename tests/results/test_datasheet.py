"""attnbench.results.datasheet: peaks computed as the datasheets compute them, on fixed numbers."""

from __future__ import annotations

import pytest

from attnbench.results import datasheet as ds

H100_SXM = ds.DeviceFacts("NVIDIA H100 80GB HBM3", (9, 0), 132, 1_830_000, 50 * 2**20, 2_619_000, 5120)


def test_h100_sxm_at_the_datasheets_clock_gives_its_datasheet_figures():
    assert ds.fastest_tensor_ops(H100_SXM) == pytest.approx(1979e12, rel=0.001)  # FP8 dense
    assert ds.tf32_peak_flops(H100_SXM) == pytest.approx(494.7e12, rel=0.001)
    assert ds.fp32_peak_flops(H100_SXM) == pytest.approx(61.8e12, rel=0.01)
    assert ds.dram_bandwidth(H100_SXM) == pytest.approx(3.35e12, rel=0.001)


def test_a100_counts_its_int4_rate_and_an_unknown_gpu_gets_more_not_less():
    a100 = ds.DeviceFacts("NVIDIA A100", (8, 0), 108, 1_410_000, 40 * 2**20)
    assert ds.fastest_tensor_ops(a100) == pytest.approx(1248e12, rel=0.001)
    future = ds.DeviceFacts("next", (13, 0), 132, 1_830_000, 0)
    assert ds.fastest_tensor_ops(future) > 8 * ds.fastest_tensor_ops(H100_SXM)
    pascal = ds.DeviceFacts("GTX 1080", (6, 1), 20, 1_733_000, 2 * 2**20)
    assert ds.fastest_tensor_ops(pascal) == pytest.approx(4 * ds.fp32_peak_flops(pascal))  # dp4a
    assert ds.dram_bandwidth(pascal) is None and ds.tf32_peak_flops(pascal) is None


def test_unit_peaks_name_what_they_are():
    assert ds.unit_peak("ffma", H100_SXM)[0] == "FP32 FFMA peak"
    name, value = ds.unit_peak("wgmma3x", H100_SXM)
    assert name.endswith("(3xTF32)") and value == pytest.approx(494.7e12 / 3, rel=0.001)
    assert ds.unit_peak("memory", H100_SXM) == ("DRAM bandwidth", ds.dram_bandwidth(H100_SXM))
    assert ds.unit_peak("unknown unit", H100_SXM) is None


def test_facts_round_trip_through_a_dict():
    assert ds.DeviceFacts.from_dict(H100_SXM.to_dict()) == H100_SXM
