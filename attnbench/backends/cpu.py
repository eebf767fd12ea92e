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
from attnbench.backends.input_transform import InputTransform
from attnbench.cases.inputs import ProgressFactory
from attnbench.cases.testcase import Testcase
from attnbench.host_threads import blas_single_threaded
from attnbench.results.limits import HOST_LIMITS

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
    row_max = np.full((b1 - b0, N, 1), -np.inf, dtype=np.float32)
    row_sum = np.zeros((b1 - b0, N, 1), dtype=np.float32)
    acc = np.zeros((b1 - b0, N, d), dtype=np.float32)
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

    def poison_output(self) -> None:
        if self.output is not None:  # a new array: the one download gave out may be the caller's first output
            self.output = np.full_like(self.output, np.nan)

    def permute_inputs(self, transform: InputTransform) -> None:
        """A transformed copy: the testcase itself is shared with the other variants of a compare."""
        self.testcase = Testcase(transform.apply(self.testcase.qkv))

    def keep_output(self) -> None:
        return None  # the output is on the host already: the host's check is the check

    def synchronize(self) -> None:
        pass  # a pass is done when run_pass returns

    def free(self) -> None:
        self.output = None
