"""Fresh inputs and each sample's check on the device, for the pycuda backend (`bench.fresh_samples` says why).

Our kernels in `cuda/fresh_samples.cu`: `fill_fresh` writes a seed's values into one input tensor (the values
`cases.fresh_values` defines, made from the seed and the element's index alone), `scan_nonfinite` counts NaN and
Inf over the whole output, `exact_rows` computes sampled rows in float64 (one block a row) and holds the output's
rows to the tolerance, `row_digest` hashes each output row.
Every one runs after the kernel under test has finished (the caller synchronises the context), and the check
writes the seed's values over the input again first, so what the check reads is the seed's input whatever the
kernel wrote. The small buffers of the check (rows, totals, results) are written by the host and our kernels
after the kernel under test ran: nothing it left there survives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnbench.backends.device import GpuDevice
from attnbench.backends.host_sample_check import row_results
from attnbench.cases.fresh_values import InputRange, tensor_seed
from attnbench.errors import KernelLaunchError
from attnbench.results.timed_check import SampleErrors

THREADS = 256
DEFAULT_SHARED = 48 * 1024  # what any block may ask for without opting in
MAX_GRID_Y = 65535
MAX_BLOCKS_X = 4096  # each block strides the rest: enough to fill any GPU
SIGNATURES = {"fill_fresh": "PqiqQff", "scan_nonfinite": "PqP",
              "exact_rows": "PPPqiiPPdffP", "row_digest": "PqiP"}


@dataclass(frozen=True)
class InputLayout:
    """Where each tensor's item 0 starts (device addresses), and the stride between items (floats)."""

    firsts: tuple[int, int, int]
    stride: int


def input_layout(pointers: dict[str, int], N: int, d: int) -> InputLayout:
    """The layout of an execution's input buffers: interleaved `qkv`, or separate `q`, `k`, `v`."""
    if "qkv" in pointers:
        base = pointers["qkv"]
        return InputLayout((base, base + 4 * N * d, base + 8 * N * d), 3 * N * d)
    return InputLayout((pointers["q"], pointers["k"], pointers["v"]), N * d)


class DeviceFreshSamples:
    """One execution's input and output on the device, and our kernels over them."""

    def __init__(self, gpu: GpuDevice, inputs: dict[str, int], output: int, B: int, N: int, d: int) -> None:
        self.gpu, self.driver = gpu, gpu.driver
        self.B, self.N, self.d = B, N, d
        self.layout = input_layout(inputs, N, d)
        self.output = output
        self._scratch: dict[str, tuple[Any, int]] = {}

    def _function(self, name: str) -> Any:
        return self.gpu.support_function("fresh_samples", name, SIGNATURES[name])

    def _buffer(self, name: str, nbytes: int) -> int:
        """A scratch buffer of ours, at least `nbytes`, kept for the execution's life."""
        held = self._scratch.get(name)
        if held is None or held[1] < nbytes:
            if held is not None:
                held[0].free()
            self._scratch[name] = (self.driver.mem_alloc(max(8, nbytes)), nbytes)
        return int(self._scratch[name][0])

    def _grid(self, per_item: int) -> tuple[int, int, int]:
        return (max(1, min(MAX_BLOCKS_X, -(-per_item // THREADS))), min(self.B, MAX_GRID_Y), 1)

    def _launch(self, name: str, grid: tuple[int, int, int], *args: Any, shared: int = 0) -> None:
        try:
            self._function(name).prepared_call(grid, (THREADS, 1, 1), *args, shared_size=shared)
        except self.driver.Error as exc:
            raise KernelLaunchError(f"attnbench's {name} kernel failed: {exc}") from None

    def refresh(self, seed: int, ranges: InputRange) -> None:
        per_item = self.N * self.d
        for t, first in enumerate(self.layout.firsts):
            low, span = ranges.bounds(t)
            self._launch("fill_fresh", self._grid(per_item), np.uintp(first), np.int64(self.layout.stride),
                         np.int32(self.B), np.int64(per_item), np.uint64(tensor_seed(seed, t)), np.float32(low),
                         np.float32(span))

    def check(self, seed: int, ranges: InputRange, rows: np.ndarray, atol: float, rtol: float) -> SampleErrors:
        self.refresh(seed, ranges)  # the seed's input again: whatever the kernel under test wrote there is gone
        n = self.B * self.N * self.d
        totals = np.array([0, np.iinfo(np.uint64).max], dtype=np.uint64)
        totals_at = self._buffer("scan", totals.nbytes)
        self.driver.memcpy_htod(totals_at, totals)
        self._launch("scan_nonfinite", (max(1, min(MAX_BLOCKS_X, -(-n // THREADS))), 1, 1), np.uintp(self.output),
                     np.int64(n), np.uintp(totals_at))
        count = len(rows)
        results = np.zeros((count, 5), dtype=np.float64)
        if count:
            rows64 = np.ascontiguousarray(rows, dtype=np.int64)
            rows_at = self._buffer("rows", rows64.nbytes)
            results_at = self._buffer("results", results.nbytes)
            self.driver.memcpy_htod(rows_at, rows64)
            d = self.d
            groups = 1 if d >= THREADS else THREADS // d
            shared = 8 * (d + THREADS + d * groups)
            if shared > DEFAULT_SHARED and shared > self._shared_limit():
                results = self._exact_rows_on_host(rows64, atol, rtol)
            else:
                self.gpu.allow_dynamic_smem(self._function("exact_rows"), "exact_rows", shared)
                q, k, v = self.layout.firsts
                self._launch("exact_rows", (count, 1, 1), np.uintp(q), np.uintp(k), np.uintp(v),
                             np.int64(self.layout.stride), np.int32(self.N), np.int32(d), np.uintp(rows_at),
                             np.uintp(self.output), np.float64(1.0 / math.sqrt(d)), np.float32(atol),
                             np.float32(rtol), np.uintp(results_at), shared=shared)
                self.driver.memcpy_dtoh(results, results_at)
        self.driver.memcpy_dtoh(totals, totals_at)
        return SampleErrors.from_row_results(int(totals[0]), int(totals[1]), rows, results, self.N)

    def _shared_limit(self) -> int:
        """The shared memory one block of ours may hold on this GPU (after opting in)."""
        return int(self.gpu.device.get_attribute(self.driver.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))

    def _exact_rows_on_host(self, rows: np.ndarray, atol: float, rtol: float) -> np.ndarray:
        """The sampled rows in float64 on the host, item by item, for a head dimension whose row does not fit
        one block's shared memory (d in the thousands, the large-head-dim and square workloads)."""
        N, d = self.N, self.d
        results = np.zeros((len(rows), 5), dtype=np.float64)
        items = rows // N
        for b in np.unique(items):
            at = np.flatnonzero(items == b)
            tensors = [np.empty((N, d), dtype=np.float32) for _ in range(4)]
            sources = [first + 4 * int(b) * self.layout.stride for first in self.layout.firsts]
            for tensor, source in zip(tensors, [*sources, self.output + 4 * int(b) * N * d]):
                self.driver.memcpy_dtoh(tensor, source)
            q, k, v, out = tensors
            within = rows[at] % N
            scores = q[within].astype(np.float64) @ k.astype(np.float64).T / math.sqrt(d)
            scores -= scores.max(axis=1, keepdims=True)
            weights = np.exp(scores)
            want = (weights / weights.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
            results[at] = row_results(out[within], want, atol, rtol)
        return results

    def digest(self) -> np.ndarray:
        rows = self.B * self.N
        digests = np.zeros(rows, dtype=np.uint64)
        at = self._buffer("digests", digests.nbytes)
        self._launch("row_digest", (max(1, min(MAX_BLOCKS_X, -(-rows // THREADS))), 1, 1), np.uintp(self.output),
                     np.int64(rows), np.int32(self.d), np.uintp(at))
        self.driver.memcpy_dtoh(digests, at)
        return digests

    def free(self) -> None:
        for buffer, _ in self._scratch.values():
            try:
                buffer.free()
            except Exception:
                pass
        self._scratch.clear()
