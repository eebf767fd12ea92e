"""The float64 reference on the GPU: its chunks cover every output row once within the memory asked for,
the host side joins them as the CPU path would (with a stand-in engine here), a GPU that fails leaves the
work to the CPU, and on a GPU (marker gpu) it agrees with the CPU reference within one float32 ulp."""

import numpy as np
import pytest

from attnbench.cases import gpu_reference
from attnbench.locations import CACHE_ENV
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

    def attention(self, qkv, r0, r1, dtype):
        assert qkv.dtype == np.float32 and qkv.shape[1] == 3
        q = qkv[:, 0, r0:r1]
        self.calls.append(q.shape)
        return attention_rows_float64(q, qkv[:, 1], qkv[:, 2]).astype(dtype)


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


def test_a_chunk_of_whole_items_holds_no_more_than_one_launch_can_grid():
    chunks = list(chunk_plan(Shape(70000, 1, 4)))  # one key an item: a budget of 512 MiB would take them all
    assert [(c.b0, c.b1) for c in chunks] == [(0, 65535), (65535, 70000)]


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
        raise RuntimeError("nvcc fatal: cannot build the kernel")

    monkeypatch.setattr(gpu_reference, "_availability", [""])
    monkeypatch.setattr(gpu_reference, "gpu_reference_output", fails)
    testcase = Testcase(rng.uniform(-3, 3, size=(2, 3, 40, 8)).astype(np.float32))
    found = gpu_reference.float64_reference(testcase, dtype=np.float32)
    assert np.array_equal(found, reference_output(testcase, dtype=np.float32))
    assert "cannot build the kernel" in gpu_reference.why_not_gpu() == gpu_reference.failed_over()


def test_a_gpu_short_of_memory_once_is_tried_again_for_the_next_reference(monkeypatch, rng):
    """Red team: a program of another GPU's worker, where a box sees every GPU, can fill this GPU's memory while
    references are made; one out-of-memory sent every later reference of the process to the CPU (t29: 26 s)."""
    tries = []

    def short_once(testcase, progress, dtype):
        tries.append(dtype)
        if len(tries) == 1:
            raise MemoryError("out of device memory")
        return chunked_reference(testcase, NumpyAttention(), progress, dtype)

    monkeypatch.setattr(gpu_reference, "_availability", [""])
    monkeypatch.setattr(gpu_reference, "_short_of_memory", [])
    monkeypatch.setattr(gpu_reference, "gpu_reference_output", short_once)
    testcase = Testcase(rng.uniform(-3, 3, size=(2, 3, 40, 8)).astype(np.float32))
    first = gpu_reference.float64_reference(testcase, dtype=np.float32)
    assert np.array_equal(first, reference_output(testcase, dtype=np.float32))  # the CPU's, this once
    assert gpu_reference.float64_reference(testcase, dtype=np.float32).dtype == np.float32 and len(tries) == 2
    assert gpu_reference.why_not_gpu() == ""  # the GPU is still this machine's for references
    assert "out of device memory" in gpu_reference.failed_over()  # and the judge says a reference went to the CPU


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
    (Shape(70000, 1, 4), None),  # more items than a launch's grid holds: two chunks
    (Shape(3, 70, 65), "float64"),  # kept in float64: the device writes doubles, not rounded floats
]


@pytest.mark.gpu
@pytest.mark.parametrize("shape, how", GPU_CASES, ids=lambda x: str(x))
def test_the_gpu_reference_agrees_with_the_cpu_one_within_one_float32_ulp(shape, how):
    if gpu_reference.why_not_gpu():
        pytest.skip(f"no GPU reference here: {gpu_reference.why_not_gpu()}")
    testcase = _large_values(shape, 40.0) if how == "large" else seeded_testcase(shape, 11)
    budget = how if isinstance(how, int) else gpu_reference.DEVICE_SCORE_BYTES
    if how == "float64":
        found = gpu_reference.gpu_reference_output(testcase, dtype=np.float64, score_bytes=budget)
        expected = reference_output(testcase, dtype=np.float64)
        assert found.dtype == np.float64 and np.allclose(found, expected, rtol=1e-12, atol=1e-13)
        return
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


@pytest.mark.gpu
def test_references_made_in_one_held_context_are_the_same_and_the_context_is_let_go_after():
    if gpu_reference.why_not_gpu():
        pytest.skip(f"no GPU reference here: {gpu_reference.why_not_gpu()}")
    import pycuda.driver as driver

    first, second = seeded_testcase(Shape(2, 64, 32), 3), seeded_testcase(Shape(1, 2049, 48), 4)
    alone = [gpu_reference.gpu_reference_output(t, dtype=np.float32) for t in (first, second)]
    before = driver.Context.get_current()  # the session's `gpu` fixture holds one once a test has asked for it
    with gpu_reference.one_gpu_context():
        assert driver.Context.get_current() == before  # retained by the first reference, on this thread
        together = [gpu_reference.gpu_reference_output(first, dtype=np.float32)]
        held = driver.Context.get_current()
        together.append(gpu_reference.gpu_reference_output(second, dtype=np.float32))
        assert held is not None and driver.Context.get_current() == held  # one context, kept between them
    assert all(np.array_equal(a, b) for a, b in zip(alone, together))
    assert driver.Context.get_current() == before


def _stand_in_driver(monkeypatch, mode: int | Exception) -> None:
    """pycuda's driver as far as shares_the_gpu asks it: device 0's compute mode (or an error)."""
    import sys
    import types

    def attribute(which):
        if isinstance(mode, Exception):
            raise mode
        return mode

    driver = types.SimpleNamespace(Device=lambda n: types.SimpleNamespace(get_attribute=attribute),
                                   device_attribute=types.SimpleNamespace(COMPUTE_MODE="COMPUTE_MODE"),
                                   compute_mode=types.SimpleNamespace(DEFAULT=0, EXCLUSIVE_PROCESS=3))
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(driver=driver))
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)


@pytest.mark.parametrize("available, mode, shares", [
    ("", 0, True),  # the default mode: any number of processes
    ("", 3, False),  # exclusive to one process: the program would find the judge's context there
    ("", RuntimeError("driver gone"), False),
    ("no CUDA GPU is present", 0, False),  # the CPU's references: a program beside them takes their cores
])
def test_a_program_runs_beside_the_references_only_on_a_gpu_in_its_default_mode(monkeypatch, available, mode,
                                                                                 shares):
    monkeypatch.setattr(gpu_reference, "_availability", [available])
    _stand_in_driver(monkeypatch, mode)
    assert gpu_reference.shares_the_gpu() is shares


def test_kernel_built_waits_for_the_held_sessions_build_and_passes_over_its_failure(monkeypatch):
    import threading

    release = threading.Event()
    monkeypatch.setattr(gpu_reference, "_started", lambda: release.wait(10) and (_ for _ in ()).throw(OSError("no nvcc")))
    gpu_reference.kernel_built()  # no session held: nothing to wait for
    with gpu_reference.one_gpu_context():
        waited = threading.Thread(target=gpu_reference.kernel_built)
        waited.start()
        waited.join(0.2)
        assert waited.is_alive()  # still building
        release.set()
        waited.join(10)
        assert not waited.is_alive()  # the build's failure is the references' to say


@pytest.mark.gpu
def test_this_gpus_compute_mode_decides_whether_a_program_shares_it():
    if gpu_reference.why_not_gpu():
        pytest.skip(f"no GPU reference here: {gpu_reference.why_not_gpu()}")
    import pycuda.driver as driver

    mode = driver.Device(0).get_attribute(driver.device_attribute.COMPUTE_MODE)
    assert gpu_reference.shares_the_gpu() is (mode == driver.compute_mode.DEFAULT)


def test_without_a_gpu_one_held_context_holds_nothing_and_the_reference_is_the_cpus(monkeypatch, rng):
    monkeypatch.setattr(gpu_reference, "_availability", ["no CUDA GPU is present"])
    monkeypatch.setattr(gpu_reference, "gpu_reference_output", lambda *a, **k: pytest.fail("no GPU here"))
    testcase = Testcase(rng.uniform(-3, 3, size=(2, 3, 40, 8)).astype(np.float32))
    with gpu_reference.one_gpu_context():
        (session,) = gpu_reference._held
        assert session.ready.result() is False
        found = gpu_reference.float64_reference(testcase, dtype=np.float32)
    assert gpu_reference._held == [] and np.array_equal(found, reference_output(testcase, dtype=np.float32))


def test_a_gpu_start_that_fails_beside_the_caller_leaves_the_reference_to_the_cpu(monkeypatch, rng):
    """The context and the kernel's build start on a thread of their own: a build that fails there (no nvcc) is
    the GPU reference failing, said once, and the CPU makes it."""
    monkeypatch.setattr(gpu_reference, "_availability", [""])

    def no_nvcc():
        raise OSError("nvcc not found")

    monkeypatch.setattr(gpu_reference, "_started", no_nvcc)
    testcase = Testcase(rng.uniform(-3, 3, size=(1, 3, 20, 4)).astype(np.float32))
    import sys
    import types

    driver = types.SimpleNamespace(init=lambda: None, Device=lambda n: None)
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(driver=driver))
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    with gpu_reference.one_gpu_context():
        found = gpu_reference.float64_reference(testcase, dtype=np.float32)
    assert np.array_equal(found, reference_output(testcase, dtype=np.float32))
    assert gpu_reference.why_not_gpu() == "the GPU reference failed (OSError: nvcc not found)"


@pytest.mark.parametrize("blocks, items, n, splits", [
    (528, 16, 2048, 1),  # t22's chunk: 16 items of 32 row tiles
    (32, 1, 32768, 9),  # t29's slab: 32 tiles, 264 blocks wanted
    (1, 1, 3000, 2),  # a short row: at least 1024 keys a split
    (1, 1, 100, 1),
    (2, 60000, 1 << 20, 1),  # the grid's z holds items x splits
])
def test_the_weighted_values_split_their_keys_only_where_the_tiles_give_too_few_blocks(blocks, items, n, splits):
    assert gpu_reference.key_splits(blocks, items, n, 264) == splits


class _Allocation:
    def __init__(self, log: list, nbytes: int) -> None:
        self.log, self.nbytes = log, nbytes

    def free(self) -> None:
        self.log.append(("free", self))


class _Driver:
    """Just enough of pycuda.driver to watch what becomes of PycudaAttention's buffers."""

    def __init__(self) -> None:
        self.log: list = []
        self.made: list[_Allocation] = []

    def mem_alloc(self, nbytes: int) -> _Allocation:
        self.made.append(_Allocation(self.log, nbytes))
        return self.made[-1]

    def memset_d8(self, allocation: _Allocation, value: int, nbytes: int) -> None:
        self.log.append(("zeroed", allocation, value, nbytes))

    class device_attribute:
        MULTIPROCESSOR_COUNT = "sms"

    class Context:
        @staticmethod
        def get_device():
            class Device:
                def get_attribute(self, name):
                    return 132
            return Device()


def test_every_device_buffer_of_a_reference_is_zeroed_before_it_is_freed():
    """The reference's buffers hold a case's input and its answer (the output rounded as the check takes it), made on
    the GPU the programs run on right before their runs: freed as they were, the next program's allocation could hold
    its own answer (red team, by reading). Each is zeroed whole before it is freed, a grown one and the last ones."""
    class Module:
        def get_function(self, name):
            return name

    driver = _Driver()
    engine = gpu_reference.PycudaAttention(driver, Module())
    engine._buffer("out", 100)
    engine._buffer("out", 4000)  # grows: the first is let go
    engine._buffer("qkv", 3)
    engine.free()
    assert len(driver.made) == 3
    for allocation in driver.made:
        events = [e for e in driver.log if e[1] is allocation]
        assert events == [("zeroed", allocation, 0, allocation.nbytes), ("free", allocation)]


@pytest.mark.gpu
def test_a_reference_leaves_no_answer_in_the_device_memory_it_freed():
    """Memory allocated after a reference (as a program's first allocation would be) holds none of its output."""
    if gpu_reference.why_not_gpu():
        pytest.skip(f"no GPU reference here: {gpu_reference.why_not_gpu()}")
    import pycuda.driver as driver

    testcase = seeded_testcase(Shape(4, 256, 64), 5)
    with gpu_reference.one_gpu_context():
        answer = gpu_reference.gpu_reference_output(testcase, dtype=np.float32)
        found = np.empty(64 << 20, dtype=np.uint8)  # more than every buffer of the reference together
        allocation = driver.mem_alloc(found.nbytes)
        try:
            driver.memcpy_dtoh(found, allocation)
        finally:
            allocation.free()
    rows = answer.reshape(-1, 64).view(np.uint8)
    assert rows[0].tobytes() not in found.tobytes() and rows[-1].tobytes() not in found.tobytes()


def test_the_reference_kernel_is_never_loaded_from_pycudas_compiler_cache(monkeypatch, tmp_path):
    """pycuda's cache is a folder every process of the judge's user can write (a program judged without the
    sandbox): a cubin planted there under the reference's key would be every later judge's yardstick."""
    import sys
    import types

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))  # root's judges keep it in a cache of their own (root_cubins)

    asked = {}

    def compile_cuda(source, **options):
        asked.update(options)
        return b"cubin"

    compiler = types.SimpleNamespace(compile=compile_cuda)
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(compiler=compiler))
    monkeypatch.setitem(sys.modules, "pycuda.compiler", compiler)
    monkeypatch.setattr(gpu_reference, "_cubins", {})
    device = types.SimpleNamespace(compute_capability=lambda: (9, 0))
    assert gpu_reference._kernel(device) == b"cubin"
    assert asked["cache_dir"] is False and asked["arch"] == "sm_90"


def test_the_drivers_start_begun_on_a_thread_gives_the_answer_asked_for_after(monkeypatch):
    """start_finding: the answer found once, on its thread; whoever asks meanwhile waits for it, not a second start."""
    import threading

    starts: list[str] = []
    release = threading.Event()
    monkeypatch.setattr(gpu_reference, "_availability", [])

    def slow_find() -> str:
        release.wait(10)
        if not gpu_reference._availability:
            starts.append(threading.current_thread().name)
            gpu_reference._availability.append("no CUDA GPU is present")
        return gpu_reference._availability[0]

    monkeypatch.setattr(gpu_reference, "_why_not_gpu", slow_find)
    gpu_reference.start_finding()
    threading.Timer(0.2, release.set).start()
    assert gpu_reference.why_not_gpu() == "no CUDA GPU is present"
    assert len(starts) == 1
    for thread in threading.enumerate():
        if thread.name == "attnbench-driver-start":
            thread.join(10)
    gpu_reference.start_finding()  # answered already: no thread starts
    assert not any(t.name == "attnbench-driver-start" for t in threading.enumerate())
