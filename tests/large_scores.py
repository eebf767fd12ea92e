"""Inputs with large scores, for the variants that claim a safe softmax (the cpu one and accuracy "float32").

Inputs in [-3, 3] keep every scaled score under 9*sqrt(d), so a softmax without the max subtraction
never overflows on them. These cases do reach the limits:

- `q30`: Q scaled by 30, so scaled scores reach the hundreds and exp(score) overflows float32 (~88.7);
- `zero_q`: Q = 0, every score 0, so the output is the plain mean of V's rows;
- `v1000`: V scaled by 1000, so an absolute tolerance meant for values in [-3, 3] means nothing.

Each is judged by the course rule scaled to V's range (|out - ref| <= 5e-3 * max|V| / 3) and by a
relative L2 bound; a variant of accuracy "course" by half that rule (its margin) and relL2 <= 1e-3. The bound is 1e-5, as for any float32 variant, except for `q30`: there a score of a
few hundred carries a float32 rounding error near 1e-5 (2^-24 * sum|q_i k_i| / sqrt(d)), which moves the
weights by as much, so 1e-4 (the cpu variant and a 3xTF32 emulation measure about 6e-6). Losing the max
subtraction gives Inf/NaN on `q30`, which fails any tolerance.
"""

from __future__ import annotations

import numpy as np

from attnbench.bench.verify import COURSE_ATOL, COURSE_MARGIN_ATOL, compare_outputs
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Testcase
from attnbench.results.verification import VerifyReport

LARGE_SCORE_KINDS = ("q30", "zero_q", "v1000")
REL_L2_BOUND = {"q30": 1e-4, "zero_q": 1e-5, "v1000": 1e-5}
COURSE_REL_L2_BOUND = 1e-3  # split FP16 scores and an FP16 P V measure about 2.2e-4 on every kind
FLOAT32_EXP_LIMIT = 88.72  # expf(x) is +Inf in float32 for x above about this


def large_score_testcase(kind: str, B: int, N: int, d: int, rng: np.random.Generator) -> Testcase:
    """Uniform values in [-3, 3), then Q times 30, Q zero, or V times 1000."""
    qkv = rng.uniform(-3.0, 3.0, size=(B, 3, N, d))
    if kind == "q30":
        qkv[:, 0] *= 30.0
    elif kind == "zero_q":
        qkv[:, 0] = 0.0
    elif kind == "v1000":
        qkv[:, 2] *= 1000.0
    else:
        raise ValueError(f"unknown large-score case {kind!r}; one of {LARGE_SCORE_KINDS}")
    return Testcase(qkv.astype(np.float32))


def max_scaled_score(tc: Testcase) -> float:
    """The largest q.k / sqrt(d) of the case, in float64."""
    q, k = tc.q.astype(np.float64), tc.k.astype(np.float64)
    return float((q @ np.swapaxes(k, 1, 2)).max() / np.sqrt(tc.shape.d))


def large_score_tolerance(tc: Testcase) -> tuple[float, float]:
    """(atol, rtol) of the course rule scaled to V's range: the check each sample of a run on the case gets (a
    variant whose arithmetic cannot hold the unscaled rule on V * 1000 refuses the case under it)."""
    return (COURSE_ATOL * float(np.abs(tc.v).max()) / 3.0, 0.0)


def check_large_scores(kind: str, tc: Testcase, output: np.ndarray,
                       accuracy: str = "float32") -> tuple[VerifyReport, list[str]]:
    """The verify report against float64 with the case's tolerance, and what is wrong (empty when right)."""
    course = accuracy == "course"
    atol = large_score_tolerance(tc)[0] * (COURSE_MARGIN_ATOL / COURSE_ATOL if course else 1.0)
    report = compare_outputs(output, reference_output(tc), atol=atol)
    problems = []
    if report.nan_count or report.inf_count:
        problems.append(f"{report.nan_count} NaN and {report.inf_count} Inf")
    if not report.passed:
        problems.append(f"{report.failing} of {report.elements} elements fail {report.rule()}, worst {report.worst}")
    bound = COURSE_REL_L2_BOUND if course else REL_L2_BOUND[kind]
    if not report.rel_l2_error <= bound:
        problems.append(f"relL2 {report.rel_l2_error:.3g} > {bound:g}")
    return report, problems
