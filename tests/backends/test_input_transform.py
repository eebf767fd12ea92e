"""The verified passes' input changes: their answers are known, and they always change the input."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench.backends.cpu import flash_attention_cpu
from attnbench.backends.input_transform import InputTransform, batch_cycles, single_cycle
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Shape, Testcase
from tests.conftest import random_testcase


@pytest.mark.parametrize("n", [1, 2, 3, 17, 128])
def test_a_single_cycle_moves_every_index(n, rng):
    perm = single_cycle(n, rng)
    assert sorted(perm) == list(range(n))
    assert n == 1 or not np.any(perm == np.arange(n))
    assert [len(c) for c in batch_cycles(perm)] == ([n] if n > 1 else [])


@pytest.mark.parametrize("B,N", [(3, 20), (1, 20), (4, 1), (1, 1)])
def test_the_changed_input_has_the_known_answer(B, N, rng):
    tc = random_testcase(B, N, 8, rng)
    transform = InputTransform.draw(tc.shape, rng)
    changed = Testcase(transform.apply(tc.qkv))
    assert not np.array_equal(changed.qkv.view(np.uint32), tc.qkv.view(np.uint32))  # every kind of shape changes
    want = transform.expected_items(reference_output(tc), 0, B)
    np.testing.assert_allclose(reference_output(changed), want, atol=1e-12, rtol=1e-9)
    # the cpu variant, a float32 kernel, gives the moved answer within rounding
    np.testing.assert_allclose(flash_attention_cpu(changed), transform.expected_items(flash_attention_cpu(tc), 0, B),
                               atol=1e-5)


def test_the_kinds_say_what_changed_in_degenerate_shapes(rng):
    assert InputTransform.draw(Shape(1, 1, 8), rng).kinds() == ["V negated"]
    assert InputTransform.draw(Shape(1, 5, 8), rng).kinds() == ["Q rows permuted", "K and V rows permuted together",
                                                                "V negated"]
    assert InputTransform.draw(Shape(5, 1, 8), rng).kinds() == ["batch items permuted", "V negated"]
    assert InputTransform.identity(Shape(5, 5, 8)).kinds() == []


def test_two_changes_compose_into_one(rng):
    tc = random_testcase(5, 7, 4, rng)
    first, second = InputTransform.draw(tc.shape, rng), InputTransform.draw(tc.shape, rng)
    assert np.array_equal(second.apply(first.apply(tc.qkv)), first.then(second).apply(tc.qkv))
    assert not first.then(second).negate_v  # negated twice


def test_draws_come_from_the_os_not_a_seed():
    shape = Shape(160, 128, 64)
    assert not np.array_equal(InputTransform.draw(shape).q_rows, InputTransform.draw(shape).q_rows)


def test_expected_items_by_group_match_the_whole(rng):
    out = rng.standard_normal((9, 6, 4)).astype(np.float32)
    transform = InputTransform.draw(Shape(9, 6, 4), rng)
    whole = transform.expected_items(out, 0, 9)
    assert np.array_equal(np.concatenate([transform.expected_items(out, 0, 4), transform.expected_items(out, 4, 9)]),
                          whole)
    assert np.array_equal(whole, -out[transform.batch][:, transform.q_rows])
