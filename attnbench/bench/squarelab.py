"""The square-attention lab's rules: its correctness check and its timing (double the passes until one
batch takes 0.1 s), for `sweep square`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnbench.bench.fresh_samples import FreshSampler
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.verify import compare_outputs
from attnbench.cases.testcase import OutputFile
from attnbench.results.stats import KernelStats

FLT_EPSILON = float(np.finfo(np.float32).eps)
LAB_TOLERANCE_FACTOR = 100  # sum |Y - Y_ref| <= 100 * n * n * FLT_EPSILON
LAB_MIN_BATCH_S = 0.1


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


def lab_check(output: np.ndarray, reference: "np.ndarray | OutputFile") -> LabCheck:
    """Check an output by the square-attention lab's rule (with the error metrics besides)."""
    report = compare_outputs(output, reference, atol=np.inf)
    bad = report.nan_count + report.inf_count
    bound = LAB_TOLERANCE_FACTOR * output.size * FLT_EPSILON
    passed = bad == 0 and report.l1_error <= bound
    return LabCheck(bool(passed), report.l1_error, bound, bad, report.max_abs_error, report.rel_l2_error)


# -- the lab's timing rule ---------------------------------------------------------------------------
class LabTimer:
    """Double the number of back-to-back passes until one batch takes `min_batch_s` (no L2 flush). Each batch
    runs on a fresh input and its last output is checked (`FreshSampler.batch`); the passes within a batch share
    their input, as the lab's rule times them."""

    flush_l2 = False

    def __init__(self, min_batch_s: float = LAB_MIN_BATCH_S, max_passes: int = 1 << 20) -> None:
        self.min_batch_s = min_batch_s
        self.max_passes = max_passes
        self.last_extra: dict[str, Any] = {}

    def __call__(self, sampler: FreshSampler, policy: TimingPolicy) -> KernelStats:
        sampler.batch(1, False)  # warm-up
        passes = 1
        while True:
            batch_ms = sampler.batch(passes, False)
            if batch_ms >= 1e3 * self.min_batch_s or passes >= self.max_passes:
                break
            passes *= 2
        self.last_extra = {"lab_passes": passes, "lab_seconds": batch_ms / 1e3}
        return KernelStats([batch_ms / passes])
