"""What every backend offers the bench layer: the four steps of a run and a clock.

A backend's execution owns one variant's resources for one testcase (device buffers, compiled
kernels, the launch plan) and offers the same steps whatever it runs on: upload, one pass,
download, free; plus `flush_l2` and a `clock` for the sampler, which owns how passes are timed;
plus what the fresh samples need (`bench.fresh_samples`): the input's per-tensor range, fresh input values
from a seed (made where the input lies), the output poisoned, one sample's output checked (NaN and Inf scan,
sampled rows computed exactly), a digest of each output row, and a wait for all the work of the context.
Whole programs (`backends.program`) have no timed passes and no execution.
"""

from __future__ import annotations

import time
from typing import Protocol

import numpy as np

from attnbench.cases.fresh_values import InputRange
from attnbench.results.limits import DeviceLimits
from attnbench.results.timed_check import SampleErrors


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

    def poison_output(self, value: float = float("nan")) -> None:
        """Fill the output with `value`: NaN (the poison) unless a check needs a finite wrong answer there."""
        ...

    def refresh_inputs(self, seed: int, ranges: InputRange) -> None:
        """Fill the input with `seed`'s fresh values (`cases.fresh_values`), outside any timed window."""
        ...

    def check_sample(self, seed: int, ranges: InputRange, rows: np.ndarray, atol: float,
                     rtol: float) -> SampleErrors:
        """After a pass on `seed`'s input: the whole output scanned for NaN and Inf, and `rows` (flat) computed
        exactly from `seed`'s values (made again, not read from what the kernel may have written) and held to
        |out - exact| <= atol + rtol*|exact|."""
        ...

    def output_digest(self) -> np.ndarray:
        """A 64-bit hash of each output row's bits (B*N), for the determinism check."""
        ...

    def synchronize(self) -> None: ...

    def free(self) -> None: ...
