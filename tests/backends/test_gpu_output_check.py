"""The verified passes' check on the device: the same numbers as the host's check (`pass_errors`), on the fake
driver's numpy kernel and on the GPU's real one; a kept copy something wrote into hands the check to the host;
no room for the copy means the host checks."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench.backends.gpu_output_check import DeviceOutputCheck
from attnbench.backends.input_transform import InputTransform
from attnbench.bench.timed_check import pass_errors
from attnbench.cases.testcase import Shape
from tests.backends.test_gpu_pipeline_fake_driver import FakeDriver, FakeGpu


def outputs(shape: Shape, rng: np.random.Generator) -> tuple[np.ndarray, InputTransform, np.ndarray]:
    """A first output, a transform, and a later output that is that output moved, spoiled in a few places:
    one element just inside atol, one just outside, a NaN, an Inf, a large value off by a relative error."""
    base = (rng.standard_normal((shape.B, shape.N, shape.d)) * 3).astype(np.float32)
    base.flat[rng.integers(base.size)] = np.float32(1e30)
    transform = InputTransform.draw(shape, rng)
    got = transform.expected_items(base, 0, shape.B).copy()
    spoiled = rng.choice(got.size, size=min(got.size, 5), replace=False)
    for index, change in zip(spoiled, (4e-3, 6e-3, np.nan, np.inf, 0.5)):
        got.flat[index] = np.float32(change) if not np.isfinite(change) else got.flat[index] + np.float32(change)
    return base, transform, got


def on_fake_device(got: np.ndarray, base: np.ndarray, shape: Shape) -> tuple[FakeGpu, int, DeviceOutputCheck | None]:
    gpu = FakeGpu(FakeDriver())
    out = gpu.driver.mem_alloc(got.nbytes)
    gpu.driver.memcpy_htod(out, base)  # the first output, as the first pass left it
    check = DeviceOutputCheck.keep(gpu, int(out), shape)
    gpu.driver.memcpy_htod(out, got)  # a later pass's output
    return gpu, int(out), check


@pytest.mark.parametrize("B,N,d", [(3, 5, 4), (1, 7, 8), (6, 1, 2), (1, 1, 1)])
@pytest.mark.parametrize("rtol", [0.0, 1e-2])
def test_the_device_check_gives_the_host_checks_numbers(B, N, d, rtol, rng):
    shape = Shape(B, N, d)
    base, transform, got = outputs(shape, rng)
    gpu, _, check = on_fake_device(got, base, shape)
    assert check is not None
    assert check.errors(transform, 5e-3, rtol) == pass_errors(got, base, transform, shape, 5e-3, rtol)
    allocations = len(gpu.driver.memory)
    check.free()
    assert len(gpu.driver.memory) == allocations - 1  # the kept copy; the pass's arrays went with its check


def test_a_changed_copy_hands_the_check_to_the_host(rng):
    shape = Shape(3, 5, 4)
    base, transform, got = outputs(shape, rng)
    gpu, _, check = on_fake_device(got, base, shape)
    kept = gpu.driver.view(int(check._kept), base.nbytes).view(np.float32)
    kept[:] = transform.expected_items(got, 0, shape.B).reshape(-1)  # a forger: moved back, its output would pass
    assert check.errors(transform, 5e-3, 0.0) is None


def test_without_room_for_the_copy_the_host_checks(rng):
    shape = Shape(3, 5, 4)
    gpu = FakeGpu(FakeDriver())

    def full(nbytes):
        raise gpu.driver.MemoryError("out of memory")

    gpu.driver.mem_alloc = full
    assert DeviceOutputCheck.keep(gpu, 0, shape) is None


@pytest.mark.gpu
@pytest.mark.parametrize("B,N,d", [(3, 70, 64), (2, 33, 32), (1, 1, 16), (70000, 1, 2), (2, 4096, 128)])
@pytest.mark.parametrize("rtol", [0.0, 1e-2])
def test_the_cuda_kernel_gives_the_host_checks_numbers(gpu, B, N, d, rtol, rng):
    shape = Shape(B, N, d)
    base, transform, got = outputs(shape, rng)
    out = gpu.driver.mem_alloc(got.nbytes)
    try:
        gpu.driver.memcpy_htod(out, base)
        check = DeviceOutputCheck.keep(gpu, int(out), shape)
        assert check is not None
        gpu.driver.memcpy_htod(out, got)
        try:
            failing, nonfinite, largest = check.errors(transform, 5e-3, rtol)
            want = pass_errors(got, base, transform, shape, 5e-3, rtol)
            assert (failing, nonfinite) == want[:2] and largest == want[2]
            honest = transform.expected_items(base, 0, B)
            gpu.driver.memcpy_htod(out, honest)
            assert check.errors(transform, 5e-3, rtol) == (0, 0, 0.0)
        finally:
            check.free()
    finally:
        out.free()
