"""The float64 reference on the GPU: its chunks cover every output row once within the memory asked for,
the host side joins them as the CPU path would (with a stand-in engine here), a GPU that fails leaves the
work to the CPU, and on a GPU (marker gpu) it agrees with the CPU reference within one float32 ulp."""

import numpy as np
import pytest

from attnbench.cases import gpu_reference
from attnbench.cases.gpu_reference import Chunk, chunk_plan, chunked_reference
from attnbench.cases.inputs import seeded_testcase
from attnbench.cases.reference import attention_rows_float64, reference_output
from attnbench.cases.testcase import Shape, Testcase


def within_one_float32_ulp(found: np.ndarray, expected: np.ndarray) -> bool:
    """Each element equal or a neighbouring float32 (two float64 sums in different orders can round apart)."""
    found, expected = found.astype(np.float32), expected.astype(np.float32)
    gap = np.abs(found.astype(np.float64) - expected.astype(np.float64))
    ulp = np.spacing(np.maximum(np.abs(found), np.abs(expected))).astype(np.float64)
    return bool(np.all(gap <= ulp))


class NumpyAttention:
    """A stand-in for the GPU: the CPU's float64 formula on each chunk, and a record of the chunks."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int]] = []

    def attention(self, q, k, v):
        assert q.dtype == k.dtype == v.dtype == np.float32
        self.calls.append(q.shape)
        return attention_rows_float64(q, k, v)


@pytest.mark.parametrize("shape, budget", [
    (Shape(3, 100, 32), 1 << 20),  # groups of whole items
    (Shape(2, 1000, 16), 100_000),  # slabs of rows: 12 rows of 1000 keys
    (Shape(2, 1000, 16), 5_000),  # less than one row: a row at a time
    (Shape(7, 1, 4), 8),
    (Shape(5, 17, 3), 17 * 17 * 8 * 2),  # two items a chunk, the last alone
])
def test_the_chunks_cover_every_output_row_once_within_the_memory_asked_for(shape, budget):
    chunks = list(chunk_plan(shape, budget))
    covered = np.zeros((shape.B, shape.N), dtype=int)
    for chunk in chunks:
        covered[chunk.b0:chunk.b1, chunk.r0:chunk.r1] += 1
        assert chunk.rows * shape.N * 8 <= budget or chunk.rows == 1
    assert (covered == 1).all()
    assert sum(c.rows for c in chunks) == shape.B * shape.N


def test_a_long_case_goes_in_slabs_of_one_item():
    chunks = list(chunk_plan(Shape(4, 32768, 32)))  # t29: 2048 rows of 32768 float64 scores are 512 MiB
    assert chunks[0] == Chunk(0, 1, 0, 2048) and len(chunks) == 4 * 16


def test_the_chunks_join_into_the_cpu_reference_and_report_their_rows(rng):
    testcase = Testcase(rng.uniform(-3, 3, size=(3, 3, 130, 24)).astype(np.float32))
    engine, rows = NumpyAttention(), []
    found = chunked_reference(testcase, engine, rows.append, np.float32, score_bytes=130 * 8 * 50)
    assert found.dtype == np.float32 and found.shape == (3, 130, 24)
    assert within_one_float32_ulp(found, reference_output(testcase, dtype=np.float32))
    assert len(engine.calls) == 3 * 3 and sum(rows) == 3 * 130  # slabs of 50, 50 and 30 rows of each item


def test_without_a_gpu_the_reference_is_the_cpu_one(monkeypatch, rng):
    monkeypatch.setattr(gpu_reference, "_availability", ["no CUDA GPU is present"])
    monkeypatch.setattr(gpu_reference, "gpu_reference_output", lambda *a, **k: pytest.fail("no GPU here"))
    testcase = Testcase(rng.uniform(-3, 3, size=(2, 3, 40, 8)).astype(np.float32))
    found = gpu_reference.float64_reference(testcase, dtype=np.float32)
    assert np.array_equal(found, reference_output(testcase, dtype=np.float32))


def test_a_gpu_that_fails_leaves_the_work_to_the_cpu_and_says_why(monkeypatch, rng):
    def fails(*args, **kwargs):
        raise MemoryError("out of device memory")

    monkeypatch.setattr(gpu_reference, "_availability", [""])
    monkeypatch.setattr(gpu_reference, "gpu_reference_output", fails)
    testcase = Testcase(rng.uniform(-3, 3, size=(2, 3, 40, 8)).astype(np.float32))
    found = gpu_reference.float64_reference(testcase, dtype=np.float32)
    assert np.array_equal(found, reference_output(testcase, dtype=np.float32))
    assert "out of device memory" in gpu_reference.why_not_gpu()


def test_with_a_gpu_the_reference_is_made_there(monkeypatch, rng):
    made = []
    monkeypatch.setattr(gpu_reference, "_availability", [""])
    monkeypatch.setattr(gpu_reference, "gpu_reference_output",
                        lambda testcase, progress, dtype: made.append(dtype) or chunked_reference(
                            testcase, NumpyAttention(), progress, dtype))
    testcase = Testcase(rng.uniform(-3, 3, size=(2, 3, 40, 8)).astype(np.float32))
    assert gpu_reference.float64_reference(testcase, dtype=np.float32).dtype == np.float32 and made == [np.float32]


def _large_values(shape: Shape, scale: float) -> Testcase:
    """Inputs far outside the suite's range: scores in the thousands, softmax rows one-hot or nearly."""
    return Testcase((seeded_testcase(shape, 7).qkv * np.float32(scale)).astype(np.float32))


GPU_CASES = [
    (Shape(3, 1, 32), None),  # one key: the output is V's row
    (Shape(2, 17, 1), None),  # d = 1
    (Shape(2, 17, 48), None),
    (Shape(2, 1000, 128), None),
    (Shape(1, 16, 8192), None),  # a head wider than any tile count fits in one pass
    (Shape(1, 1025, 1025), None),
    (Shape(1, 16384, 64), None),  # long: slabs of rows
    (Shape(13, 129, 33), 129 * 8 * 37),  # a budget that forces slabs with a ragged last one
    (Shape(2, 300, 64), "large"),  # scores of order 10^4: the maximum subtracted must hold
]


@pytest.mark.gpu
@pytest.mark.parametrize("shape, how", GPU_CASES, ids=lambda x: str(x))
def test_the_gpu_reference_agrees_with_the_cpu_one_within_one_float32_ulp(shape, how):
    if gpu_reference.why_not_gpu():
        pytest.skip(f"no GPU reference here: {gpu_reference.why_not_gpu()}")
    testcase = _large_values(shape, 40.0) if how == "large" else seeded_testcase(shape, 11)
    budget = how if isinstance(how, int) else gpu_reference.DEVICE_SCORE_BYTES
    found = gpu_reference.gpu_reference_output(testcase, dtype=np.float32, score_bytes=budget)
    expected = reference_output(testcase, dtype=np.float32)
    assert np.isfinite(found).all()
    assert within_one_float32_ulp(found, expected), float(np.abs(found - expected).max())


@pytest.mark.gpu
def test_the_gpu_reference_is_made_again_after_its_context_was_let_go():
    if gpu_reference.why_not_gpu():
        pytest.skip(f"no GPU reference here: {gpu_reference.why_not_gpu()}")
    testcase = seeded_testcase(Shape(2, 64, 32), 3)
    first = gpu_reference.gpu_reference_output(testcase, dtype=np.float32)
    second = gpu_reference.gpu_reference_output(testcase, dtype=np.float32)
    assert np.array_equal(first, second)
