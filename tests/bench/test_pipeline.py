"""The pipelined pass on a fake device: results, the order of its stages, overlap, errors, host memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from attnbench.bench.chunk_plan import ChunkPlan
from attnbench.bench.pipeline import nonfinite_count, run_pipeline
from attnbench.cases.streaming import TestcaseFile
from attnbench.cases.testcase import Shape, write_testcase
from attnbench.errors import DiskFull
from attnbench.files import atomic_write
from tests.bench.fake_stages import FakeStages, Log, LoggedFile, LoggedSource, fake_kernel
from tests.conftest import random_testcase


def make_input(tmp_path, B, N, d, seed=0):
    testcase = random_testcase(B, N, d, np.random.default_rng(seed))
    path = tmp_path / "case.in"
    write_testcase(path, testcase)
    return testcase, path


def run_fake(tmp_path, shape, items, depth, delays=None, read_delay=0.0, write_delay=0.0, keep=True,
             fail_kernel_at=None, fail_write_at=None):
    testcase, path = make_input(tmp_path, shape.B, shape.N, shape.d)
    plan = ChunkPlan(shape, items, depth, keep_output=keep)
    log = Log()
    device = FakeStages(shape, plan.chunks, depth, items, log, delays, fail_kernel_at)
    kept = np.full((shape.B, shape.N, shape.d), np.nan, np.float32) if keep else None
    out = tmp_path / "out.bin"
    with TestcaseFile(path, threads=1) as source:
        logged = LoggedSource(source, log, read_delay)
        clocks = []
        atomic_write(out, lambda f: clocks.append(run_pipeline(plan, logged, device, LoggedFile(f, log, write_delay,
                                                                                            fail_write_at), kept)))
    return testcase, plan, log, device, clocks[0], out, kept


@pytest.mark.parametrize("B, items, depth", [(7, 2, 3), (7, 3, 1), (5, 1, 2), (6, 6, 1), (9, 4, 4), (2, 1, 1)])
def test_output_file_and_kept_output_are_the_whole_result(tmp_path, B, items, depth):
    shape = Shape(B, 9, 4)
    testcase, plan, log, device, clock, out, kept = run_fake(
        tmp_path, shape, items, depth, delays={"h2d": 0.002, "d2h": 0.002})
    expected = fake_kernel(testcase.qkv)
    assert out.read_bytes() == expected.astype("<f4").tobytes()
    assert np.array_equal(kept, expected)
    assert device.released and device.setups == 1
    assert clock.chunks == len(plan.chunks) and clock.ring_depth == depth
    assert clock.input_bytes == 12 * shape.elements and clock.output_bytes == 4 * shape.elements


def test_a_slow_copy_never_sees_its_buffer_overwritten(tmp_path):
    """The copy to the device reads its pinned buffer late; reading the next chunks must wait for it."""
    shape = Shape(12, 16, 8)
    testcase, plan, log, *_, out, kept = run_fake(tmp_path, shape, 1, 2, delays={"h2d": 0.01})
    assert out.read_bytes() == fake_kernel(testcase.qkv).astype("<f4").tobytes()


def test_stages_follow_their_dependencies(tmp_path):
    shape = Shape(10, 8, 4)
    _, plan, log, *_ = run_fake(tmp_path, shape, 1, 3, delays={"h2d": 0.003, "kernel": 0.004, "d2h": 0.002},
                                read_delay=0.002, write_delay=0.005)
    depth = plan.depth
    for i in range(len(plan.chunks)):
        assert log.time("read", i, "end") <= log.time("h2d", i, "start")
        assert log.time("h2d", i, "end") <= log.time("kernel", i, "start")
        assert log.time("kernel", i, "end") <= log.time("d2h", i, "start")
        assert log.time("d2h", i, "end") <= log.time("write", i, "start")
        if i >= depth:  # a ring buffer is reused only once its previous chunk has left it
            assert log.time("h2d", i - depth, "end") <= log.time("read", i, "start")
            assert log.time("write", i - depth, "end") <= log.time("d2h", i, "start")
        if i:  # every stage keeps the chunks in order
            for stage in ("read", "h2d", "kernel", "d2h", "write"):
                assert log.time(stage, i - 1, "end") <= log.time(stage, i, "start")


def test_reading_overlaps_kernels_and_writing(tmp_path):
    """With slow kernels and slow writes, reading goes on: the wall time is far below the stages' sum."""
    shape = Shape(8, 8, 4)
    delays = {"kernel": 0.03, "h2d": 0.001, "d2h": 0.001}
    _, plan, log, _, clock, *_ = run_fake(tmp_path, shape, 1, 3, delays=delays, read_delay=0.03, write_delay=0.03)
    assert log.time("read", 1, "start") < log.time("kernel", 0, "end")
    assert log.time("read", 3, "start") < log.time("write", 1, "end")
    serial = clock.read_s + clock.h2d_s + clock.kernel_s + clock.d2h_s + clock.write_s
    assert serial > 0.7  # 8 chunks x (3 x 30 ms)
    assert clock.wall_s < 0.6 * serial
    assert clock.bound in ("read", "kernel", "write")
    assert clock.device_busy_s < clock.h2d_s + clock.kernel_s + clock.d2h_s + 1e-9  # copies overlap kernels


def test_a_failed_write_stops_the_pipeline_and_leaves_no_file(tmp_path):
    shape = Shape(6, 8, 4)
    with pytest.raises(DiskFull, match="out.bin: No space left"):  # one line naming the output; exit 3, the machine's
        run_fake(tmp_path, shape, 1, 2, fail_write_at=2, write_delay=0.001)
    assert not any(tmp_path.glob("*out.bin*"))


def test_a_failed_kernel_stops_the_pipeline_and_leaves_no_file(tmp_path):
    shape = Shape(6, 8, 4)
    with pytest.raises(RuntimeError, match="fake kernel failed"):
        run_fake(tmp_path, shape, 1, 2, fail_kernel_at=3)
    assert not any(tmp_path.glob("*out.bin*"))


def test_host_memory_is_the_ring_and_the_kept_output_not_the_input(tmp_path):
    shape = Shape(64, 512, 64)  # 25 MB of input
    testcase, path = make_input(tmp_path, *(shape.B, shape.N, shape.d))
    del testcase
    plan = ChunkPlan(shape, 2, 3, keep_output=True)
    device = FakeStages(shape, plan.chunks, plan.depth, plan.items_per_chunk)
    kept = np.empty((shape.B, shape.N, shape.d), np.float32)
    with TestcaseFile(path, threads=1) as source:
        tracemalloc.start()
        try:
            atomic_write(tmp_path / "out.bin", lambda f: run_pipeline(plan, source, device, f, kept))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak <= plan.ring_bytes + (1 << 20), (peak, plan.ring_bytes)
    assert peak < 0.2 * 12 * shape.elements


def test_the_pipeline_counts_every_non_finite_element_it_writes(tmp_path):
    shape = Shape(5, 6, 4)
    testcase, path = make_input(tmp_path, shape.B, shape.N, shape.d)
    testcase.qkv[0, 0, 1, 2] = np.nan  # Q of item 0: one NaN out
    testcase.qkv[3, 1, 0, 0] = np.inf  # K of item 3: one Inf out
    testcase.qkv[4, 2, 5, 3] = -np.inf  # V of item 4: one Inf out
    write_testcase(path, testcase)
    plan = ChunkPlan(shape, 2, 2, keep_output=False)
    device = FakeStages(shape, plan.chunks, 2, 2, Log())
    with TestcaseFile(path, threads=1) as source:
        clocks = []
        atomic_write(tmp_path / "out.bin", lambda f: clocks.append(run_pipeline(plan, source, device, f, None)))
    assert clocks[0].nonfinite == 3 == int(np.count_nonzero(~np.isfinite(fake_kernel(testcase.qkv))))


@pytest.mark.parametrize("seed", range(20))
def test_the_non_finite_count_is_exact_whatever_the_values(seed):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(997).astype(np.float32) * rng.choice([1.0, 1e30, 3e38])  # 3e38: the sum overflows
    for _ in range(rng.integers(0, 4)):
        data[rng.integers(0, data.size)] = rng.choice([np.nan, np.inf, -np.inf])
    assert nonfinite_count(data) == int(np.count_nonzero(~np.isfinite(data)))


def test_without_release_the_ring_is_the_callers_to_free_and_after_an_error_it_is_freed(tmp_path):
    shape = Shape(4, 8, 4)
    testcase, path = make_input(tmp_path, shape.B, shape.N, shape.d)
    plan = ChunkPlan(shape, 1, 2, keep_output=False)
    for fail_at, released in ((None, False), (2, True)):
        device = FakeStages(shape, plan.chunks, 2, 1, Log(), None, fail_at)
        with TestcaseFile(path, threads=1) as source:
            try:
                run_pipeline(plan, source, device, None, None, release=False)
            except RuntimeError:
                assert fail_at is not None
        assert device.released == released
        device.release()  # the caller's part
