"""Exact attention in float64 on the CPU: the yardstick every variant is checked against.

Deliberately shares no code with the variants under test. Memory stays bounded: scores are formed
for a group of batch items or a slab of query rows at a time, never the whole N x N of a long case.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterator

import numpy as np

from attnbench.cases.testcase import Testcase
from attnbench.host_threads import blas_single_threaded, host_threads

# Float64 score blocks in flight at once, over all threads (bytes).
SCORE_MEMORY_BYTES = 16 << 20

Progress = Callable[[int], None]  # called with the number of query rows just finished


def attention_rows_float64(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """softmax(q k^T / sqrt(d)) v in float64 for stacked (g, rows, d) q and (g, N, d) k, v."""
    d = q.shape[-1]
    k, v = np.asarray(k, dtype=np.float64), np.asarray(v, dtype=np.float64)  # no copy when already float64
    scores = np.matmul(np.asarray(q, dtype=np.float64), np.swapaxes(k, -1, -2))
    scores *= 1.0 / np.sqrt(d)
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    weights_sum = scores.sum(axis=-1, keepdims=True)
    return np.matmul(scores, v) / weights_sum


def reference_output(testcase: Testcase, progress: Progress | None = None, dtype: type = np.float64) -> np.ndarray:
    """The exact output O (B, N, d), computed in float64 in bounded memory and stored as `dtype`
    (float32 for a stored reference: no float64 copy of the whole output is ever held).

    Blocks run on this process's host threads (numpy releases the GIL in exp and matmul), so the
    element-wise work, not only the BLAS part, uses the machine's cores; BLAS runs one thread a block.
    """
    shape = testcase.shape
    B, N = shape.B, shape.N
    out = np.empty((B, N, shape.d), dtype=dtype)
    threads = host_threads()
    block_bytes = SCORE_MEMORY_BYTES // threads
    row_bytes = N * 8
    items_per_block = max(1, block_bytes // (N * row_bytes))
    rows_per_block = max(1, block_bytes // row_bytes)
    pool = ThreadPoolExecutor(max_workers=threads)
    try:
        return _blocks(pool, testcase, out, items_per_block, rows_per_block, progress, 4 * threads)
    finally:
        # Ctrl-C (or any failure) drops the blocks not started: `with` waited for every queued block, and a
        # large case's reference then ran on for hours after the Ctrl-C
        pool.shutdown(wait=True, cancel_futures=True)


def _in_order(pool: ThreadPoolExecutor, work: Callable[[int], int], starts: range, window: int) -> Iterator[int]:
    """`pool.map(work, starts)` with only a few blocks queued at a time: `map` queues every block at once (a
    million for N = 1048576), so a Ctrl-C landed in that queueing, where it can break the pool's own lock
    ("release unlocked lock"), and the blocks queued ran on after it."""
    pending: deque[Future[int]] = deque()
    for start in starts:
        if len(pending) >= window:
            yield pending.popleft().result()
        pending.append(pool.submit(work, start))
    while pending:
        yield pending.popleft().result()


def _blocks(pool: ThreadPoolExecutor, testcase: Testcase, out: np.ndarray, items_per_block: int, rows_per_block: int,
            progress: Progress | None, window: int) -> np.ndarray:
    """`reference_output`'s blocks, on `pool`."""
    B, N = testcase.shape.B, testcase.shape.N
    with blas_single_threaded():
        if items_per_block > 1:  # short sequences: whole items, a group at a time

            def items(b0: int) -> int:
                b1 = min(B, b0 + items_per_block)
                out[b0:b1] = attention_rows_float64(testcase.q[b0:b1], testcase.k[b0:b1], testcase.v[b0:b1])
                return (b1 - b0) * N

            for rows in _in_order(pool, items, range(0, B, items_per_block), window):
                if progress:
                    progress(rows)
            return out
        for b in range(B):  # long sequences: slabs of query rows against one item's K and V
            k64 = testcase.k[b].astype(np.float64)[None]
            v64 = testcase.v[b].astype(np.float64)[None]

            def slab(r0: int, b: int = b, k64: np.ndarray = k64, v64: np.ndarray = v64) -> int:
                r1 = min(N, r0 + rows_per_block)
                out[b, r0:r1] = attention_rows_float64(testcase.q[b, r0:r1][None], k64, v64)[0]
                return r1 - r0

            for rows in _in_order(pool, slab, range(0, N, rows_per_block), window):
                if progress:
                    progress(rows)
    return out
