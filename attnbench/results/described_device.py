"""What the results layer reads of an open GPU: its name and driver (which key its ceilings' cache) and the facts a
run's metadata records. The backends' `Gpu` is one (`backends.device.GpuDevice` is the whole of it); this layer
sits below backends, so it states only what it reads."""

from __future__ import annotations

from typing import Any, Protocol


class DescribedDevice(Protocol):
    name: str
    index: int
    driver: Any  # pycuda.driver: get_driver_version() keys the cache where the kernel module does not say

    def facts(self) -> dict[str, Any]: ...
