"""The course's clock for a pipelined run: the wall time of the whole pipeline and each stage's own busy time.

In the pipelined host path, reading the file, the copies, the kernels and writing the output overlap,
so input + compute + output no longer add up to the run. The clock keeps both views:

- `wall_s`: from the first device allocation to the last byte of the output handed to the file.
- each stage's busy time, the sum of the time it spent working, whatever the others did meanwhile:
  `read_s` (file to pinned buffers), `h2d_s` (CUDA events around each host-to-device copy), `kernel_s`
  (events around each chunk's kernels), `d2h_s` (device-to-host copies), `write_s` (pinned buffers to
  the output file); and `setup_s` (device buffers and the pinned ring, before anything flows).
- `device_busy_s`: the union of the copy and kernel intervals, the time the GPU was doing any of them.
- `bound`: the stage with the largest busy time, which the wall time cannot beat.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

STAGES = ("read", "h2d", "kernel", "d2h", "write")
STAGE_NAMES = {"read": "reading the file", "h2d": "host-to-device copies", "kernel": "kernels",
               "d2h": "device-to-host copies", "write": "writing the output"}


@dataclass
class DeviceStageTimes:
    """Busy times of the device stages, from events around each copy and each chunk's kernels."""

    h2d_s: float
    kernel_s: float
    d2h_s: float
    busy_s: float  # the union of all those intervals


def union_seconds(intervals: list[tuple[float, float]]) -> float:
    """Total length of the union of [start, end) intervals (in whatever unit they are given)."""
    total, reach = 0.0, float("-inf")
    for begin, end in sorted(intervals):
        if end <= reach:
            continue
        total += end - max(begin, reach)
        reach = end
    return total


def gbps(nbytes: int, seconds: float) -> float | None:
    """Bandwidth in GB/s (10^9 bytes per second); None when nothing was timed."""
    return nbytes / seconds / 1e9 if seconds > 0 else None


@dataclass
class CourseClock:
    """Wall and per-stage busy times of one pipelined first pass, in seconds."""

    wall_s: float
    setup_s: float
    device_alloc_s: float
    read_s: float
    h2d_s: float
    kernel_s: float
    d2h_s: float
    write_s: float
    device_busy_s: float
    input_bytes: int
    output_bytes: int
    chunks: int
    items_per_chunk: int
    ring_depth: int
    ring_bytes: int
    keep_s: float = 0.0  # the scan thread: each output chunk checked for NaN/Inf, and kept for --check
    nonfinite: int = 0  # NaN or Inf elements in the output

    def busy(self, stage: str) -> float:
        return getattr(self, f"{stage}_s")

    @property
    def bound(self) -> str:
        """The stage with the largest busy time."""
        return max(STAGES, key=self.busy)

    @property
    def compute_s(self) -> float:
        """The course's 'compute' in the pipeline: device allocation and the GPU's busy time."""
        return self.device_alloc_s + self.device_busy_s

    @property
    def read_gbps(self) -> float | None:
        return gbps(self.input_bytes, self.read_s)

    @property
    def h2d_gbps(self) -> float | None:
        return gbps(self.input_bytes, self.h2d_s)

    @property
    def d2h_gbps(self) -> float | None:
        return gbps(self.output_bytes, self.d2h_s)

    @property
    def write_gbps(self) -> float | None:
        return gbps(self.output_bytes, self.write_s)

    def to_dict(self) -> dict:
        data = asdict(self)
        data.update(bound=self.bound, compute_s=self.compute_s, read_gbps=self.read_gbps, h2d_gbps=self.h2d_gbps,
                    d2h_gbps=self.d2h_gbps, write_gbps=self.write_gbps)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "CourseClock":
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})
