"""Exact attention in float64 on the CPU: the yardstick every variant is checked against.

Deliberately shares no code with the variants under test. Memory stays bounded: scores are formed
for a group of batch items or a slab of query rows at a time, never the whole N x N of a long case.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from attnbench.testcase import Testcase

# Largest float64 score block formed at once (bytes), and how many are formed at a time.
SCORE_BLOCK_BYTES = 64 << 20
REFERENCE_THREADS = min(8, os.cpu_count() or 1)

Progress = Callable[[int], None]  # called with the number of query rows just finished


def attention_rows_float64(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """softmax(q k^T / sqrt(d)) v in float64 for stacked (g, rows, d) q and (g, N, d) k, v."""
    d = q.shape[-1]
    scores = np.matmul(q.astype(np.float64), np.swapaxes(k, -1, -2).astype(np.float64))
    scores *= 1.0 / np.sqrt(d)
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    weights_sum = scores.sum(axis=-1, keepdims=True)
    return np.matmul(scores, v.astype(np.float64)) / weights_sum


def _blocks(B: int, N: int) -> list[tuple[int, int, int, int]]:
    """(b0, b1, r0, r1) pieces whose score blocks stay under SCORE_BLOCK_BYTES."""
    row_bytes = N * 8
    items_per_block = max(1, SCORE_BLOCK_BYTES // (N * row_bytes))
    if items_per_block > 1:
        return [(b0, min(B, b0 + items_per_block), 0, N) for b0 in range(0, B, items_per_block)]
    rows = max(1, SCORE_BLOCK_BYTES // row_bytes)
    return [(b, b + 1, r0, min(N, r0 + rows)) for b in range(B) for r0 in range(0, N, rows)]


def reference_output(testcase: Testcase, progress: Progress | None = None) -> np.ndarray:
    """The exact output O (B, N, d) in float64, computed in bounded memory.

    Blocks run on a few threads (numpy releases the GIL in exp and matmul), so the element-wise
    work, not only the BLAS part, uses the machine's cores.
    """
    shape = testcase.shape
    B, N, d = shape.B, shape.N, shape.d
    out = np.empty((B, N, d), dtype=np.float64)

    def one(block: tuple[int, int, int, int]) -> int:
        b0, b1, r0, r1 = block
        out[b0:b1, r0:r1] = attention_rows_float64(
            testcase.q[b0:b1, r0:r1], testcase.k[b0:b1], testcase.v[b0:b1]
        )
        return (b1 - b0) * (r1 - r0)

    blocks = _blocks(B, N)
    workers = max(1, min(REFERENCE_THREADS, len(blocks)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for rows in pool.map(one, blocks):
            if progress:
                progress(rows)
    return out
