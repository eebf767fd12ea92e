"""The physical floor of a cell: the least time any attention pass of a shape can take on a GPU.

It is the larger of two bounds, each built so that no honest kernel can beat it:

- memory: the bytes the pass must move between the chip and DRAM, over the DRAM bandwidth. Q, K and
  V are read once (12*B*N*d bytes of float32) and O written once (4*B*N*d). Whatever the L2 cache can
  hold is taken off: a written O may stay in L2 when the kernel ends (write-back), and with `--hot`
  (no flush between samples) the previous pass may have left up to an L2's worth of the inputs there.
  So a case whose inputs fit in L2 has no memory bound when timed hot.
- compute: the 4*B*N*N*d FLOPs over the GPU's fastest dense tensor-core rate in any precision
  (FP8 or INT8 on Hopper), from the datasheet: `attnbench ceilings` measures only TF32 and FP32, and
  a floor must hold for a kernel that computes in anything.

The bandwidth is the measured DRAM copy ceiling where `attnbench ceilings` has run, else the
datasheet's. A copy ceiling can be a few percent below a read-only stream, and a kernel's clock can
exceed the boost clock the datasheet peaks assume by a little: hence the margin. A median is refused
only below floor / FLOOR_MARGIN. The goal is to refuse 57,000 TFLOP/s on a 2,000 TFLOP/s GPU, not to
shave percents off an honest kernel; a factor 2 covers every inexactness above with room to spare.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

from attnbench.results.datasheet import DeviceFacts, dram_bandwidth, fastest_tensor_ops

FLOOR_MARGIN = 2.0  # a median is impossible below floor / FLOOR_MARGIN

# The host (the cpu variant): no host's core does more than AMX's 2048 INT8 operations per clock
# (Sapphire Rapids), and none clocks above 6 GHz. Its memory is not bounded: its size and speed are
# not known here. Generous by far, yet it refuses a pass that skipped its work.
HOST_OPS_PER_CORE_CLOCK = 2048
HOST_MAX_CLOCK_HZ = 6e9


@dataclass(frozen=True)
class PhysicalFloor:
    """The least time a pass of one shape can take on one device, and how it was reached."""

    seconds: float  # the larger of the two bounds
    bound: str  # "memory" or "compute": the one that sets the floor
    dram_bytes: int  # bytes that must cross the DRAM bus (0: everything can sit in L2)
    bandwidth: float | None  # bytes per second; None when unknown (no memory bound)
    bandwidth_source: str  # "measured" (attnbench ceilings), "datasheet", or "unknown"
    flops: int
    compute_rate: float  # operations per second
    compute_source: str  # what the compute rate is
    device: str
    hot: bool  # timed without an L2 flush between samples
    margin: float = FLOOR_MARGIN

    @property
    def limit_s(self) -> float:
        """A median below this is impossible."""
        return self.seconds / self.margin

    def refuses(self, median_s: float) -> bool:
        """Whether a median (seconds) is below what this device can do, margin included."""
        return median_s < self.limit_s

    def explain(self) -> str:
        """What sets the floor: '786 MB at the measured 4.10 TB/s DRAM bandwidth'."""
        if self.bound == "memory" and self.bandwidth:
            return (f"{_bytes_text(self.dram_bytes)} at the {self.bandwidth_source} "
                    f"{self.bandwidth / 1e12:.2f} TB/s DRAM bandwidth")
        return f"{self.flops / 1e9:,.3g} GFLOP at {self.compute_rate / 1e12:,.0f} TFLOP/s, {self.compute_source}"

    def sentence(self, median_ms: float, shape: tuple[int, int, int]) -> str:
        """Why a median is refused, with both numbers."""
        return (f"median {median_ms:.4g} ms is below the physical floor {self.seconds * 1e3:.4g} ms of "
                f"({shape[0]}, {shape[1]}, {shape[2]}) on {self.device} ({self.explain()}): the timed passes "
                f"cannot have done the work (a median under 1/{self.margin:g} of the floor is refused)")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "limit_s": self.limit_s}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PhysicalFloor":
        fields = {k: v for k, v in data.items() if k != "limit_s"}
        return cls(**fields)


def _bytes_text(count: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:,.3g} {unit}"
    return f"{count} bytes"


def dram_bytes(B: int, N: int, d: int, l2_bytes: int, hot: bool) -> int:
    """Bytes that must cross the DRAM bus in one pass, after what the L2 cache can spare.

    Reads: Q, K, V (12*B*N*d), less an L2's worth when hot (the previous pass may have left them);
    cold, the flush evicted them. Writes: O (4*B*N*d), less an L2's worth (it may stay in L2).
    """
    reads, writes = 12 * B * N * d, 4 * B * N * d
    return max(0, reads - (l2_bytes if hot else 0)) + max(0, writes - l2_bytes)


def gpu_floor(shape: tuple[int, int, int], facts: DeviceFacts, measured_bandwidth: float | None,
              hot: bool) -> PhysicalFloor:
    """The floor of a shape (B, N, d) on a GPU; `measured_bandwidth` (bytes/s) from `attnbench ceilings`."""
    B, N, d = shape
    flops = 4 * B * N * N * d
    rate = fastest_tensor_ops(facts)
    compute_s = flops / rate
    moved = dram_bytes(B, N, d, facts.l2_bytes, hot)
    bandwidth, source = (measured_bandwidth, "measured") if measured_bandwidth else (dram_bandwidth(facts), "datasheet")
    if bandwidth is None:
        source = "unknown"
    memory_s = moved / bandwidth if bandwidth else 0.0
    clock = f"{facts.clock_khz / 1e3:.0f} MHz"
    return PhysicalFloor(max(memory_s, compute_s), "memory" if memory_s > compute_s else "compute", moved, bandwidth,
                         source, flops, rate, f"the datasheet's fastest dense tensor-core rate at {clock}",
                         facts.name, hot)


def host_floor(shape: tuple[int, int, int], cores: int | None = None) -> PhysicalFloor:
    """The floor of a shape on the host (the cpu variant): compute only, at a rate no host reaches."""
    B, N, d = shape
    flops = 4 * B * N * N * d
    cores = cores or os.cpu_count() or 1
    rate = HOST_OPS_PER_CORE_CLOCK * HOST_MAX_CLOCK_HZ * cores
    return PhysicalFloor(flops / rate, "compute", 0, None, "unknown", flops, rate,
                         f"{cores} cores at {HOST_OPS_PER_CORE_CLOCK} operations per clock and "
                         f"{HOST_MAX_CLOCK_HZ / 1e9:g} GHz", "the host", False)
