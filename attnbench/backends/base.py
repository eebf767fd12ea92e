"""What every backend offers the bench layer: the four steps of a run and a clock.

A backend's execution owns one variant's resources for one testcase (device buffers, compiled
kernels, the launch plan) and offers the same steps whatever it runs on: upload, one pass,
download, free; plus `flush_l2` and a `clock` for the sampler, which owns how passes are timed;
plus what the verified passes after the samples need (`bench.timed_check`): poison the output,
change the input in place by an `InputTransform`, keep the first pass's output on the device to check
later outputs against it moved the same way (where the backend can), and wait for all the work of the
context.
Whole programs (`backends.program`) have no timed passes and no execution.
"""

from __future__ import annotations

import time
from typing import Protocol

import numpy as np

from attnbench.backends.input_transform import InputTransform
from attnbench.results.limits import DeviceLimits


class HostClock:
    """The host's monotonic clock, for work that runs on the host (the cpu variant)."""

    def __init__(self) -> None:
        self._start = 0.0

    def start(self) -> None:
        self._start = time.perf_counter()

    def stop(self) -> float:
        return (time.perf_counter() - self._start) * 1e3


def event_ms(elapsed: float) -> float:
    """A CUDA event interval, which the driver gives as a float32 of milliseconds, as the shortest decimal
    of that float32: the same value, written in about 8 digits instead of 17 in saved results."""
    return float(np.format_float_positional(np.float32(elapsed), unique=True, trim="-"))


class Clock(Protocol):
    """Times a region of work in milliseconds (CUDA events for device work, the host clock otherwise)."""

    def start(self) -> None: ...

    def stop(self) -> float: ...


class OutputCheck(Protocol):
    """The verified passes' check on the device: the current output against the first pass's output (kept on
    the device right after it was read back and before anything else ran) moved by a transform of the input."""

    def errors(self, transform: InputTransform, atol: float, rtol: float) -> tuple[int, int, float] | None:
        """(failing, non-finite, max abs error over finite elements), as `bench.timed_check.pass_errors`
        gives on the host; None when the kept base is no longer what was kept (something wrote into it:
        the caller checks on the host instead, from memory no kernel can reach)."""
        ...

    def free(self) -> None: ...


class Execution(Protocol):
    """What the bench layer needs from a backend."""

    device_name: str
    peak_flops: float | None
    limits: DeviceLimits  # the floor and the peaks of the device its passes run on
    compile_s: float
    clock: Clock

    def upload(self) -> None: ...

    def run_pass(self) -> None: ...

    def download(self) -> np.ndarray: ...

    def flush_l2(self) -> None: ...

    def poison_output(self) -> None: ...

    def permute_inputs(self, transform: InputTransform) -> None: ...

    def keep_output(self) -> OutputCheck | None:
        """A copy of the output as it is now (the first pass's, just read back), kept on the device for the
        verified passes' check there; None to check on the host (a host backend, or no room for the copy)."""
        ...

    def synchronize(self) -> None: ...

    def free(self) -> None: ...
