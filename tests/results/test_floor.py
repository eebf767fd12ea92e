"""attnbench.results.floor: the physical floor of a shape on fixed numbers: cold and hot, measured and
datasheet bandwidth, the margin, and the host's."""

from __future__ import annotations

import pytest

from attnbench.results.datasheet import DeviceFacts
from attnbench.results.floor import FLOOR_MARGIN, PhysicalFloor, dram_bytes, gpu_floor, host_floor

L2 = 60 * 2**20
H200 = DeviceFacts("NVIDIA H200", (9, 0), 132, 1_980_000, L2, 3_201_000, 6144)
FP8 = 8192 * 132 * 1.98e9  # the datasheet's FP8 dense rate at the boost clock
DATASHEET_BW = 2 * 3.201e9 * 6144 / 8


def test_cold_reads_come_from_dram_and_a_written_o_may_stay_in_l2():
    assert dram_bytes(500, 2048, 64, L2, hot=False) == 12 * 500 * 2048 * 64 + 4 * 500 * 2048 * 64 - L2
    assert dram_bytes(1, 1024, 64, L2, hot=False) == 12 * 1024 * 64  # O fits in L2
    assert dram_bytes(1, 1024, 64, L2, hot=True) == 0  # everything fits: nothing must cross the bus
    assert dram_bytes(500, 2048, 64, L2, hot=True) == 12 * 500 * 2048 * 64 - L2 + 4 * 500 * 2048 * 64 - L2


def test_the_issues_lazy_kernel_on_an_h200_is_refused_with_both_numbers():
    floor = gpu_floor((500, 2048, 64), H200, 4.1e12, hot=False)
    flops = 4 * 500 * 2048 * 2048 * 64
    assert floor.flops == flops and floor.compute_rate == pytest.approx(FP8)
    memory_s = dram_bytes(500, 2048, 64, L2, False) / 4.1e12
    assert floor.seconds == pytest.approx(max(flops / FP8, memory_s))
    assert floor.bandwidth_source == "measured" and floor.bound == "compute"  # the FP8 rate binds here
    assert floor.refuses(0.0093e-3)
    sentence = floor.sentence(0.0093, (500, 2048, 64))
    assert sentence.startswith(f"median 0.0093 ms is below the physical floor {floor.seconds * 1e3:.4g} ms of "
                               "(500, 2048, 64) on NVIDIA H200 (")
    assert "537 GFLOP at 2,141 TFLOP/s, the datasheet's fastest dense tensor-core rate at 1980 MHz)" in sentence
    small = gpu_floor((500, 1024, 64), H200, 4.1e12, hot=False)  # half the N: a quarter of the FLOPs
    assert small.bound == "memory" and small.explain() == "461 MB at the measured 4.10 TB/s DRAM bandwidth"


def test_the_margin_spares_a_kernel_close_to_the_floor():
    floor = gpu_floor((16, 4096, 128), H200, None, hot=False)
    assert floor.bandwidth_source == "datasheet" and floor.bandwidth == pytest.approx(DATASHEET_BW)
    assert floor.bound == "compute" and floor.limit_s == pytest.approx(floor.seconds / FLOOR_MARGIN)
    assert not floor.refuses(floor.seconds * 0.6) and floor.refuses(floor.seconds * 0.4)


def test_hot_small_cases_are_bound_by_compute_only():
    floor = gpu_floor((1, 1024, 64), H200, 4.1e12, hot=True)
    assert floor.dram_bytes == 0 and floor.bound == "compute" and floor.hot
    assert floor.seconds == pytest.approx(4 * 1024 * 1024 * 64 / FP8)


def test_no_bus_width_no_memory_bound():
    facts = DeviceFacts("odd", (9, 0), 132, 1_980_000, L2)
    floor = gpu_floor((500, 2048, 64), facts, None, hot=False)
    assert floor.bandwidth is None and floor.bandwidth_source == "unknown" and floor.bound == "compute"


def test_the_hosts_floor_is_generous():
    floor = host_floor((4, 1024, 64), cores=2)
    assert floor.seconds == pytest.approx(4 * 4 * 1024 * 1024 * 64 / (2048 * 6e9 * 2))
    assert floor.device == "the host" and floor.bound == "compute"


def test_a_floor_round_trips_through_its_dict():
    floor = gpu_floor((4, 512, 64), H200, 4.1e12, hot=False)
    data = floor.to_dict()
    assert data["limit_s"] == floor.limit_s and PhysicalFloor.from_dict(data) == floor
