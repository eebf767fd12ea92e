"""Compare an output with a reference: the course's rule plus the error metrics users need."""

from __future__ import annotations

import numpy as np

from attnbench.results.verification import Mismatch, VerifyReport

COURSE_ATOL = 5e-3  # every element within 5e-3 of the reference, as the course's checkers read it
_CHUNK_ELEMENTS = 1 << 24


def _position(flat_index: int, shape: tuple[int, int, int]) -> tuple[int, int, int]:
    b, rest = divmod(flat_index, shape[1] * shape[2])
    row, col = divmod(rest, shape[2])
    return int(b), int(row), int(col)


def compare_outputs(
    out: np.ndarray,
    ref: np.ndarray,
    atol: float = COURSE_ATOL,
    rtol: float = 0.0,
    keep_failures: int = 5,
) -> VerifyReport:
    """Check `out` against `ref` (both (B, N, d)); NaN and Inf always fail. Works in bounded chunks."""
    if out.shape != ref.shape:
        raise ValueError(f"output shape {out.shape} differs from reference shape {ref.shape}")
    shape = out.shape
    flat_out = out.reshape(-1)
    flat_ref = ref.reshape(-1)
    failing = nan_count = inf_count = 0
    max_abs = max_rel = 0.0
    worst_index = -1
    err_sq = ref_sq = 0.0
    first: list[int] = []
    for start in range(0, flat_out.size, _CHUNK_ELEMENTS):
        o = flat_out[start : start + _CHUNK_ELEMENTS].astype(np.float64)
        r = flat_ref[start : start + _CHUNK_ELEMENTS].astype(np.float64)
        nan_count += int(np.isnan(o).sum())
        inf_count += int(np.isinf(o).sum())
        finite = np.isfinite(o)
        diff = np.abs(o - r)
        diff[~finite] = np.inf
        bad = ~(diff <= atol + rtol * np.abs(r))
        failing += int(bad.sum())
        if len(first) < keep_failures and bad.any():
            first.extend((np.flatnonzero(bad)[: keep_failures - len(first)] + start).tolist())
        i = int(np.argmax(diff))
        if worst_index < 0 or diff[i] > max_abs:
            max_abs = float(diff[i])
            worst_index = start + i
        nonzero = r != 0
        if nonzero.any():
            max_rel = max(max_rel, float((diff[nonzero] / np.abs(r[nonzero])).max()))
        finite_diff = np.where(finite, o - r, 0.0)
        err_sq += float(np.dot(finite_diff, finite_diff))
        ref_sq += float(np.dot(r, r))
    rel_l2 = float(np.sqrt(err_sq / ref_sq)) if ref_sq > 0 else float(np.sqrt(err_sq))
    if nan_count or inf_count:
        rel_l2 = float("inf")

    def mismatch(index: int) -> Mismatch:
        return Mismatch(*_position(index, shape), float(flat_out[index]), float(flat_ref[index]))

    return VerifyReport(
        passed=failing == 0,
        atol=atol,
        rtol=rtol,
        elements=int(flat_out.size),
        failing=failing,
        nan_count=nan_count,
        inf_count=inf_count,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        rel_l2_error=rel_l2,
        worst=mismatch(worst_index) if worst_index >= 0 and flat_out.size else None,
        first_failures=[mismatch(i) for i in first],
    )
