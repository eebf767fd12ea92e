"""The SM clock after each timed sample, read through NVML by the GPU object (attnbench.backends.gpu).

The sampler calls the recorder after each sample, outside the timed region; the runner keeps the clocks
with the samples (attnbench.results.stats.KernelStats) and the rule of when a moving clock deserves a
warning is attnbench.results.clocks.
"""

from __future__ import annotations

from attnbench.backends.device import GpuDevice
from attnbench.results.stats import KernelStats


class SmClockRecorder:
    """Reads the GPU's SM clock (NVML) after each sample; gives up, leaving the clock unknown, at the first
    read NVML cannot answer (no pynvml, no libnvidia-ml, a device it does not manage)."""

    def __init__(self, gpu: GpuDevice | None) -> None:
        self._gpu = gpu
        self._read = getattr(gpu, "sm_clock_mhz", None)
        self.clocks: list[float] | None = [] if callable(self._read) else None

    def __call__(self, sample_ms: float) -> None:
        if self.clocks is None or self._read is None:
            return
        found = self._read()
        if found is None:
            self.clocks = None
        else:
            self.clocks.append(found)

    def attach(self, stats: KernelStats) -> KernelStats:
        """Keep the clocks with the samples (when there is one per sample), and NVML's throttle reasons."""
        if self.clocks is not None and len(self.clocks) == stats.count:
            stats.clocks_mhz = self.clocks
            reasons = getattr(self._gpu, "throttle_reasons", None)
            stats.throttle_reasons = tuple(reasons()) if callable(reasons) else ()
        return stats
