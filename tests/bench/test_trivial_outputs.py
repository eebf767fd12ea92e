"""The course check refuses the outputs a kernel could return without computing attention: zeros, the mean of V
over its item, and V itself (KernelBench found zeros passing an absolute tolerance). On every suite case: the
first rows of its first item, generated from the case's seed in file order (no file written), against their
float64 attention; a trivial output wrong there is wrong for the case. (Where N = 1 the softmax has one key: V,
and its mean, are the answer, so there only zeros must fail.)"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from attnbench.bench.verify import COURSE_ATOL
from attnbench.cases import suite
from attnbench.cases.reference import attention_rows_float64

ROWS = 16


def first_item(case: suite.SuiteCase) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V of item 0: the first 3*N*d values of the case's stream."""
    N, d = case.shape.N, case.shape.d
    count = 3 * N * d
    values = np.concatenate(list(itertools.islice(_chunks(case.seed, count), None)))[:count]
    q, k, v = values.reshape(3, N, d)
    return q, k, v


def _chunks(seed: int, count: int):
    done = 0
    for chunk in suite.input_values(seed, count):
        yield chunk
        done += chunk.size
        if done >= count:
            return


def trivial_outputs(v: np.ndarray, rows: int) -> dict[str, np.ndarray]:
    return {"zeros": np.zeros((rows, v.shape[1]), np.float32),
            "mean of V": np.broadcast_to(v.mean(axis=0, dtype=np.float64).astype(np.float32), (rows, v.shape[1])),
            "V itself": v[:rows]}


@pytest.mark.parametrize("case", list(suite.SUITE.values()), ids=lambda c: c.name)
def test_trivial_outputs_fail_the_course_check(case):
    q, k, v = first_item(case)
    rows = min(ROWS, case.shape.N)
    exact = attention_rows_float64(q[None, :rows], k[None], v[None])[0]
    for name, output in trivial_outputs(v, rows).items():
        if case.shape.N == 1 and name != "zeros":
            assert np.allclose(output, exact, atol=1e-6)  # one key: its V is the answer, not a trick
            continue
        worst = float(np.max(np.abs(output.astype(np.float64) - exact)))
        assert worst > COURSE_ATOL, f"{name} passes the course check on {case.name}'s first rows (worst {worst:.3g})"
