"""A GPU's datasheet peaks, computed as the datasheets compute them: a rate per SM per clock for the
architecture, times the SM count, times the boost clock (the memory bandwidth: the memory clock, twice
per clock, times the bus width).

The per-SM rates are data, one row per compute capability, from NVIDIA's whitepapers and datasheets
(the dense figures: structured sparsity doubles them but attention cannot use it). The facts a peak
needs come in as a `DeviceFacts` record, so these are pure functions that tests feed fixed numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from attnbench.results.compute_units import COMPUTE_UNITS

# FP32 lanes per SM by compute capability (2 FLOPs per lane per clock); 128 elsewhere.
FP32_LANES = {(6, 0): 64, (7, 0): 64, (7, 2): 64, (7, 5): 64, (8, 0): 64}

# The fastest dense tensor-core rate in ANY precision, integer formats included, in operations per SM
# per clock: a physical floor must never ask more of the hardware than it can do, whatever the kernel
# computes in. Volta FP16; Turing and Ampere INT4; Hopper FP8/INT8 (1979 TFLOP/s on an H100 SXM is
# 8192 x 132 SMs x 1.83 GHz); Blackwell FP4.
FASTEST_TENSOR_PER_SM_CLOCK = {
    (7, 0): 1024, (7, 2): 2048, (7, 5): 4096,
    (8, 0): 8192, (8, 6): 4096, (8, 7): 4096, (8, 9): 4096,
    (9, 0): 8192,
    (10, 0): 32768, (10, 3): 65536, (11, 0): 32768, (12, 0): 8192, (12, 1): 8192,
}
# A GPU newer than the table gets twice its largest rate (a floor too low refuses less, never wrongly);
# one without tensor cores gets INT8 dp4a (four products per FP32 lane per clock, 2 FLOPs each).
UNKNOWN_TENSOR_FACTOR = 2
DP4A_PER_LANE = 8

# TF32 dense tensor-core FLOPs per SM per clock (the peak of the "tensor", "tf32x3" and "wgmma3x" units;
# on Hopper the datasheet's TF32 figure is wgmma's, an upper bound for mma.sync too). GA10x takes its
# professional parts' rate (the GeForce ones are half of it): a share never exceeds the true one.
TF32_PER_SM_CLOCK = {
    (8, 0): 1024, (8, 6): 512, (8, 7): 512, (8, 9): 512, (9, 0): 2048, (10, 0): 4096,
}


@dataclass(frozen=True)
class DeviceFacts:
    """What the datasheet peaks of a GPU are computed from (pycuda's device attributes)."""

    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    clock_khz: int  # the boost clock
    l2_bytes: int
    memory_clock_khz: int = 0
    memory_bus_bits: int = 0  # 0 when unknown: no datasheet bandwidth

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "compute_capability": list(self.compute_capability)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DeviceFacts":
        return cls(data["name"], tuple(data["compute_capability"]), int(data["sm_count"]),  # type: ignore[arg-type]
                   int(data["clock_khz"]), int(data["l2_bytes"]), int(data.get("memory_clock_khz", 0)),
                   int(data.get("memory_bus_bits", 0)))


def _per_second(facts: DeviceFacts, per_sm_clock: float) -> float:
    return per_sm_clock * facts.sm_count * facts.clock_khz * 1e3


def fp32_peak_flops(facts: DeviceFacts) -> float:
    """FFMA: 2 FLOPs per FP32 lane per clock."""
    return _per_second(facts, 2.0 * FP32_LANES.get(facts.compute_capability, 128))


def fastest_tensor_ops(facts: DeviceFacts) -> float:
    """The fastest dense tensor-core rate of this GPU in any precision (operations per second)."""
    rate = FASTEST_TENSOR_PER_SM_CLOCK.get(facts.compute_capability)
    if rate is None and facts.compute_capability >= (7, 0):
        rate = UNKNOWN_TENSOR_FACTOR * max(FASTEST_TENSOR_PER_SM_CLOCK.values())
    if rate is None:
        rate = DP4A_PER_LANE * FP32_LANES.get(facts.compute_capability, 128)
    return _per_second(facts, rate)


def tf32_peak_flops(facts: DeviceFacts) -> float | None:
    """The dense TF32 tensor-core peak; None where the table has no row (no TF32, or an unknown GPU)."""
    rate = TF32_PER_SM_CLOCK.get(facts.compute_capability)
    return _per_second(facts, rate) if rate is not None else None


def dram_bandwidth(facts: DeviceFacts) -> float | None:
    """Bytes per second: two transfers per memory clock over the bus; None when the bus width is unknown."""
    if facts.memory_bus_bits <= 0 or facts.memory_clock_khz <= 0:
        return None
    return 2.0 * facts.memory_clock_khz * 1e3 * facts.memory_bus_bits / 8


def unit_peak(unit: str, facts: DeviceFacts) -> tuple[str, float] | None:
    """The datasheet peak that applies to a unit (`COMPUTE_UNITS`), named: its FLOP rate (bytes per second
    for a memory-bound unit); None when the datasheet has no figure for it."""
    compute_unit = COMPUTE_UNITS.get(unit)
    if compute_unit is None:
        return None
    source = {"fp32": fp32_peak_flops, "tf32": tf32_peak_flops, "dram": dram_bandwidth}[compute_unit.peak_source]
    peak = source(facts)
    return (compute_unit.peak_label, compute_unit.share_of(peak)) if peak else None
