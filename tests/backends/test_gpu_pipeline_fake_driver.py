"""GpuExecution and GpuStages on a fake pycuda driver: every driver call the pipeline makes, on the CPU.

The fake driver keeps 'device memory' in host arrays addressed by integers, runs copies and kernels
at once, and gives events a clock, so the real GPU classes run here unchanged: the pinned ring, the
three streams, chunk launches split by the variant's own launch chunk, the events' busy times, the
ring freed after use. The GPU tests hold the real driver to the same results.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from attnbench.backends.gpu_execution import GpuExecution
from attnbench.backends.gpu_pipeline import GpuStages
from attnbench.bench.chunk_plan import ChunkPlan
from attnbench.bench.pipeline import run_pipeline
from attnbench.cases.fresh_values import InputRange, fresh_values
from attnbench.cases.reference import reference_output
from attnbench.cases.streaming import TestcaseFile
from attnbench.cases.testcase import Shape, Testcase, write_testcase
from attnbench.errors import DeviceMemoryError
from attnbench.files import atomic_write
from attnbench.kernels.variant import Launch, Variant
from attnbench.results.limits import UNKNOWN_LIMITS
from tests.conftest import random_testcase
from tests.fakes import FakeFreshKernels, SteadyClock


class FakeDriver:
    """The parts of pycuda.driver that GpuExecution and GpuStages use."""

    class Error(Exception):
        pass

    class MemoryError(Error):
        pass

    def __init__(self, fail_pinning: bool = False) -> None:
        self.memory: dict[int, np.ndarray] = {}
        self.next_address = itertools.count(1 << 20, 1 << 32)
        self.fail_pinning = fail_pinning
        self.pinned_live = 0
        self.calls: list[str] = []
        driver = self

        class Allocation:
            def __init__(self, nbytes: int) -> None:
                self.address = next(driver.next_address)
                driver.memory[self.address] = np.zeros(nbytes, np.uint8)

            def __int__(self) -> int:
                return self.address

            def free(self) -> None:
                driver.memory.pop(self.address, None)

        class Pinned:
            """Host memory that a numpy array takes as its .base, with free(), as pycuda's pinned arrays do."""

            def __init__(self, shape, dtype) -> None:
                self.data = np.zeros(shape, dtype)
                self.__array_interface__ = self.data.__array_interface__
                driver.pinned_live += 1

            def free(self) -> None:
                driver.pinned_live -= 1

        class Event:
            def record(self, stream=None):
                self.t = time.perf_counter()
                return self

            def synchronize(self):
                return self

            def query(self) -> bool:
                return True

            def time_till(self, end) -> float:
                return (end.t - self.t) * 1e3

        class Stream:
            def wait_for_event(self, event) -> None:
                driver.calls.append("wait")

            def synchronize(self) -> None:
                pass

        class Context:
            @staticmethod
            def synchronize() -> None:
                pass

        self.Allocation, self.Pinned, self.Event, self.Stream, self.Context = Allocation, Pinned, Event, Stream, Context

    def mem_alloc(self, nbytes: int):
        return self.Allocation(nbytes)

    def view(self, address: int, nbytes: int) -> np.ndarray:
        for base, array in self.memory.items():
            if base <= address and address + nbytes <= base + array.size:
                return array[address - base : address - base + nbytes]
        raise self.Error(f"bad device address {address:#x} (+{nbytes})")

    def memset_d32(self, dest, value: int, count: int) -> None:
        self.view(int(dest), 4 * count).view(np.uint32)[:] = value

    def memcpy_htod(self, dest, src) -> None:
        flat = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
        self.view(int(dest), flat.size)[:] = flat

    def memcpy_htod_async(self, dest: int, src, stream) -> None:
        assert isinstance(stream, self.Stream)
        self.calls.append("h2d")
        self.memcpy_htod(dest, src)

    def memcpy_dtoh(self, dest: np.ndarray, src) -> None:
        dest.reshape(-1).view(np.uint8)[:] = self.view(int(src), dest.nbytes)

    def memcpy_dtoh_async(self, dest: np.ndarray, src: int, stream) -> None:
        assert isinstance(stream, self.Stream)
        self.calls.append("d2h")
        self.memcpy_dtoh(dest, src)

    def memcpy_dtod(self, dest, src, nbytes) -> None:
        self.calls.append("dtod")
        self.view(int(dest), nbytes)[:] = self.view(int(src), nbytes).copy()

    def pagelocked_empty(self, shape, dtype) -> np.ndarray:
        if self.fail_pinning:
            raise self.MemoryError("cuMemHostAlloc failed: out of memory")
        return np.asarray(self.Pinned(shape, dtype))


class FakeFunction:
    """A kernel that computes attention for B items at qkv into out, in float64 rounded to float32."""

    def __init__(self, driver: FakeDriver, launches: list) -> None:
        self.driver, self.launches = driver, launches

    def prepare(self, signature: str) -> None:
        assert signature in ("PPiii", "PPPPiii")  # interleaved, or separate (only uploaded, never launched)

    def prepared_async_call(self, grid, block, stream, qkv, out, B, N, d, shared_size=0) -> None:
        B, N, d = int(B), int(N), int(d)
        self.launches.append((int(B), stream))
        data = self.driver.view(int(qkv), 12 * B * N * d).view(np.float32).reshape(B, 3, N, d)
        result = reference_output(Testcase(data.copy())).astype(np.float32)
        self.driver.view(int(out), 4 * B * N * d)[:] = result.reshape(-1).view(np.uint8)


class FakeGpu:
    name = "fake GPU"
    sm_count = 132
    fp32_peak_flops = 1e12
    limits = UNKNOWN_LIMITS

    def __init__(self, driver: FakeDriver) -> None:
        self.driver = driver
        self.launches: list = []
        self.fresh: dict[str, FakeFreshKernels] = {}

    def support_function(self, source: str, name: str, signature: str) -> FakeFreshKernels:
        """cuda/fresh_samples.cu's kernels, in numpy."""
        assert source == "fresh_samples"
        return self.fresh.setdefault(name, FakeFreshKernels(self.driver.view, name))

    def compile(self, variant, shape):
        function = FakeFunction(self.driver, self.launches)
        return type("Compiled", (), {"functions": {"attn": function}, "compile_seconds": 0.0})()

    def clock(self, what):
        return SteadyClock()

    def l2_flush_pending_bytes(self) -> int:
        return 0

    def free_memory(self) -> int:
        return 1 << 34

    def allow_dynamic_smem(self, function, kernel, nbytes) -> None:
        pass


VARIANT = Variant(name="fakeattn", report="test", technique="test", source="naive.cu", max_chunk=3, launches=(
    Launch("attn", grid=lambda s: (1, s.B, 1), block=lambda s: (32, 1, 1), args=("qkv", "out", "B", "N", "d")),))


def pinned_free(driver: FakeDriver) -> bool:
    return driver.pinned_live == 0


@pytest.fixture
def fake():
    driver = FakeDriver()
    return driver, FakeGpu(driver)


def test_the_real_stages_on_a_fake_driver_give_the_unpipelined_bits(tmp_path, fake):
    driver, gpu = fake
    shape = Shape(11, 20, 8)
    testcase = random_testcase(shape.B, shape.N, shape.d, np.random.default_rng(5))
    path = tmp_path / "case.in"
    write_testcase(path, testcase)

    plain = GpuExecution(gpu, VARIANT, testcase)
    plain.upload()
    plain.run_pass()
    expected = plain.download()
    plain.free()
    assert [b for b, _ in gpu.launches] == [3, 3, 3, 2]  # the variant's own launch chunks
    gpu.launches.clear()

    plan = ChunkPlan(shape, 5, 2, keep_output=True)  # chunks of 5, 5, 1 items: launches of 3+2, 3+2, 1
    execution = GpuExecution(gpu, VARIANT, shape)
    stages = GpuStages(execution, plan.chunks, plan.depth, plan.items_per_chunk)
    kept = np.empty((shape.B, shape.N, shape.d), np.float32)
    with TestcaseFile(path, threads=2) as source:
        clocks = []
        atomic_write(tmp_path / "out.bin", lambda f: clocks.append(run_pipeline(plan, source, stages, f, kept)))
    assert [b for b, _ in gpu.launches] == [3, 2, 3, 2, 1]
    assert all(stream is not None for _, stream in gpu.launches), "chunk kernels go on the compute stream"
    assert np.array_equal(kept.view(np.uint32), expected.view(np.uint32))
    assert (tmp_path / "out.bin").read_bytes() == expected.tobytes()
    assert driver.calls.count("h2d") == 3 and driver.calls.count("d2h") == 3 and driver.calls.count("wait") == 6
    clock = clocks[0]
    assert clock.chunks == 3 and clock.ring_depth == 2 and clock.kernel_s > 0 and clock.device_busy_s > 0
    assert pinned_free(driver), "the ring is freed after the pass"
    execution.run_pass()  # the timed passes run on the resident buffers, as one plan over the whole batch
    assert [b for b, _ in gpu.launches[-4:]] == [3, 3, 3, 2] and gpu.launches[-1][1] is None
    execution.free()
    assert not driver.memory


def test_a_ring_that_cannot_be_pinned_is_an_environment_error(tmp_path, fake):
    driver, gpu = fake
    driver.fail_pinning = True
    shape = Shape(4, 8, 8)
    execution = GpuExecution(gpu, VARIANT, shape)
    stages = GpuStages(execution, [(0, 2), (2, 4)], 2, 2)
    with pytest.raises(DeviceMemoryError, match="pinning .* MiB of host memory .* --no-pipeline") as error:
        stages.setup()
    assert error.value.exit_code == 3
    execution.free()


def test_the_runner_launches_only_the_kernels_that_apply_to_the_shape(fake):
    """Launch.applies: a variant with a short-sequence path runs one kernel or the other, never both, and
    the runner asks the compiled module only for the kernels it launches."""
    driver, _ = fake

    class TwoPathGpu(FakeGpu):
        def compile(self, variant, shape):
            names = [launch.kernel for launch in variant.launches_for(shape)]
            self.asked = names
            functions = {name: FakeFunction(self.driver, self.launches) for name in names}
            return type("Compiled", (), {"functions": functions, "compile_seconds": 0.0})()

    two_paths = TwoPathGpu(driver)
    args = ("qkv", "out", "B", "N", "d")
    variant = Variant(name="twopath", report="test", technique="test", source="naive.cu", launches=(
        Launch("long", grid=lambda s: (1, s.B, 1), block=lambda s: (32, 1, 1), args=args, applies=lambda s: s.N > 16),
        Launch("short", grid=lambda s: (s.B, 1, 1), block=lambda s: (64, 1, 1), args=args, applies=lambda s: s.N <= 16),
    ))
    for N, kernel in ((8, "short"), (20, "long")):
        testcase = random_testcase(3, N, 8, np.random.default_rng(N))
        execution = GpuExecution(two_paths, variant, testcase)
        execution.upload()
        assert [r.kernel for r in execution._records] == [kernel] and two_paths.asked == [kernel]
        execution.run_pass()
        assert np.allclose(execution.download(), reference_output(testcase), atol=1e-5)
        execution.free()


@pytest.mark.parametrize("layout", ["qkv", "separate"])
def test_the_fresh_samples_steps_on_the_device_buffers(fake, layout):
    """bench.fresh_samples' steps on a GpuExecution, our kernels in numpy: a seed's values in every item of every tensor (both layouts), an honest output passing, a corrupted row and an unwritten element
    failing, and the input written again from the seed before the check (a kernel that changed it gains nothing)."""
    driver, gpu = fake
    args = ("qkv", "out", "B", "N", "d") if layout == "qkv" else ("q", "k", "v", "o", "B", "N", "d")
    variant = Variant(name="fakeattn", report="test", technique="test", source="naive.cu", layout=layout, launches=(
        Launch("attn", grid=lambda s: (1, s.B, 1), block=lambda s: (32, 1, 1), args=args),))
    testcase = random_testcase(4, 24, 8, np.random.default_rng(7))
    execution = GpuExecution(gpu, variant, testcase)
    execution.upload()
    ranges = InputRange.of(testcase.q, testcase.k, testcase.v)
    execution.refresh_inputs(12345, ranges)
    fresh = Testcase.from_arrays(*[fresh_values(12345, t, 0, 4 * 24 * 8, *ranges.bounds(t)).reshape(4, 24, 8)
                                   for t in range(3)])
    out = execution.fresh.output
    honest = reference_output(fresh).astype(np.float32)
    driver.view(out, honest.nbytes)[:] = honest.reshape(-1).view(np.uint8)
    q_first = execution.fresh.layout.firsts[0]
    driver.view(q_first, 4 * 8)[:] = 0  # the kernel under test scribbles on its input: the check writes it again
    rows = np.arange(4 * 24, dtype=np.int64)
    assert execution.check_sample(12345, ranges, rows, 5e-3, 0.0).passed
    corrupt = honest.copy()
    corrupt[2, 5, 3] += 1.0
    corrupt[3, 7, 0] = np.nan
    driver.view(out, honest.nbytes)[:] = corrupt.reshape(-1).view(np.uint8)
    errors = execution.check_sample(12345, ranges, rows, 5e-3, 0.0)
    assert not errors.passed and errors.nonfinite == 1 and errors.first_nonfinite == (3 * 24 + 7) * 8
    assert errors.failing_rows == [2 * 24 + 5, 3 * 24 + 7] and errors.failing_elements == 2
    assert (errors.worst.item, errors.worst.row, errors.worst.column) == (3, 7, 0)
    digests = execution.output_digest()
    assert digests.shape == (4 * 24,) and digests[2 * 24 + 5] != digests[2 * 24 + 6]
    execution.free()
