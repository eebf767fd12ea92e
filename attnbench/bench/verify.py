"""Compare an output with a reference: the course's rule plus the error metrics users need.

Both sides may be arrays or output files read in chunks, so a check never holds more than a few
chunks of float64 per thread at once, whatever the case's size. Chunks are compared on this process's
host threads (numpy releases the GIL), in order, so the result does not depend on their number.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from attnbench.cases.testcase import OutputFile, Shape
from attnbench.errors import ReferenceNotFinite
from attnbench.host_threads import host_threads
from attnbench.results.verification import Mismatch, VerifyReport

COURSE_ATOL = 5e-3  # every element within 5e-3 of the reference, as the course's checkers read it
# What a variant of accuracy "course" keeps to on every input it takes: half the course's tolerance, so that
# an input of another draw does not tip it over.
COURSE_MARGIN_ATOL = COURSE_ATOL / 2
CHUNK_ELEMENTS = 1 << 18  # 2 MiB of float64 per temporary: bounded memory; big enough that the GIL-held part is small


class FlatSource(Protocol):
    """Elements by flat index: an output file, or an array seen flat."""

    size: int

    def chunk(self, start: int, stop: int) -> np.ndarray: ...

    def value(self, index: int) -> float: ...


class ArraySource:
    """An in-memory array as a flat source."""

    def __init__(self, array: np.ndarray) -> None:
        self.flat = array.reshape(-1)
        self.size = int(self.flat.size)

    def chunk(self, start: int, stop: int) -> np.ndarray:
        return self.flat[start:stop]

    def value(self, index: int) -> float:
        return float(self.flat[index])


Comparable = "np.ndarray | OutputFile"


def as_source(data: "np.ndarray | OutputFile") -> FlatSource:
    return data if isinstance(data, OutputFile) else ArraySource(np.asarray(data))


def _shape_of(*sides: "np.ndarray | OutputFile") -> tuple[int, int, int] | None:
    for side in sides:
        if isinstance(side, OutputFile) and side.shape is not None:
            return (side.shape.B, side.shape.N, side.shape.d)
        if isinstance(side, np.ndarray) and side.ndim == 3:
            return side.shape  # type: ignore[return-value]
    return None


def _position(flat_index: int, shape: tuple[int, int, int]) -> tuple[int, int, int]:
    b, rest = divmod(flat_index, shape[1] * shape[2])
    row, col = divmod(rest, shape[2])
    return int(b), int(row), int(col)


@dataclass(frozen=True)
class FiniteCheck:
    """The check every output gets even without a reference: no NaN or Inf anywhere."""

    nonfinite: int
    elements: int

    @property
    def passed(self) -> bool:
        return self.nonfinite == 0

    def describe(self) -> str:
        return f"{self.nonfinite} of {self.elements} output elements are NaN or Inf"

    def to_dict(self) -> dict:
        return {"rule": "every element finite", "passed": self.passed, "nonfinite": self.nonfinite,
                "elements": self.elements}


def finite_check(output: np.ndarray) -> FiniteCheck:
    """Count NaN and Inf elements in chunks (cheap next to any pass)."""
    flat = output.reshape(-1)
    bad = sum(int((~np.isfinite(flat[i : i + CHUNK_ELEMENTS])).sum()) for i in range(0, flat.size, CHUNK_ELEMENTS))
    return FiniteCheck(bad, int(flat.size))


@dataclass
class _ChunkErrors:
    """One chunk's share of a comparison's counts, extremes and sums."""

    nan_count: int
    inf_count: int
    failing: int
    first: list[int]
    max_abs: float
    worst_index: int
    max_rel: float
    l1: float
    err_sq: float
    ref_sq: float
    ref_not_finite: int


def _chunk_errors(got: FlatSource, want: FlatSource, start: int, atol: float, rtol: float,
                  keep_failures: int) -> _ChunkErrors:
    """Elements [start, start + CHUNK_ELEMENTS) compared in float64 with few temporaries (workers
    checking at once on one host share its memory bandwidth), and no BLAS: a BLAS dot here ran every
    core's worth of spinning threads per chunk."""
    stop = start + CHUNK_ELEMENTS
    o32 = got.chunk(start, stop)
    r32 = want.chunk(start, stop)
    diff = np.subtract(o32, r32, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # Inf - Inf
        np.abs(diff, out=diff)
    # a NaN or Inf on either side makes the sum of the differences one (float32 differences summed in float64
    # cannot overflow): where it is finite, both sides are, and no pass looks for them (a class checks 26 GB)
    l1 = float(diff.sum())
    every_finite = math.isfinite(l1)
    finite = None if every_finite else np.isfinite(o32)
    all_finite = every_finite or bool(finite.all())
    nan_count = 0 if all_finite else int(np.isnan(o32).sum())
    inf_count = 0 if all_finite else int(np.isinf(o32).sum())
    ref_not_finite = 0 if every_finite else int((~np.isfinite(r32)).sum())
    if all_finite:
        err_sq = float(np.einsum("i,i->", diff, diff))
    else:
        finite_diff = np.where(finite, diff, 0.0)
        l1 = float(finite_diff.sum())
        err_sq = float(np.einsum("i,i->", finite_diff, finite_diff))
        diff[~finite] = np.inf
    abs_r = np.abs(r32)  # exact in float32
    i = int(np.argmax(diff))
    max_abs = float(diff[i])
    if not rtol and max_abs <= atol:  # every element within: no pass to count them (NaN is never <= atol)
        failing, first = 0, []
    else:
        within = diff <= (atol + rtol * abs_r.astype(np.float64)) if rtol else diff <= atol
        failing = diff.size - int(np.count_nonzero(within))
        first = (np.flatnonzero(~within)[:keep_failures] + start).tolist() if failing and keep_failures else []
    nonzero = abs_r != 0
    max_rel = 0.0
    if nonzero.any():
        with np.errstate(invalid="ignore"):  # inf / inf where the reference is infinite: refused after, not said
            np.divide(diff, abs_r, out=diff, where=nonzero)  # diff becomes the relative error where defined
        max_rel = float(np.max(diff, where=nonzero, initial=0.0))
    return _ChunkErrors(nan_count, inf_count, failing, first, max_abs, start + i, max_rel, l1, err_sq,
                        float(np.einsum("i,i->", r32, r32, dtype=np.float64)), ref_not_finite)


@dataclass
class _Totals:
    """The chunks' errors folded in chunk order: counts and sums added, the first failures kept, the
    largest error's first occurrence."""

    keep_failures: int
    nan_count: int = 0
    inf_count: int = 0
    failing: int = 0
    first: list[int] = field(default_factory=list)
    max_abs: float = 0.0
    worst_index: int = -1
    max_rel: float = 0.0
    l1: float = 0.0
    err_sq: float = 0.0
    ref_sq: float = 0.0
    ref_not_finite: int = 0

    def add(self, part: _ChunkErrors) -> None:
        self.nan_count += part.nan_count
        self.inf_count += part.inf_count
        self.failing += part.failing
        self.first.extend(part.first[: self.keep_failures - len(self.first)])
        if self.worst_index < 0 or part.max_abs > self.max_abs:
            self.max_abs, self.worst_index = part.max_abs, part.worst_index
        self.max_rel = max(self.max_rel, part.max_rel)
        self.l1 += part.l1
        self.err_sq += part.err_sq
        self.ref_sq += part.ref_sq
        self.ref_not_finite += part.ref_not_finite


def _totals(got: FlatSource, want: FlatSource, atol: float, rtol: float, keep_failures: int) -> _Totals:
    """Every chunk compared on the host's threads and folded in order."""
    totals = _Totals(keep_failures)
    starts = range(0, got.size, CHUNK_ELEMENTS)
    if len(starts) <= 1:  # one chunk (t01-t10's outputs): a pool's thread took 2 ms to start, the chunk 0.05 ms
        for start in starts:
            totals.add(_chunk_errors(got, want, start, atol, rtol, keep_failures))
        return totals
    with ThreadPoolExecutor(max_workers=max(1, min(host_threads(), len(starts)))) as pool:
        # map keeps chunk order, so the sums, the first failures and the worst element's tie-break are
        # the same whatever the number of threads
        for part in pool.map(lambda start: _chunk_errors(got, want, start, atol, rtol, keep_failures), starts):
            totals.add(part)
    return totals


def compare_outputs(
    out: "np.ndarray | OutputFile",
    ref: "np.ndarray | OutputFile",
    atol: float = COURSE_ATOL,
    rtol: float = 0.0,
    keep_failures: int = 5,
    shape: Shape | None = None,
) -> VerifyReport:
    """Check `out` against `ref` element by element; NaN and Inf always fail. Works in bounded chunks.

    Positions are (batch, row, column) when the shape is known (from `shape` or either side), else
    flat element indices.
    """
    if isinstance(out, np.ndarray) and isinstance(ref, np.ndarray) and out.shape != ref.shape:
        raise ValueError(f"output shape {out.shape} differs from reference shape {ref.shape}")
    got, want = as_source(out), as_source(ref)
    if got.size != want.size:
        raise ValueError(f"the output has {got.size} elements and the reference {want.size}")
    dims = (shape.B, shape.N, shape.d) if shape is not None else _shape_of(out, ref)
    totals = _totals(got, want, atol, rtol, keep_failures)
    if totals.ref_not_finite:  # a FAIL would blame the output (exit 1) for what no output can match
        raise ReferenceNotFinite(f"the reference holds NaN or Inf in {totals.ref_not_finite} of {want.size} elements; "
                                 "an attention output is finite, so this is no reference: give the reference output")
    rel_l2 = float(np.sqrt(totals.err_sq / totals.ref_sq)) if totals.ref_sq > 0 else float(np.sqrt(totals.err_sq))
    l1 = totals.l1
    if totals.nan_count or totals.inf_count:
        rel_l2 = l1 = float("inf")

    def mismatch(index: int) -> Mismatch:
        position = _position(index, dims) if dims else (None, None, None)
        return Mismatch(*position, got.value(index), want.value(index), index)

    return VerifyReport(
        passed=totals.failing == 0,
        atol=atol,
        rtol=rtol,
        elements=got.size,
        failing=totals.failing,
        nan_count=totals.nan_count,
        inf_count=totals.inf_count,
        max_abs_error=totals.max_abs,
        max_rel_error=totals.max_rel,
        rel_l2_error=rel_l2,
        worst=mismatch(totals.worst_index) if totals.worst_index >= 0 and got.size else None,
        first_failures=[mismatch(i) for i in totals.first],
        l1_error=l1,
        positions="batch, row, col" if dims else "flat",
    )
