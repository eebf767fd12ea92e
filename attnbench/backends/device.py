"""What attnbench needs of an open GPU, as a Protocol: `backends.gpu.Gpu` is the real one, and tests
pass fakes that have the members their path uses (a Protocol is structural: nothing to inherit)."""

from __future__ import annotations

from typing import Any, Protocol

from attnbench.backends.base import Clock
from attnbench.backends.gpu import CompiledVariant
from attnbench.cases.testcase import Shape
from attnbench.kernels.variant import Variant
from attnbench.results.datasheet import DeviceFacts
from attnbench.results.limits import DeviceLimits


class GpuDevice(Protocol):
    """One CUDA device with its context current: its facts, its compiler, its clock and its state."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    sm_count: int  # what a launch of persistent blocks sizes its grid by (`Launch.grid_on_sms`)
    driver: Any  # pycuda.driver
    device: Any  # pycuda's Device
    context: Any  # the device's primary context

    @property
    def arch(self) -> str: ...

    @property
    def fp32_peak_flops(self) -> float: ...

    def facts(self) -> dict[str, Any]: ...

    def device_facts(self) -> DeviceFacts: ...

    @property
    def limits(self) -> DeviceLimits: ...

    def free_memory(self) -> int: ...

    def clock(self, what: str) -> Clock: ...

    def flush_l2(self) -> None: ...

    def l2_flush_pending_bytes(self) -> int: ...

    def compile(self, variant: Variant, shape: Shape) -> CompiledVariant: ...

    def allow_dynamic_smem(self, function: Any, kernel: str, nbytes: int) -> None: ...

    def support_function(self, source: str, name: str, signature: str) -> Any: ...

    def context_error(self) -> str | None: ...

    def sm_clock_mhz(self) -> float | None: ...

    def throttle_reasons(self) -> list[str]: ...

    def close(self) -> None: ...
