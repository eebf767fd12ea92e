import numpy as np
import pytest

from attnbench.backends.cpu import flash_attention_cpu
from attnbench.bench.verify import compare_outputs
from attnbench.cases.reference import reference_output
from tests.conftest import random_testcase


@pytest.mark.parametrize("B, N, d", [(2, 1, 32), (3, 17, 48), (2, 100, 80), (1, 1000, 128), (4, 128, 64), (2, 33, 1)])
def test_blocked_flash_matches_float64(B, N, d):
    tc = random_testcase(B, N, d, np.random.default_rng())
    report = compare_outputs(flash_attention_cpu(tc), reference_output(tc))
    assert report.passed, report
    assert report.rel_l2_error <= 1e-5


def test_tile_width_does_not_change_the_result():
    tc = random_testcase(2, 70, 16, np.random.default_rng(3))
    np.testing.assert_allclose(flash_attention_cpu(tc, 32), flash_attention_cpu(tc, 7), rtol=2e-5, atol=2e-6)
