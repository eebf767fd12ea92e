"""Synthetic measurements and result sets, for tests of verdicts, saved results and reports."""

from __future__ import annotations

import numpy as np

from attnbench.cases.inputs import CaseInfo
from attnbench.cases.testcase import Shape
from attnbench.results.measurement import Measurement
from attnbench.results.resultset import OK, Cell, ResultSet, VariantInfo
from attnbench.results.stats import KernelStats

H200 = {
    "name": "NVIDIA H200", "index": 0, "compute_capability": "9.0", "sm_count": 132, "sm_clock_mhz": 1980.0,
    "memory_clock_mhz": 3201.0, "l2_bytes": 62914560, "total_memory_bytes": 150 << 30, "fp32_peak_tflops": 66.9,
    "driver_version": 13000, "cuda_version": "13.0.0", "pycuda_version": "2025.1",
}


def samples(median_ms: float, noise: float, count: int = 50, seed: int = 0) -> KernelStats:
    """Samples with the given median and (about) the given relative noise."""
    rng = np.random.default_rng(seed)
    values = rng.normal(1.0, noise, count) if noise > 0 else np.ones(count)
    values = values - np.median(values) + 1.0
    return KernelStats([float(median_ms * v) for v in values])


def measurement(variant: str, case: str, shape: Shape, median_ms: float, noise: float = 0.005, seed: int = 0,
                device: str = "NVIDIA H200") -> Measurement:
    return Measurement(variant=variant, case=case, shape=shape, device=device, compute_s=median_ms * 2e-3 + 0.1,
                       kernel=samples(median_ms, noise, seed=seed), compile_s=0.5, peak_flops=66.9e12)


def result_set(times: dict[str, dict[str, float]], shapes: dict[str, Shape], noise: float = 0.005,
               gpu: dict | None = H200, baseline: str | None = None, kind: str = "compare", seed: int = 0,
               sha: str = "ab" * 32, settings: dict | None = None) -> ResultSet:
    """A result set from {variant: {case: median_ms}}; a time of None makes a WRONG cell."""
    variants = list(times)
    cells = []
    for i, (variant, by_case) in enumerate(times.items()):
        for j, (case, ms) in enumerate(by_case.items()):
            if ms is None:
                cells.append(Cell(variant, case, "wrong", "3 of 100 elements fail |out - ref| <= 0.005",
                                  check={"passed": False, "max_abs_error": 0.1, "rel_l2_error": 1e-3}))
            else:
                m = measurement(variant, case, shapes[case], ms, noise, seed=seed + 100 * i + j)
                cells.append(Cell(variant, case, OK, "", m, {"passed": True, "max_abs_error": 1e-6, "rel_l2_error": 1e-7}))
    return ResultSet(
        kind=kind,
        metadata={"date": "2026-11-21T12:00:00+00:00", "gpu": gpu, "git": {"commit": "0" * 40, "dirty": False},
                  "numpy_version": "2.4", "python_version": "3.11"},
        policy={"warmup": 2, "reps": None, "target_noise": 0.01, "min_samples": 10, "min_time_s": 0.25,
                "timeout_s": 10.0, "flush_l2": True},
        variants=[VariantInfo(v, "004", "test", "gpu", f"{v}.cu", "1234", ("-O3",)) for v in variants],
        cases=[CaseInfo(c, s, sha, "suite") for c, s in shapes.items()],
        cells=cells,
        baseline=baseline or variants[0],
        settings=settings or {},
    )


COURSE_SHAPES = {"t10": Shape(10, 2048, 64), "t11": Shape(13600, 128, 32), "t22": Shape(500, 2048, 64),
                 "t29": Shape(4, 32768, 32), "t30": Shape(2, 32768, 64)}
