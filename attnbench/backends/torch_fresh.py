"""Fresh inputs and each sample's check for the peers that hold tensors (torch, triton), in PyTorch on the GPU.

The same steps as the pycuda backend's (`backends.gpu_fresh`): the input filled from a seed by PyTorch's device
generator (uniform in each tensor's range), the whole output scanned for NaN and Inf, the sampled rows computed
in float64 on the device and held to the tolerance (the comparison of those few rows on the host,
`backends.host_sample_check.row_results`), and a 64-bit digest of each output row. The peers are PyTorch's and
our own Triton kernel, not code under suspicion, so the check reads the input the generator wrote.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from attnbench.backends.host_sample_check import row_results
from attnbench.cases.fresh_values import InputRange, tensor_seed
from attnbench.results.timed_check import SampleErrors

GATHER_BYTES = 1 << 28  # float64 K and V rows gathered at once for the sampled rows
FEW_ITEMS = 64  # rows falling in at most this many items are computed item by item (no gather)


def refresh(torch: Any, tensors: Sequence[Any], seed: int, ranges: InputRange) -> None:
    """Q, K, V (any views on the device) filled in place with values uniform in their ranges, from `seed`."""
    for t, x in enumerate(tensors):
        generator = torch.Generator(device=x.device)
        generator.manual_seed(tensor_seed(seed, t) & ((1 << 63) - 1))
        low, span = ranges.bounds(t)
        x.uniform_(low, low + span, generator=generator)


def _exact_rows(torch: Any, q: Any, k: Any, v: Any, items: Any, within: Any) -> Any:
    """softmax(q k^T / sqrt(d)) v of rows (items[r], within[r]) in float64, as (rows, d)."""
    d = q.shape[-1]
    f64 = torch.float64
    unique = torch.unique(items)
    out = torch.empty((items.numel(), d), dtype=f64, device=q.device)
    if unique.numel() <= FEW_ITEMS:
        for b in unique.tolist():
            at = torch.nonzero(items == b).reshape(-1)
            scores = q[b].index_select(0, within[at]).to(f64) @ k[b].to(f64).T / np.sqrt(d)
            out[at] = torch.softmax(scores, dim=-1) @ v[b].to(f64)
        return out
    N = k.shape[1]
    group = max(1, GATHER_BYTES // (2 * N * d * 8))
    for r0 in range(0, items.numel(), group):
        b, i = items[r0:r0 + group], within[r0:r0 + group]
        scores = torch.einsum("rd,rnd->rn", q[b, i].to(f64), k[b].to(f64)) / np.sqrt(d)
        out[r0:r0 + group] = torch.einsum("rn,rnd->rd", torch.softmax(scores, dim=-1), v[b].to(f64))
    return out


def check(torch: Any, q: Any, k: Any, v: Any, out: Any, rows: np.ndarray, atol: float, rtol: float) -> SampleErrors:
    """`q`, `k`, `v`, `out` are (B, N, d) views on the device; `rows` flat (item * N + row)."""
    N = out.shape[1]
    flat = out.reshape(-1)
    bad = ~torch.isfinite(flat)
    nonfinite = int(bad.sum())
    first = int(torch.nonzero(bad)[0, 0]) if nonfinite else None
    results = np.zeros((0, 5))
    if len(rows):
        at = torch.as_tensor(np.asarray(rows, dtype=np.int64), device=out.device)
        items, within = at // N, at % N
        want = _exact_rows(torch, q, k, v, items, within).cpu().numpy()
        got = out[items, within].cpu().numpy()
        results = row_results(got, want, atol, rtol)
    return SampleErrors.from_row_results(nonfinite, first, rows, results, N)


def digest(torch: Any, out: Any) -> np.ndarray:
    """A 64-bit weighted sum (odd weights, wrapping) of each output row's bits."""
    d = out.shape[-1]
    weights = np.random.default_rng(0x5EED).integers(0, 2**62, d, dtype=np.int64) * 2 + 1
    bits = out.reshape(-1, d).view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    return (bits * torch.as_tensor(weights, device=out.device)).sum(dim=-1).cpu().numpy().view(np.uint64)
