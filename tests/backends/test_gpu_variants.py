"""Each GPU variant on odd and course-like shapes against float64, on fresh random inputs.

The runner poisons the output buffer with NaN before the pass, so unwritten elements fail verify.
"""

import numpy as np
import pytest

from attnbench.bench.runner import run_variant
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.verify import compare_outputs
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import gpu_variants
from tests.conftest import random_testcase

pytestmark = pytest.mark.gpu

ODD_SHAPES = [(3, 1, 32), (2, 17, 48), (3, 100, 80), (2, 1000, 128), (2, 17, 1), (5, 100, 32), (3, 1000, 64), (2, 33, 64)]
COURSE_LIKE_SHAPES = [(64, 128, 32), (16, 256, 64), (2, 2048, 32), (1, 4096, 64), (3, 1536, 64), (1, 640, 512)]
ONE_PASS = TimingPolicy(warmup=0, reps=1, flush_l2=False)


def check_variant(gpu, variant, B, N, d, seed=None):
    seed = np.random.SeedSequence(seed).entropy
    tc = random_testcase(B, N, d, np.random.default_rng(seed))
    run = run_variant(variant, tc, "random", gpu, ONE_PASS)
    output, measurement = run.output, run.measurement
    report = compare_outputs(output, reference_output(tc))
    where = f"{variant.name} on B={B} N={N} d={d} (seed {seed})"
    assert report.nan_count == 0, f"{where}: {report.nan_count} elements unwritten or NaN"
    assert report.passed, f"{where}: {report.failing} failing, worst {report.worst}"
    assert report.rel_l2_error <= 1e-5, f"{where}: relL2 {report.rel_l2_error:.3g}"
    assert measurement.kernel.median > 0


@pytest.mark.parametrize("shape", ODD_SHAPES + COURSE_LIKE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("variant", gpu_variants(), ids=lambda v: v.name)
def test_variant_matches_float64(gpu, variant, shape):
    if variant.refusal(Shape(*shape)):
        pytest.skip(variant.refusal(Shape(*shape)))
    check_variant(gpu, variant, *shape)


@pytest.mark.parametrize("variant", gpu_variants(), ids=lambda v: v.name)
def test_batch_chunks_and_long_sequences(gpu, variant):
    """A batch large enough to be split into chunks, and a long sequence, where accepted."""
    for shape in ((2000, 128, 32), (1, 16384, 64)):
        if variant.refusal(Shape(*shape)) is None:
            check_variant(gpu, variant, *shape)


def test_singlehead_overflow_is_caught_not_passed(gpu):
    """The unsafe softmax overflows on large scores; verify must see Inf/NaN and fail."""
    from attnbench.kernels.catalogue import get_variant

    variant = get_variant("singlehead")
    tc = random_testcase(1, 256, 32, np.random.default_rng(), low=20.0, high=30.0)
    run = run_variant(variant, tc, "overflow", gpu, ONE_PASS)
    output, _ = run.output, run.measurement
    report = compare_outputs(output, reference_output(tc))
    assert not report.passed and report.nan_count + report.inf_count > 0
