import numpy as np
import pytest

from attnbench.backends.cpu import flash_attention_cpu
from attnbench.bench.verify import compare_outputs
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Testcase
from tests.conftest import random_testcase
from tests.large_scores import (
    FLOAT32_EXP_LIMIT,
    LARGE_SCORE_KINDS,
    check_large_scores,
    large_score_testcase,
    max_scaled_score,
)


@pytest.mark.parametrize("B, N, d", [(2, 1, 32), (3, 17, 48), (2, 100, 80), (1, 1000, 128), (4, 128, 64), (2, 33, 1)])
def test_blocked_flash_matches_float64(B, N, d, rng):
    tc = random_testcase(B, N, d, rng)
    report = compare_outputs(flash_attention_cpu(tc), reference_output(tc))
    assert report.passed, report
    assert report.rel_l2_error <= 1e-5


def test_tile_width_does_not_change_the_result(rng):
    tc = random_testcase(2, 70, 16, rng)
    np.testing.assert_allclose(flash_attention_cpu(tc, 32), flash_attention_cpu(tc, 7), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("B, N, d", [(2, 100, 32), (2, 256, 64), (1, 1000, 128), (3, 17, 48)])
@pytest.mark.parametrize("kind", LARGE_SCORE_KINDS)
def test_large_scores_keep_the_softmax_safe(kind, B, N, d, rng):
    """Q*30 (scores in the hundreds), zero Q, V*1000: each within the course rule scaled to V's range."""
    tc = large_score_testcase(kind, B, N, d, rng)
    if kind == "q30":
        assert max_scaled_score(tc) > 2 * FLOAT32_EXP_LIMIT  # the premise: exp(score) overflows float32
    report, problems = check_large_scores(kind, tc, flash_attention_cpu(tc))
    assert not problems, f"cpu on {kind} B={B} N={N} d={d}: " + "; ".join(problems)


def test_zero_query_gives_the_mean_of_v(rng):
    """Every score is 0, so each output row is the mean of V's rows, whatever the tile width."""
    tc = large_score_testcase("zero_q", 2, 70, 8, rng)
    expected = np.broadcast_to(tc.v.astype(np.float64).mean(axis=1, keepdims=True), tc.v.shape)
    for tile in (32, 7):
        np.testing.assert_allclose(flash_attention_cpu(tc, tile), expected, rtol=1e-5, atol=1e-6)


def test_the_output_is_the_same_whatever_blas_threads_the_process_has(rng):
    """A worker process gets its share of the cores: the cpu variant must give it the same bits."""
    from threadpoolctl import threadpool_limits

    testcase = random_testcase(3, 1000, 64, rng)
    with threadpool_limits(limits=2, user_api="blas"):
        two = flash_attention_cpu(testcase)
    with threadpool_limits(limits=1, user_api="blas"):
        one = flash_attention_cpu(testcase)
    assert np.array_equal(one, two)


def test_a_long_cpu_pass_shows_its_progress_tile_by_tile(monkeypatch):
    """`run` shows a long host pass as it goes (rich then gives its expected time); short ones stay quiet."""
    from contextlib import contextmanager

    import attnbench
    from attnbench.backends import cpu

    shown = {}

    @contextmanager
    def recorder(description, total):
        done = shown.setdefault(description, [total, 0])
        yield lambda n: done.__setitem__(1, done[1] + n)

    attnbench.run("odd_17x48", "cpu", timing=attnbench.TimingOptions(reps=1), progress=recorder)
    assert not any(d.startswith("cpu pass") for d in shown)  # a short pass: no bar
    monkeypatch.setattr(cpu, "REPORTED_FROM_FLOPS", 0)
    attnbench.run("odd_17x48", "cpu", timing=attnbench.TimingOptions(reps=1), progress=recorder)
    passes = {d: v for d, v in shown.items() if d.startswith("cpu pass")}
    assert "cpu pass 1 on odd_17x48" in passes
    assert all(total == done == 2 * 1 for total, done in passes.values())  # B = 2 items, one tile of 32 columns


def test_a_compare_shows_its_long_cpu_passes_through_its_progress(monkeypatch):
    from contextlib import contextmanager

    import attnbench
    from attnbench.backends import cpu
    from attnbench.output.render.terminal import MatrixProgress

    shown = []

    class Recording(MatrixProgress):
        @contextmanager
        def progress(self, description, total):
            shown.append(description)
            yield lambda n: None

    monkeypatch.setattr(cpu, "REPORTED_FROM_FLOPS", 0)
    with Recording("compare") as listener:
        attnbench.compare("cpu", "odd_17x48", timing=attnbench.TimingOptions(reps=1), listener=listener)
    assert any(d.startswith("cpu pass 1 on ") for d in shown), shown


@pytest.mark.parametrize("make", [
    lambda rng: rng.uniform(-3e38, 3e38, size=(2, 3, 70, 4)),  # scores beyond float32: inf - inf was NaN
    lambda rng: np.full((1, 3, 100, 8), 3e38),  # every weight 1: a row's sum of values beyond float32
])
def test_finite_inputs_near_the_float32_limit_give_the_finite_answer(make, rng):
    from attnbench.cases.reference import reference_output

    testcase = Testcase(make(rng).astype(np.float32))
    out, want = flash_attention_cpu(testcase), reference_output(testcase)
    assert np.isfinite(want).all() and np.isfinite(out).all()
    assert np.allclose(out, want, rtol=1e-6, atol=0)


def test_only_values_that_could_overflow_float32_leave_the_course_algorithms_float32(rng):
    """The float64 fallback is for extreme inputs only: the course's range stays the float32 algorithm."""
    from attnbench.backends import cpu

    testcase = random_testcase(2, 40, 8, rng)
    assert not cpu._beyond_float32(testcase.q, testcase.k, testcase.v, 40, 8)
    big = np.float32(1e19)  # a score of |q| |k| sqrt(d) beyond float32's 3.4e38
    assert cpu._beyond_float32(testcase.q * big, testcase.k * big, testcase.v, 40, 8)
    assert cpu._beyond_float32(testcase.q, testcase.k, testcase.v * np.float32(1e37), 40, 8)  # a sum of 40 of them
