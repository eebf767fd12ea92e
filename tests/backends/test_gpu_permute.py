"""The verified passes' input change on the device: the real GpuExecution and DevicePermuter on the fake
pycuda driver, whose permute kernel does in numpy what cuda/permute_inputs.cu does (the GPU test below
holds the real kernel to the same bytes). Both layouts, and both ways (the scratch holds the whole
input, or the items move cycle by cycle through a smaller scratch)."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench.backends import gpu_permute
from attnbench.backends.gpu_execution import GpuExecution
from attnbench.backends.input_transform import InputTransform
from attnbench.cases.testcase import Shape
from attnbench.kernels.variant import Launch, Variant
from tests.backends.test_gpu_pipeline_fake_driver import VARIANT, FakeDriver, FakeGpu
from tests.conftest import random_testcase

SEPARATE = Variant(name="fakesep", report="test", technique="test", source="naive.cu", layout="separate", launches=(
    Launch("attn", grid=lambda s: (1, s.B, 1), block=lambda s: (32, 1, 1), args=("q", "k", "v", "o", "N")),))


class PermutingGpu(FakeGpu):
    def __init__(self) -> None:
        super().__init__(FakeDriver())

    def compile(self, variant, shape):
        if variant is not SEPARATE:
            return super().compile(variant, shape)
        unused = type("Unused", (), {"prepare": lambda self, signature: None})()  # never launched here
        return type("Compiled", (), {"functions": {"attn": unused}, "compile_seconds": 0.0})()


def device_qkv(execution: GpuExecution) -> np.ndarray:
    """The execution's device input, read back as (B, 3, N, d)."""
    s = execution.shape
    pointers = execution._pointers[0]
    view = lambda name, n: execution.driver.view(pointers[name], 4 * n).view(np.float32)  # noqa: E731
    if "qkv" in pointers:
        return view("qkv", 3 * s.elements).reshape(s.B, 3, s.N, s.d).copy()
    return np.stack([view(name, s.elements).reshape(s.B, s.N, s.d) for name in ("q", "k", "v")], axis=1)


@pytest.mark.parametrize("variant", [VARIANT, SEPARATE], ids=["interleaved", "separate"])
@pytest.mark.parametrize("small_scratch", [False, True], ids=["one-gather", "cycles"])
@pytest.mark.parametrize("B,N", [(7, 9), (1, 9), (7, 1), (1, 1)])
def test_the_device_input_becomes_the_changed_input(variant, small_scratch, B, N, rng, monkeypatch):
    if small_scratch:  # two items of scratch: the items move cycle by cycle, rows a group of two at a time
        monkeypatch.setattr(gpu_permute, "SCRATCH_CAP_BYTES", 2 * 12 * N * 4)
    gpu = PermutingGpu()
    testcase = random_testcase(B, N, 4, rng)
    execution = GpuExecution(gpu, variant, testcase)
    execution.upload()
    first, second = InputTransform.draw(testcase.shape, rng), InputTransform.draw(testcase.shape, rng)
    execution.permute_inputs(first)
    assert np.array_equal(device_qkv(execution), first.apply(testcase.qkv))
    execution.permute_inputs(second)
    assert np.array_equal(device_qkv(execution), first.then(second).apply(testcase.qkv))
    assert len(gpu.driver.memory) == len(execution._buffers)  # the scratch and index arrays were freed
    if small_scratch and B > 2:
        assert gpu.driver.calls.count("dtod") > B  # items moved one by one


def test_the_computed_output_moves_with_the_input_and_poison_is_nan(rng):
    gpu = PermutingGpu()
    testcase = random_testcase(5, 12, 8, rng)
    execution = GpuExecution(gpu, VARIANT, testcase)
    execution.upload()
    execution.run_pass()
    before = execution.download()
    transform = InputTransform.draw(testcase.shape, rng)
    execution.permute_inputs(transform)
    execution.poison_output()
    assert np.isnan(execution.download()).all()
    execution.run_pass()
    np.testing.assert_allclose(execution.download(), transform.expected_items(before, 0, 5), atol=1e-6)
    execution.synchronize()
    execution.free()


def test_the_layout_of_each_buffer():
    interleaved = gpu_permute.input_layout({"qkv": 1000}, 3, 2)
    assert (interleaved.q, interleaved.k, interleaved.v, interleaved.stride) == (1000, 1024, 1048, 18)
    separate = gpu_permute.input_layout({"q": 1, "k": 2, "v": 3}, 3, 2)
    assert (separate.q, separate.k, separate.v, separate.stride) == (1, 2, 3, 6)
    assert Shape(1, 3, 2).elements == 6


@pytest.mark.gpu
@pytest.mark.parametrize("name,B,N,d", [("qreg", 3, 70, 64), ("flash", 2, 33, 32), ("naive", 1, 1, 16)])
def test_the_cuda_kernel_changes_the_input_as_the_host_does(gpu, name, B, N, d, rng, monkeypatch):
    """cuda/permute_inputs.cu and the device copies give exactly the bytes of InputTransform.apply."""
    from attnbench.kernels.catalogue import get_variant
    from attnbench.kernels.user import find_launch_facts, load_variants
    from tests.kernels.test_user_variants import EXAMPLE

    variant = load_variants(find_launch_facts(EXAMPLE))["flash"] if name == "flash" else get_variant(name)
    testcase = random_testcase(B, N, d, rng)
    for small_scratch in (False, True):
        if small_scratch:
            monkeypatch.setattr(gpu_permute, "SCRATCH_CAP_BYTES", 12 * N * d * 4)
        execution = GpuExecution(gpu, variant, testcase)
        try:
            execution.upload()
            transform = InputTransform.draw(testcase.shape, rng)
            execution.permute_inputs(transform)
            s = testcase.shape
            got = {}
            for buffer_name, buffer in execution._buffers.items():
                if buffer_name in ("qkv", "q", "k", "v"):
                    size = 3 * s.elements if buffer_name == "qkv" else s.elements
                    host = np.empty(size, np.float32)
                    gpu.driver.memcpy_dtoh(host, buffer)
                    got[buffer_name] = host
            want = transform.apply(testcase.qkv)
            if "qkv" in got:
                assert np.array_equal(got["qkv"].view(np.uint32), want.reshape(-1).view(np.uint32))
            else:
                for i, tensor in enumerate(("q", "k", "v")):
                    assert np.array_equal(got[tensor].view(np.uint32), want[:, i].reshape(-1).view(np.uint32))
        finally:
            execution.free()


def test_without_memory_for_the_scratch_it_moves_one_item_at_a_time(rng):
    gpu = PermutingGpu()
    testcase = random_testcase(4, 6, 4, rng)
    execution = GpuExecution(gpu, VARIANT, testcase)
    execution.upload()
    allocate = gpu.driver.mem_alloc

    def tight(nbytes):
        if nbytes > 12 * 6 * 4 * 4:  # more than one item of scratch does not fit
            raise gpu.driver.MemoryError("out of memory")
        return allocate(nbytes)

    gpu.driver.mem_alloc = tight
    transform = InputTransform.draw(testcase.shape, rng)
    execution.permute_inputs(transform)
    assert np.array_equal(device_qkv(execution), transform.apply(testcase.qkv))
