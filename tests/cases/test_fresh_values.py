"""The fresh samples' values (attnbench/cases/fresh_values.py): new seeds, the case's range, and a range that only
the host's input gives."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench.bench.verify import COURSE_ATOL
from attnbench.cases import suite
from attnbench.cases.fresh_values import SUITE_RANGE, InputRange, draw_seed, file_range, fresh_values, tensor_seed
from attnbench.cases.inputs import FileInput, SuiteInput, SyntheticInput
from attnbench.cases.testcase import Shape, Testcase, write_testcase
from attnbench.errors import InputNotFinite


def test_seeds_come_from_the_entropy_and_each_tensor_has_its_own_stream():
    assert draw_seed(lambda n: bytes(range(n))) == int.from_bytes(bytes(range(8)), "little")
    assert len({draw_seed() for _ in range(100)}) == 100
    assert len({tensor_seed(7, t) for t in range(3)}) == 3


def test_values_fill_the_range_and_never_repeat_between_seeds():
    a = fresh_values(1, 0, 0, 100_000, -3.0, 6.0)
    b = fresh_values(2, 0, 0, 100_000, -3.0, 6.0)
    assert a.dtype == np.float32 and a.min() >= -3.0 and a.max() < 3.0
    assert a.min() < -2.99 and a.max() > 2.99 and abs(float(a.mean())) < 0.05  # uniform over the range
    assert np.count_nonzero(a == b) < 50  # independent streams: equal only by chance (24-bit values)
    assert np.array_equal(fresh_values(1, 0, 500, 10, -3.0, 6.0), a[500:510])  # element e is a function of (seed, e)


FLT_MAX = float(np.finfo(np.float32).max)


def _fresh_case(ranges: InputRange, seed: int = 11, shape: tuple[int, int, int] = (2, 64, 16)) -> list[np.ndarray]:
    count = int(np.prod(shape))
    return [fresh_values(seed, t, 0, count, *ranges.bounds(t)).reshape(shape) for t in range(3)]


def _attention64(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), 1, 2) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v.astype(np.float64)


def _attention32(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = (q @ np.swapaxes(k, 1, 2)) * np.float32(1 / np.sqrt(q.shape[-1]))
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p @ v) / p.sum(axis=-1, keepdims=True)


def _assert_not_guessable(ranges: InputRange) -> None:
    """Fresh values that vary, a float32 pass on them finite, and an answer no constant or mean of V gives within
    ten times the course's tolerance."""
    q, k, v = _fresh_case(ranges)
    for x in (q, k, v):
        assert np.isfinite(x).all() and len(np.unique(x)) > x.size // 2
    with np.errstate(over="raise", invalid="raise"):
        assert np.isfinite(_attention32(q, k, v)).all()
    exact = _attention64(q, k, v)
    assert np.abs(exact - np.median(exact)).max() > 10 * COURSE_ATOL  # no constant answers it
    assert np.abs(exact - v.astype(np.float64).mean(axis=1, keepdims=True)).max() > 10 * COURSE_ATOL  # nor V's mean


def test_a_constant_tensor_still_gets_fresh_values_that_vary():
    r = InputRange((0.5, 0.0, 0.0), (0.5, 1.0, 1.0))
    assert r.bounds(0) == (-0.5, 2.0) and r.bounds(1) == (-0.5, 2.0)  # widened about the middle to +-1
    _assert_not_guessable(InputRange((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)))
    big = InputRange((1e6, 1e6, 1e6), (1e6, 1e6, 1e6))  # +-1 is below float32's resolution there: 1/64 of it
    low, span = big.bounds(0)
    assert span == 2e6 / 64 and len(np.unique(fresh_values(1, 0, 0, 10_000, low, span))) > 9_000


def test_the_overflowing_span_of_the_red_teams_six_stores_gives_varied_finite_values():
    """-FLT_MAX and +FLT_MAX in each tensor: float32's high - low is inf, and the old fallback [low - 1, low + 1)
    rounded to a constant -FLT_MAX tensor whose exact answer is -FLT_MAX to the bit. Now the span is float64 and
    the range clamped to +-2^40."""
    r = InputRange((-FLT_MAX,) * 3, (FLT_MAX,) * 3)
    assert r.bounds(0) == (-(2.0**40), 2.0**41)
    q, k, v = _fresh_case(r)
    assert len(np.unique(v)) > v.size // 2 and np.isfinite(v).all() and np.abs(v).max() <= 2.0**40
    with np.errstate(over="raise", invalid="raise"):
        assert np.isfinite(_attention32(q, k, v)).all()
    same = InputRange((FLT_MAX,) * 3, (FLT_MAX,) * 3)  # one value at the top of float32: still varied, finite
    low, span = same.bounds(2)
    assert low + span <= 2.0**40 and span > 0 and len(np.unique(fresh_values(3, 2, 0, 1000, low, span))) > 900


def test_infinite_and_nan_bounds_never_reach_the_generator():
    r = InputRange((-np.inf, np.nan, 0.0), (np.inf, 1.0, np.inf))
    for t in range(3):
        low, span = r.bounds(t)
        assert np.isfinite(low) and np.isfinite(np.float32(span)) and span >= 2.0


@pytest.mark.parametrize("low, high", [((0.0, -3.0, -3.0), (1e-6, 3.0, 3.0)),        # V pinched to [0, 1e-6]
                                       ((0.0, -3.0, -3.0), (2.0**-100, 3.0, 3.0)),   # Q flattened: weights uniform
                                       ((-3.0, 0.0, -3.0), (3.0, 2.0**-100, 3.0)),   # K flattened likewise
                                       ((-3.0, -3.0, 7.0), (3.0, 3.0, 7.0))],        # V one value
                         ids=["vpinch", "qflat", "kflat", "vconstant"])
def test_the_red_teams_narrowed_ranges_give_answers_that_need_the_arithmetic(low, high):
    """The red team narrowed a tensor's range (then read from the device after a launch) so that every fresh
    answer was one constant or V's mean. The range is read from the host now; a narrow range of a user's own file
    is widened too, so no sample's answer can be guessed within the tolerance."""
    _assert_not_guessable(InputRange(low, high))


def test_the_suites_range_is_kept():
    assert SUITE_RANGE.bounds(0) == (-3.0, 6.0)
    _assert_not_guessable(SUITE_RANGE)


def test_the_range_comes_from_the_host_input(tmp_path):
    rng = np.random.default_rng(3)
    q, k, v = rng.uniform(-1, 2, (3, 5, 7, 4)).astype(np.float32)
    v *= 10
    testcase = Testcase.from_arrays(q, k, v)
    r = InputRange.of(testcase.q, testcase.k, testcase.v)
    assert r.low == (float(q.min()), float(k.min()), float(v.min())) and r.nonfinite == (0, 0, 0)
    assert r.high == (float(q.max()), float(k.max()), float(v.max()))
    path = tmp_path / "mine.in"
    write_testcase(path, testcase)
    assert file_range(path, testcase.shape) == r == FileInput(path).value_range() == FileInput(path).value_range(testcase)
    assert SuiteInput(suite.get_case("t02")).value_range() == SUITE_RANGE == SyntheticInput(Shape(1, 2, 3), 1).value_range()


def test_nan_in_the_input_is_the_inputs_fault():
    q = np.zeros((1, 2, 2), np.float32)
    k = q.copy()
    k[0, 1, 1] = np.nan
    with pytest.raises(InputNotFinite, match=r"^mine: the input holds NaN or Inf values \(1 in K\)") as caught:
        InputRange.of(q, k, q).require_finite("mine")
    assert caught.value.exit_code == 2
