"""Sweeps: the square-attention lab's harness, and sweeps over N or d of the (B, N, d) workload.

The square sweep reproduces the lab (its 102 sizes, its correctness rule, 4n^3 FLOPs, its report
line and its Average line) with kernel time from our engine; `LabTimer` gives the lab's own rule
(double the passes until one batch takes 0.1 s) instead. Its reference is float64: read from the
suite's stored reference when present, else computed once and stored for the next run.
"""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnbench import suite
from attnbench.inputs import BenchInput, SuiteInput, SyntheticInput
from attnbench.results import ResultSet
from attnbench.testcase import Shape
from attnbench.timing import KernelStats, TimingPolicy
from attnbench.verify import compare_outputs

# The lab's sizes: c-1, c, c+1 for c = 64, 128, ..., 2048, then 4095..4097 and 8191..8193.
SQUARE_SIZES: tuple[int, ...] = tuple(n for c in range(64, 2049, 64) for n in (c - 1, c, c + 1)) + (
    4095, 4096, 4097, 8191, 8192, 8193,
)
FLT_EPSILON = float(np.finfo(np.float32).eps)
LAB_TOLERANCE_FACTOR = 100  # sum |Y - Y_ref| <= 100 * n * n * FLT_EPSILON
LAB_MIN_BATCH_S = 0.1
# Sweeps over N or d keep B*N*d near this (16 Mi elements per tensor, 192 MiB of input) unless --batch.
SWEEP_ELEMENTS = 1 << 24


# -- the lab's correctness rule ----------------------------------------------------------------------
@dataclass(frozen=True)
class LabCheck:
    """The lab's rule: the sum of absolute errors over all elements within 100 * elements * FLT_EPSILON."""

    passed: bool
    l1_error: float
    bound: float
    nan_count: int
    max_abs_error: float
    rel_l2_error: float

    def to_dict(self) -> dict:
        return {
            "rule": "sum |Y - Y_ref| <= 100 * n * n * FLT_EPSILON",
            "passed": self.passed,
            "l1_error": self.l1_error,
            "bound": self.bound,
            "nan_count": self.nan_count,
            "max_abs_error": self.max_abs_error,
            "rel_l2_error": self.rel_l2_error,
        }

    def describe(self) -> str:
        if self.nan_count:
            return f"{self.nan_count} NaN/Inf elements (the lab's rule: sum |Y - Y_ref| <= 100 n^2 FLT_EPSILON)"
        return f"sum |Y - Y_ref| = {self.l1_error:.4g} exceeds 100 n^2 FLT_EPSILON = {self.bound:.4g}"


def lab_check(output: np.ndarray, reference: np.ndarray) -> LabCheck:
    """Check an output by the square-attention lab's rule (with the error metrics besides)."""
    report = compare_outputs(output, reference, atol=np.inf)
    l1 = 0.0
    flat_out, flat_ref = output.reshape(-1), reference.reshape(-1)
    step = 1 << 24
    for start in range(0, flat_out.size, step):
        diff = flat_out[start : start + step].astype(np.float64) - flat_ref[start : start + step].astype(np.float64)
        l1 += float(np.abs(diff).sum())
    bad = report.nan_count + report.inf_count
    bound = LAB_TOLERANCE_FACTOR * output.size * FLT_EPSILON
    passed = bad == 0 and np.isfinite(l1) and l1 <= bound
    return LabCheck(bool(passed), l1 if np.isfinite(l1) else float("inf"), bound, bad, report.max_abs_error,
                    report.rel_l2_error)


# -- the lab's timing rule ---------------------------------------------------------------------------
class LabTimer:
    """Double the number of back-to-back passes until one batch takes `min_batch_s` (no L2 flush)."""

    def __init__(self, min_batch_s: float = LAB_MIN_BATCH_S, max_passes: int = 1 << 20) -> None:
        self.min_batch_s = min_batch_s
        self.max_passes = max_passes
        self.last_extra: dict[str, Any] = {}

    def __call__(self, execution: Any, policy: TimingPolicy) -> KernelStats:
        execution.batch_ms(1)  # warm-up
        passes = 1
        while True:
            batch_ms = execution.batch_ms(passes)
            if batch_ms >= 1e3 * self.min_batch_s or passes >= self.max_passes:
                break
            passes *= 2
        self.last_extra = {"lab_passes": passes, "lab_seconds": batch_ms / 1e3}
        return KernelStats([batch_ms / passes])


# -- inputs -------------------------------------------------------------------------------------------
def _seed_for(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def parse_sizes(text: str | None) -> list[int]:
    """Square sizes: 'all' (the lab's 102), a comma list, and 'a-b' for the lab's sizes within [a, b]."""
    if text is None or text.strip() in ("", "all"):
        return list(SQUARE_SIZES)
    sizes: list[int] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if "-" in part:
            low, high = (int(x) for x in part.split("-", 1))
            sizes.extend(n for n in SQUARE_SIZES if low <= n <= high)
        else:
            sizes.append(int(part))
    if any(n < 1 for n in sizes):
        raise ValueError("square sizes must be positive")
    return list(dict.fromkeys(sizes))


def square_inputs(sizes: list[int]) -> list[BenchInput]:
    """The lab's n x n cases: suite cases sqN where the suite has them (in memory when not on disk)."""
    found: list[BenchInput] = []
    for n in sizes:
        name = f"sq{n}"
        if name in suite.SUITE:
            found.append(SuiteInput(suite.SUITE[name], in_memory=True))
        else:
            found.append(SyntheticInput(Shape(1, n, n), _seed_for(f"square {n}"), name))
    return found


def parse_values(text: str) -> list[int]:
    """Sweep values: a comma list, and 'a..b' for the powers-of-two doubling from a up to b."""
    values: list[int] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if ".." in part:
            low, high = (int(x) for x in part.split("..", 1))
            if low < 1 or high < low:
                raise ValueError(f"{part!r}: write low..high with 1 <= low <= high")
            v = low
            while v <= high:
                values.append(v)
                v *= 2
        else:
            values.append(int(part))
    if not values or any(v < 1 for v in values):
        raise ValueError(f"{text!r}: sweep values must be positive integers")
    return list(dict.fromkeys(values))


def shape_inputs(axis: str, values: list[int], batch: int | None, seq_len: int, head_dim: int) -> list[BenchInput]:
    """Synthetic (B, N, d) inputs along N or d; B keeps B*N*d near 16 Mi elements unless given."""
    found: list[BenchInput] = []
    for value in values:
        N, d = (value, head_dim) if axis == "N" else (seq_len, value)
        B = batch if batch is not None else max(1, SWEEP_ELEMENTS // (N * d))
        shape = Shape(B, N, d)
        found.append(SyntheticInput(shape, _seed_for(f"sweep {shape}")))
    return found


# -- the lab's report -----------------------------------------------------------------------------------
def lab_line(n: int, gflops: float, iterations: int, seconds: float) -> str:
    """The lab's report line (C's %.3g and %.3f)."""
    return "Size: %d\tGflop/s: %.3g (%d iter, %.3f seconds)" % (n, gflops, iterations, seconds)


def lab_report_lines(result: ResultSet, variant: str) -> list[str]:
    """One variant's square sweep in the lab's report format, with its Average line last."""
    lines, rates = [], []
    for label in result.case_labels:
        cell = result.cell(variant, label)
        case = result.case(label)
        n = case.shape.N if case else 0
        if cell is None:
            continue
        if not cell.ok:
            first_line = cell.message.splitlines()[0] if cell.message else ""
            lines.append(f"Size: {n}\t{cell.status.upper()}: {first_line}")
            continue
        assert cell.measurement is not None
        k = cell.measurement.kernel
        gflops = cell.measurement.flops / (k.median * 1e-3) / 1e9
        if "lab_passes" in cell.extra:
            iterations, seconds = int(cell.extra["lab_passes"]), float(cell.extra["lab_seconds"])
        else:
            iterations, seconds = k.count, sum(k.samples_ms) / 1e3
        lines.append(lab_line(n, gflops, iterations, seconds))
        rates.append(gflops)
    if rates:
        average = "Average %f" % statistics.fmean(rates)
        missing = len(result.case_labels) - len(rates)
        lines.append(average + (f"  ({missing} size(s) without a time are left out)" if missing else ""))
    return lines
