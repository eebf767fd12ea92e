"""The fresh samples' values (attnbench/cases/fresh_values.py): new seeds, the case's range, and a range that only
the host's input gives."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_a_constant_tensor_still_gets_fresh_values():
    r = InputRange((0.5, 0.0, 0.0), (0.5, 1.0, 1.0))
    assert r.bounds(0) == (-0.5, 2.0) and r.bounds(1) == (0.0, 1.0)


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
