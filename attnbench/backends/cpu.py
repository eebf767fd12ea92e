"""The `cpu` backend: the course's sequential blocked flash algorithm, in numpy float32.

Column tiles of K/V (bc = 32) are visited in order with a running row max m and sum l, exactly as the
course's sequential code does (with m starting at -inf, not FLT_MIN). All query rows of a group of
batch items advance together, which is the row blocking (br) done as one array operation.
"""

from __future__ import annotations

import platform
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

import numpy as np

from attnbench.backends.base import HostClock
from attnbench.backends.host_sample_check import host_sample_errors
from attnbench.cases.fresh_values import InputRange, fresh_values
from attnbench.cases.inputs import ProgressFactory
from attnbench.cases.testcase import Testcase
from attnbench.host_threads import blas_single_threaded
from attnbench.results.limits import HOST_LIMITS
from attnbench.results.timed_check import SampleErrors

BLOCK_COLS = 32
_GROUP_BYTES = 16 << 20  # a group of items at a time: bounds the temporaries beside the input and output


# A host pass of this many FLOPs or more takes seconds: it is shown as it goes, with its expected time.
REPORTED_FROM_FLOPS = 10e9
# Set by `passes_reported` around a run: how a long host pass shows its progress. A context variable, not a
# parameter: the runner makes every kind of execution through one signature, and only a host pass is slow
# enough to need this.
_PASS_PROGRESS: ContextVar[tuple[ProgressFactory, str | None] | None] = ContextVar("cpu_pass_progress", default=None)


@contextmanager
def passes_reported(progress: ProgressFactory, label: str | None = None) -> Iterator[None]:
    """Within this block, each long cpu pass shows a progress bar (rich's, with its expected time from the
    tiles done so far) through `progress`, named after `label` (else the shape); a factory that shows
    nothing (piped output) costs nothing."""
    token = _PASS_PROGRESS.set((progress, label))
    try:
        yield
    finally:
        _PASS_PROGRESS.reset(token)


def flash_attention_cpu(testcase: Testcase, block_cols: int = BLOCK_COLS,
                        advance: Callable[[int], None] | None = None) -> np.ndarray:
    """O (B, N, d) float32 by the blocked online-softmax algorithm; `advance(items)` after each K/V tile."""
    shape = testcase.shape
    B, N, d = shape.B, shape.N, shape.d
    scale = np.float32(1.0 / np.sqrt(d))
    out = np.empty((B, N, d), dtype=np.float32)
    per_item = N * max(block_cols, d) * 4 * 4
    group = max(1, _GROUP_BYTES // per_item)
    # One BLAS thread: OpenBLAS's float32 products change in the last bits with its thread count, and the
    # output must not depend on how many cores a process was given (a worker gets its share of them).
    with np.errstate(over="ignore", invalid="ignore"), blas_single_threaded():  # NaN/Inf inputs give NaN outputs
        for b0 in range(0, B, group):
            _blocked_group(testcase, out, b0, min(B, b0 + group), block_cols, scale, advance)
    return out


def _blocked_group(testcase: Testcase, out: np.ndarray, b0: int, b1: int, block_cols: int, scale: np.float32,
                   advance: Callable[[int], None] | None = None) -> None:
    """Items b0..b1 of the testcase, all their query rows at once, K/V column tile by tile."""
    N, d = testcase.shape.N, testcase.shape.d
    q, k, v = testcase.q[b0:b1], testcase.k[b0:b1], testcase.v[b0:b1]
    # Finite inputs near 3e38 overflow float32 (a score of inf, then inf - inf = NaN; a sum of values of inf):
    # such a group is computed in float64 and rounded at the end. The course's inputs never come near.
    dtype = np.float64 if _beyond_float32(q, k, v, N, d) else np.float32
    if dtype is np.float64:
        q, k, v, scale = q.astype(dtype), k.astype(dtype), v.astype(dtype), float(scale)
    row_max = np.full((b1 - b0, N, 1), -np.inf, dtype=dtype)
    row_sum = np.zeros((b1 - b0, N, 1), dtype=dtype)
    acc = np.zeros((b1 - b0, N, d), dtype=dtype)
    for j0 in range(0, N, block_cols):
        j1 = min(N, j0 + block_cols)
        scores = np.matmul(q, np.swapaxes(k[:, j0:j1], 1, 2)) * scale
        tile_max = scores.max(axis=-1, keepdims=True)
        new_max = np.maximum(row_max, tile_max)
        weights = np.exp(scores - new_max)
        correction = np.exp(row_max - new_max)  # exp(-inf) = 0 on the first tile
        row_sum = row_sum * correction + weights.sum(axis=-1, keepdims=True)
        acc = acc * correction + np.matmul(weights, v[:, j0:j1])
        row_max = new_max
        if advance is not None:
            advance(b1 - b0)
    out[b0:b1] = acc / row_sum


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _beyond_float32(q: np.ndarray, k: np.ndarray, v: np.ndarray, N: int, d: int) -> bool:
    """Whether float32 could overflow on these values: a score is at most sqrt(d) |x|^2 (the scale is
    1/sqrt(d)), a row's weighted sum at most N |v| (each weight at most 1). A NaN input compares False: NaN out."""
    largest = max(float(np.abs(a).max(initial=0.0)) for a in (q, k, v))
    return largest > min(np.sqrt(_FLOAT32_MAX / (2 * np.sqrt(d))), _FLOAT32_MAX / (2 * N))


def row_digests(out: np.ndarray) -> np.ndarray:
    """Per row of (B, N, d) float32, a 64-bit weighted sum of its bits (odd weights, wrapping): rows that differ in
    one element always differ here; two differing elements cancel with probability about 2^-64."""
    bits = np.ascontiguousarray(out).view(np.uint32).reshape(-1, out.shape[-1]).astype(np.uint64)
    odd = np.random.default_rng(0x5EED).integers(0, 2**63, out.shape[-1], dtype=np.uint64)
    weights = odd * np.uint64(2) + np.uint64(1)
    with np.errstate(over="ignore"):
        return (bits * weights).sum(axis=1, dtype=np.uint64)


class CpuExecution:
    """The numpy variant: a pass computes the output on the host."""

    peak_flops = None
    limits = HOST_LIMITS
    compile_s = 0.0

    def __init__(self, testcase: Testcase) -> None:
        self.testcase = testcase
        self.device_name = f"CPU ({platform.processor() or platform.machine()})"
        self.clock = HostClock()
        self.output: np.ndarray | None = None
        self.passes = 0  # passes shown so far (a long pass is shown as it goes)

    def upload(self) -> None:
        pass

    def run_pass(self) -> None:
        reporting = _PASS_PROGRESS.get()
        shape = self.testcase.shape
        if reporting is None or shape.flops < REPORTED_FROM_FLOPS:
            self.output = flash_attention_cpu(self.testcase)
            return
        progress, label = reporting
        self.passes += 1
        tiles = -(-shape.N // BLOCK_COLS)
        with progress(f"cpu pass {self.passes} on {label or shape}", shape.B * tiles) as advance:
            self.output = flash_attention_cpu(self.testcase, advance=advance)

    def download(self) -> np.ndarray:
        assert self.output is not None
        return self.output

    def flush_l2(self) -> None:
        pass  # the host's caches are not flushed: a pass reads far more than they hold

    def poison_output(self, value: float = float("nan")) -> None:
        if self.output is not None:  # a new array: the one download gave out may be the caller's first output
            self.output = np.full_like(self.output, value)  # (the pass makes a new array anyway)

    def refresh_inputs(self, seed: int, ranges: InputRange) -> None:
        """A new testcase of `seed`'s values: the case's own is shared with the other variants of a compare."""
        B, N, d = self.testcase.shape.B, self.testcase.shape.N, self.testcase.shape.d
        count = B * N * d
        tensors = [fresh_values(seed, t, 0, count, *ranges.bounds(t)).reshape(B, N, d) for t in range(3)]
        self.testcase = Testcase.from_arrays(*tensors)

    def check_sample(self, seed: int, ranges: InputRange, rows: np.ndarray, atol: float,
                     rtol: float) -> SampleErrors:
        assert self.output is not None
        t = self.testcase  # made by refresh_inputs from the seed; the pass (ours) only reads it
        return host_sample_errors(self.output, t.q, t.k, t.v, rows, atol, rtol)

    def output_digest(self) -> np.ndarray:
        assert self.output is not None
        return row_digests(self.output)

    def synchronize(self) -> None:
        pass  # a pass is done when run_pass returns

    def free(self) -> None:
        self.output = None
