"""The median's confidence interval: its ranks checked against the binomial distribution itself."""

import math

import pytest

from attnbench.results.stats import KernelStats, _interval_rank, median_interval


def exact_rank(n: int) -> int:
    """The largest k with P(Binomial(n, 1/2) < k) <= 2.5%, in integers: 40 * C(n, <k) <= 2**n (0 when none)."""
    below, k = 0, 0
    while k < n and 40 * (below + math.comb(n, k)) <= 2**n:
        below += math.comb(n, k)
        k += 1
    return k


def test_up_to_60_samples_the_ranks_are_exact():
    assert [_interval_rank(n) for n in range(61)] == [exact_rank(n) for n in range(61)]
    assert [_interval_rank(n) for n in (5, 6, 9, 17, 22, 60)] == [0, 1, 2, 5, 6, 22]  # a printed table's values


def test_beyond_60_the_approximation_is_never_narrower_and_at_most_one_rank_wider():
    """The normal approximation gives the exact rank or one below it (a slightly wider, safe interval)."""
    for n in range(61, 401):
        assert exact_rank(n) - 1 <= _interval_rank(n) <= exact_rank(n), n
    assert (_interval_rank(61), _interval_rank(100), _interval_rank(400)) == (22, 40, 180)
    assert median_interval([float(v) for v in range(1, 101)]) == (40.0, 61.0)


def test_the_interval_is_written_out_once_known():
    stats = KernelStats([float(v) for v in range(10, 0, -1)])  # ten samples, out of order
    assert stats.to_dict()["median_ci95_ms"] == [2.0, 9.0]
    assert stats.to_dict()["noise"] == pytest.approx(7 / 2 / 5.5)
