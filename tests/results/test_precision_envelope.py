"""attnbench.results.precision_envelope: which value ranges put the course rule out of a reduced-precision unit's
reach, against the arithmetic of its bound, and a numpy emulation of its roundings showing the bound holds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnbench.cases.fresh_values import SUITE_RANGE, InputRange
from attnbench.results.compute_units import COMPUTE_UNITS
from attnbench.results.precision_envelope import SPLIT_FP16_WITH_FP16_PV as SPLIT, error_bound

COURSE_ATOL = 5e-3


def ranges(q: float, k: float, v: float) -> InputRange:
    return InputRange((-q, -k, -v), (q, k, v))


def test_only_the_split_fp16_unit_declares_roundings_of_its_own():
    declared = {name for name, unit in COMPUTE_UNITS.items() if unit.rounding is not None}
    assert declared == {"wgmma16s"} and COMPUTE_UNITS["wgmma16s"].rounding is SPLIT


def test_the_course_ranges_are_within_reach_at_every_course_shape():
    # |V| up to 3: half FP16's spacing at 3 (2^-9 / 2 = 2^-10 = 9.77e-4) and P's 2^-11 * 3 = 1.46e-3: 2.44e-3
    for N, d in ((128, 32), (2048, 64), (32768, 32), (32768, 64), (4096, 128)):
        bound = error_bound(SPLIT, SUITE_RANGE, N, d)
        assert bound.values == 2.0**-10 and bound.weights == pytest.approx(3 * 2.0**-11)
        assert bound.representation == pytest.approx(2.441e-3, rel=1e-3) and bound.representation <= COURSE_ATOL
    # the scores at d = 64: sqrt(64) * (3 * 2^-22 * 9 + 2^-25 * 6) = 5.29e-5 per score; (e^(2 * 5.29e-5) - 1) * 3
    bound = error_bound(SPLIT, SUITE_RANGE, 512, 64)
    assert bound.scores == pytest.approx(math.expm1(2 * 8 * (27 * 2.0**-22 + 6 * 2.0**-25)) * 3, rel=1e-9)
    assert bound.scores == pytest.approx(3.18e-4, rel=1e-2)
    # the tail at N = 512: 512 * 2^-25 / (1 + 512 * 2^-25) * 3 = 4.58e-5
    assert bound.tail == pytest.approx(4.58e-5, rel=1e-2)


def test_v_up_to_1000_is_out_of_reach_and_the_reason_says_why_in_numbers():
    # the hidden input of the issue (B 2, N 512, d 64; Q and K in [-3, 3]): V's half-spacing at 1000 is
    # 0.5 / 2 = 0.25, P's 2^-11 * 1000 = 0.488: 0.738 per element, 150 times the course's 5e-3
    bound = error_bound(SPLIT, ranges(3, 3, 1000), 512, 64)
    assert bound.values == 0.25 and bound.weights == pytest.approx(0.488, abs=1e-3)
    assert bound.representation == pytest.approx(0.738, abs=1e-3) and bound.representation > COURSE_ATOL
    assert bound.reason() == "|V| up to 1000 gives FP16 rounding errors up to 0.74 per element (V 0.25, P 0.49)"


@pytest.mark.parametrize("v, within", [(3, True), (5, True), (6, True), (7, False), (12, False), (1000, False)])
def test_the_edge_of_reach_is_where_v_and_ps_rounding_pass_the_tolerance(v, within):
    # |V| in [4, 8): FP16's spacing 2^-8, half of it 1.95e-3; with P's 2^-11 * |V|: 6 -> 4.88e-3, 7 -> 5.37e-3
    assert (error_bound(SPLIT, ranges(3, 3, v), 256, 64).representation <= COURSE_ATOL) is within


def test_large_scores_alone_do_not_put_the_rule_out_of_reach_but_count_in_the_full_bound():
    # Q times 30 (|Q| up to 90): the scores' worst case sqrt(64) * (3 * 2^-22 * 270 + 2^-25 * 93) = 1.57e-3 per
    # score, (e^(3.14e-3) - 1) * 3 = 9.4e-3, is in the full bound (a failed check's), not the refusal's
    bound = error_bound(SPLIT, ranges(90, 3, 3), 256, 64)
    assert bound.representation <= COURSE_ATOL
    assert bound.scores == pytest.approx(9.4e-3, rel=1e-2) and bound.full > 9.4e-3


def test_values_beyond_fp16_cannot_be_held_at_all():
    bound = error_bound(SPLIT, ranges(1e5, 3, 3), 128, 32)
    assert bound.beyond_format == "Q" and bound.representation == math.inf
    assert bound.reason() == "|Q| up to 1e+05 is beyond FP16's largest value 65504"


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hi = x.astype(np.float16)
    lo = (x - hi.astype(np.float32)).astype(np.float16)
    return hi.astype(np.float64), lo.astype(np.float64)


def _emulated(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The unit's arithmetic, each rounding as FP16 does it and every sum exact: Q K^T as hi*hi + hi*lo + lo*hi,
    P = exp(s - max) rounded to FP16, V rounded to FP16, divided by the exact sum of P."""
    (qh, ql), (kh, kl) = _split(q), _split(k)
    s = (qh @ kh.T + qh @ kl.T + ql @ kh.T) / math.sqrt(q.shape[-1])
    p = np.exp(s - s.max(1, keepdims=True))
    weights = p.astype(np.float16).astype(np.float64)
    return weights @ v.astype(np.float16).astype(np.float64) / p.sum(1, keepdims=True)


def _exact(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.T / math.sqrt(q.shape[-1])
    p = np.exp(s - s.max(1, keepdims=True))
    return p @ v / p.sum(1, keepdims=True)


@pytest.mark.parametrize("q, k, v, N, d", [(3, 3, 3, 512, 64), (3, 3, 1000, 512, 64), (3, 3, 6, 256, 64),
                                           (90, 3, 3, 256, 64), (3, 3, 3, 256, 128), (0.01, 0.01, 1000, 128, 32),
                                           (30, 30, 500, 200, 32)])
def test_the_emulated_roundings_stay_within_the_bound(q, k, v, N, d, rng):
    qs = rng.uniform(-q, q, (N, d)).astype(np.float32)
    ks = rng.uniform(-k, k, (N, d)).astype(np.float32)
    vs = rng.uniform(-v, v, (N, d)).astype(np.float32)
    error = float(np.abs(_emulated(qs, ks, vs) - _exact(qs, ks, vs)).max())
    bound = error_bound(SPLIT, ranges(q, k, v), N, d)
    assert error <= bound.full
    if bound.scores < bound.representation / 10:  # the scores' share small: V's and P's rounding bound it alone
        assert error <= bound.representation
    if v >= 500:  # a refusal there is no worst case on paper only: even weights spread over every key miss the rule
        assert error > COURSE_ATOL
