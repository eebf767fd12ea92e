"""One sample's check on the host, for the backends whose output and input are host arrays (the cpu variant):
the whole output scanned for NaN and Inf, and the sampled rows computed in float64 and held to the tolerance.
The device backends do the same on the device (`backends.gpu_fresh`, `backends.torch_fresh`)."""

from __future__ import annotations

import numpy as np

from attnbench.cases.reference import attention_rows_float64
from attnbench.results.timed_check import SampleErrors


def row_results(got: np.ndarray, want: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """Per row (rows x d each): failing elements, worst column, its |error| (inf for NaN), got and want there."""
    diff = np.abs(got.astype(np.float64) - want)
    bound = atol + rtol * np.abs(want)
    failing = (~(diff <= bound)).sum(axis=1)
    err = np.where(np.isfinite(diff), diff, np.inf)
    col = np.argmax(err, axis=1)
    at = np.arange(len(got))
    return np.stack([failing, col, err[at, col], got[at, col], want[at, col]], axis=1).astype(np.float64)


def host_sample_errors(out: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray, rows: np.ndarray, atol: float,
                       rtol: float) -> SampleErrors:
    """`out`, `q`, `k`, `v` are (B, N, d); `rows` flat (item * N + row)."""
    N = out.shape[1]
    flat = out.reshape(-1)
    finite = np.isfinite(flat)
    nonfinite = int(flat.size - np.count_nonzero(finite))
    first = int(np.argmin(finite)) if nonfinite else None
    items, within = rows // N, rows % N
    results = np.zeros((len(rows), 5))
    for b in np.unique(items):  # an item at a time: its K and V are read once for all its sampled rows
        at = np.flatnonzero(items == b)
        want = attention_rows_float64(q[b][within[at]][None], k[b][None], v[b][None])[0]
        results[at] = row_results(out[b][within[at]], want, atol, rtol)
    return SampleErrors.from_row_results(nonfinite, first, rows, results, N)
