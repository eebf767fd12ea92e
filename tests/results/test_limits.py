"""attnbench.results.limits: one device's floor and the peak a speed is a share of."""

from __future__ import annotations

import pytest

from attnbench.results import ceilings as cl
from attnbench.results.datasheet import DeviceFacts
from attnbench.results.floor import gpu_floor, host_floor
from attnbench.results.limits import HOST_LIMITS, UNKNOWN_LIMITS, DeviceLimits

H200 = DeviceFacts("NVIDIA H200", (9, 0), 132, 1_980_000, 60 * 2**20, 3_201_000, 6144)
T22 = (500, 2048, 64)
FLOPS = 4 * 500 * 2048 * 2048 * 64


def measured() -> cl.CeilingSet:
    return cl.CeilingSet("NVIDIA H200", "580.159.04", "sm_90", 132, 1980.0, "2026-11-22T06:00:00+00:00", [
        cl.Ceiling("ffma", "FP32 FFMA", 64.0, "TFLOP/s"),
        cl.Ceiling("dram_copy", "DRAM copy (read + write)", 4000.0, "GB/s"),
    ])


def test_the_host_has_a_compute_floor_and_no_share():
    assert HOST_LIMITS.floor(T22, hot=False) == host_floor(T22)
    assert HOST_LIMITS.share("ffma", FLOPS, 1.0, T22) is None


def test_a_device_that_cannot_say_what_it_is_has_neither():
    assert UNKNOWN_LIMITS.floor(T22, hot=True) is None
    assert UNKNOWN_LIMITS.share("ffma", FLOPS, 1.0, T22) is None


@pytest.mark.parametrize("hot", [False, True])
def test_a_gpu_floor_uses_the_measured_bandwidth_where_cached(hot):
    limits = DeviceLimits(H200, measured())
    assert limits.floor(T22, hot) == gpu_floor(T22, H200, 4000e9, hot)
    assert limits.floor(T22, hot).bandwidth_source == "measured"
    assert DeviceLimits(H200).floor(T22, hot).bandwidth_source == "datasheet"


def test_the_share_is_of_the_measured_ceiling_else_the_datasheet_peak():
    seconds = 10e-3
    share = DeviceLimits(H200, measured()).share("ffma", FLOPS, seconds, T22)
    assert share.measured and share.value == pytest.approx(64e12)
    assert share.fraction == pytest.approx(FLOPS / seconds / 64e12)
    fallback = DeviceLimits(H200).share("ffma", FLOPS, seconds, T22)
    assert not fallback.measured and fallback == cl.datasheet_ceiling("ffma", FLOPS, seconds, T22, H200)
    # a unit the cache does not hold falls back to the datasheet too
    assert not DeviceLimits(H200, measured()).share("tensor", FLOPS, seconds, T22).measured
