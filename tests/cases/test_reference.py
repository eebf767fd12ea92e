import numpy as np

import attnbench.cases.reference as reference
from attnbench.cases.testcase import Testcase
from attnbench.host_threads import HOST_THREADS_ENV
from tests.conftest import random_testcase


def direct_formula(tc: Testcase) -> np.ndarray:
    """softmax(QK^T/sqrt(d))V written out plainly in float64, one item at a time."""
    out = []
    for q, k, v in zip(tc.q.astype(np.float64), tc.k.astype(np.float64), tc.v.astype(np.float64)):
        s = q @ k.T / np.sqrt(q.shape[1])
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out.append((p / p.sum(axis=1, keepdims=True)) @ v)
    return np.array(out)


def test_a_case_computed_by_hand():
    """N=2, d=4, so 1/sqrt(d) = 1/2 (1/d would give 1/4): row 0 scores (0, ln 3) -> weights (1/4, 3/4);
    row 1 has a zero query -> weights (1/2, 1/2)."""
    ln3 = np.log(3.0)
    q = [[[2 * ln3, 0, 0, 0], [0, 0, 0, 0]]]
    k = [[[0, 0, 0, 0], [1, 0, 0, 0]]]
    v = [[[1, 0, 0, 0], [0, 4, 0, -8]]]
    tc = Testcase.from_arrays(np.array(q), np.array(k), np.array(v))
    expected = [[[1 / 4, 3, 0, -6], [1 / 2, 2, 0, -4]]]
    np.testing.assert_allclose(reference.reference_output(tc), expected, rtol=1e-6, atol=1e-7)  # Q is float32


def test_reference_matches_the_direct_formula(rng):
    tc = random_testcase(3, 37, 9, rng)
    np.testing.assert_allclose(reference.reference_output(tc), direct_formula(tc), rtol=1e-12, atol=1e-13)


def test_row_slabs_give_the_same_answer(monkeypatch, rng):
    """Long sequences are done a slab of rows at a time; the result must not change."""
    tc = random_testcase(2, 50, 4, rng)
    whole = reference.reference_output(tc)
    monkeypatch.setenv(HOST_THREADS_ENV, "2")
    monkeypatch.setattr(reference, "SCORE_MEMORY_BYTES", 2 * 50 * 8 * 7)  # 7 rows per slab on each of 2 threads
    rows_done = []
    sliced = reference.reference_output(tc, rows_done.append)
    np.testing.assert_allclose(sliced, whole, rtol=1e-13, atol=1e-14)
    assert sum(rows_done) == 2 * 50 and max(rows_done) == 7


def test_reference_is_stable_for_large_scores(rng):
    """Scores far beyond exp's float range still give a finite, exact softmax."""
    tc = random_testcase(1, 8, 4, rng, low=-300, high=300)
    out = reference.reference_output(tc)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, direct_formula(tc), rtol=1e-12)


def test_short_sequences_go_a_group_of_items_at_a_time_and_report_their_rows(monkeypatch, rng):
    tc = random_testcase(5, 6, 3, rng)
    whole = reference.reference_output(tc)
    monkeypatch.setenv(HOST_THREADS_ENV, "3")
    monkeypatch.setattr(reference, "SCORE_MEMORY_BYTES", 3 * 2 * 6 * 6 * 8)  # two items' scores per block
    rows_done = []
    grouped = reference.reference_output(tc, rows_done.append)
    np.testing.assert_allclose(grouped, whole, rtol=1e-13, atol=1e-14)
    assert rows_done == [12, 12, 6]  # items 0-1, 2-3, 4: rows of six each


def test_a_block_smaller_than_one_row_goes_row_by_row(monkeypatch, rng):
    tc = random_testcase(1, 9, 2, rng)
    whole = reference.reference_output(tc)
    monkeypatch.setenv(HOST_THREADS_ENV, "1")
    monkeypatch.setattr(reference, "SCORE_MEMORY_BYTES", 8)
    rows_done = []
    np.testing.assert_allclose(reference.reference_output(tc, rows_done.append), whole, rtol=1e-13, atol=1e-14)
    assert rows_done == [1] * 9


def test_the_output_is_stored_in_the_dtype_asked_for(rng):
    """A stored reference is asked for in float32: computed in float64, held rounded, never a float64 copy."""
    tc = random_testcase(2, 7, 3, rng)
    exact = reference.reference_output(tc)
    stored = reference.reference_output(tc, dtype=np.float32)
    assert exact.dtype == np.float64 and stored.dtype == np.float32
    np.testing.assert_array_equal(stored, exact.astype(np.float32))


def test_ctrl_c_drops_the_blocks_not_started_rather_than_waiting_for_them(monkeypatch, rng):
    """A long case's reference queues its blocks a row slab each (a million for N = 1048576): a Ctrl-C while they
    were queued waited for every one queued (hours), as `with ThreadPoolExecutor` does."""
    import os
    import signal
    import threading
    import time

    import pytest

    N = 200_000
    tc = random_testcase(1, N, 1, rng)
    monkeypatch.setenv(HOST_THREADS_ENV, "2")
    monkeypatch.setattr(reference, "SCORE_MEMORY_BYTES", 2 * N * 8)  # one row a block
    done, real = [], reference.attention_rows_float64

    def slow_rows(q, k, v):
        time.sleep(0.002)
        done.append(1)
        return real(q, k, v)

    monkeypatch.setattr(reference, "attention_rows_float64", slow_rows)
    threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        reference.reference_output(tc)
    assert len(done) < 1000, f"{len(done)} blocks were computed after the Ctrl-C"
