"""What one device can do at most, read once when it opens: the physical floor and the peaks a speed is a share of.

An execution carries its device's limits (`Execution.limits`), so the runner asks one record for a cell's
floor and share whatever the backend: a GPU's come from its datasheet facts and the ceilings `attnbench
ceilings` cached for it; the host's have a compute floor only; a device that cannot say its facts (a
test's fake) has neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnbench.results.ceilings import (
    AppliedCeiling,
    CeilingSet,
    applied_ceiling,
    datasheet_ceiling,
    measured_dram_bandwidth,
)
from attnbench.results.datasheet import DeviceFacts
from attnbench.results.floor import PhysicalFloor, gpu_floor, host_floor


@dataclass(frozen=True)
class DeviceLimits:
    """A device's facts and measured ceilings; `on_host` for the host's passes."""

    facts: DeviceFacts | None = None
    ceilings: CeilingSet | None = None
    on_host: bool = False

    def floor(self, shape: tuple[int, int, int], hot: bool) -> PhysicalFloor | None:
        """The least time a pass of `shape` (B, N, d) can take here (`hot`: timed without an L2 flush)."""
        if self.on_host:
            return host_floor(shape)
        if self.facts is None:
            return None
        return gpu_floor(shape, self.facts, measured_dram_bandwidth(self.ceilings), hot)

    def share(self, unit: str, flops: float, seconds: float, shape: tuple[int, int, int]) -> AppliedCeiling | None:
        """The share of the peak that applies to `unit`: the measured ceiling where cached, else the datasheet's."""
        measured = applied_ceiling(unit, flops, seconds, shape, self.ceilings)
        if measured is not None or self.facts is None:
            return measured
        return datasheet_ceiling(unit, flops, seconds, shape, self.facts)


HOST_LIMITS = DeviceLimits(on_host=True)
UNKNOWN_LIMITS = DeviceLimits()  # no floor and no share: the device cannot say what it is
