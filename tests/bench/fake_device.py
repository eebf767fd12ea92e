"""A GPU without a GPU: an H200's facts, an NVML clock that says what a test wants, and an execution
whose 'kernel' is the float64 reference and whose clock reports a fixed time per pass.

A kernel that does no work cannot be faked on the CPU (its output would fail the check); a clock that
reports too short a time can: that is what the physical floor must refuse."""

from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np

from attnbench.backends.cpu import row_digests
from attnbench.backends.host_sample_check import host_sample_errors
from attnbench.cases.fresh_values import InputRange, fresh_values
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Testcase
from attnbench.results.ceilings import cached_for
from attnbench.results.datasheet import DeviceFacts
from attnbench.results.limits import UNKNOWN_LIMITS, DeviceLimits
from tests.fakes import FakeDriverVersion

H200 = DeviceFacts("NVIDIA H200", (9, 0), 132, 1_980_000, 60 * 2**20, 3_201_000, 6144)


class FixedClock:
    """A clock whose intervals are `ms` milliseconds: always the same, or one after another from a list (the
    last one again once the list is spent)."""

    def __init__(self, ms: float | list[float]) -> None:
        self.times = iter(ms) if isinstance(ms, list) else None
        self.ms = ms[-1] if isinstance(ms, list) else ms

    def start(self) -> None:
        pass

    def stop(self) -> float:
        return float(next(self.times, self.ms) if self.times is not None else self.ms)


class FakeH200:
    """What the runner, the matrix and the metadata ask of an open Gpu; `clocks` are the SM clocks NVML
    'reports' one read after another (None: no NVML)."""

    name = "NVIDIA H200"
    index = 0
    compute_capability = (9, 0)
    sm_count = 132
    arch = "sm_90"
    driver = FakeDriverVersion()
    fp32_peak_flops = 66.9e12

    def __init__(self, clocks: Iterable[float] | None = None, reasons: tuple[str, ...] = ()) -> None:
        self._clocks: Iterator[float] | None = iter(clocks) if clocks is not None else None
        self.reasons = list(reasons)

    def device_facts(self) -> DeviceFacts:
        return H200

    @property
    def limits(self) -> DeviceLimits:
        return DeviceLimits(H200, cached_for(self))

    def sm_clock_mhz(self) -> float | None:
        return next(self._clocks, None) if self._clocks is not None else None

    def throttle_reasons(self) -> list[str]:
        return self.reasons

    def context_error(self) -> str | None:
        return None

    def facts(self) -> dict:
        return {"name": self.name, "index": 0, "compute_capability": "9.0", "sm_count": 132}


class HonestHostExecution:
    """An execution whose pass writes the answer (the float64 reference, in float32) of its current input, with
    the fresh samples' steps done on the host as the cpu variant does them. The answer is computed when the input
    is made, outside the timed window: a pass that took the reference's real time would let a loaded machine's
    wall clock disagree with the fake events (the wall-clock cross-check's warning) in a test that wants none."""

    def __init__(self, testcase) -> None:
        self.testcase = testcase
        self.answer: np.ndarray | None = None  # the current input's, once computed
        self.output = None
        self.passes = 0

    def upload(self) -> None:
        pass

    def run_pass(self) -> None:
        self.passes += 1
        if self.answer is None:
            self.answer = self._reference()
        self.output = self.answer.copy()

    def _reference(self) -> np.ndarray:
        return reference_output(Testcase(np.ascontiguousarray(self.testcase.qkv))).astype(np.float32)

    def download(self) -> np.ndarray:
        if self.output is None:
            self.run_pass()
        return self.output

    def flush_l2(self) -> None:
        pass

    def poison_output(self, value: float = float("nan")) -> None:
        if self.output is not None:
            self.output = np.full_like(self.output, value)

    def refresh_inputs(self, seed: int, ranges: InputRange) -> None:
        B, N, d = self.testcase.shape.B, self.testcase.shape.N, self.testcase.shape.d
        self.testcase = Testcase.from_arrays(*[fresh_values(seed, t, 0, B * N * d, *ranges.bounds(t)).reshape(B, N, d)
                                               for t in range(3)])
        self.answer = self._reference()

    def check_sample(self, seed, ranges, rows, atol, rtol):
        t = self.testcase
        return host_sample_errors(self.output, t.q, t.k, t.v, rows, atol, rtol)

    def output_digest(self) -> np.ndarray:
        return row_digests(self.output)

    def synchronize(self) -> None:
        pass

    def free(self) -> None:
        pass


def fake_execution(pass_ms: float | list[float]):
    """A GpuExecution stand-in whose passes each 'take' `pass_ms` and whose output is the reference."""

    class FakeExecution(HonestHostExecution):
        def __init__(self, gpu, variant, testcase, flush_l2=True) -> None:
            super().__init__(testcase)
            self.device_name, self.peak_flops, self.compile_s = gpu.name, gpu.fp32_peak_flops, 0.0
            self.limits = getattr(gpu, "limits", UNKNOWN_LIMITS)
            self.clock = FixedClock(pass_ms)

    return FakeExecution
