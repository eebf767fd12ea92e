import numpy as np
import pytest

import attnbench.gpu as gpu_module
from attnbench.errors import DeviceMemoryError
from attnbench.reference import reference_output
from attnbench.runner import execute
from attnbench.timing import TimingPolicy
from attnbench.variants import Constraints, Launch, Variant, _f32, get_variant
from attnbench.verify import compare_outputs
from tests.conftest import random_testcase


def test_cpu_execution_gives_a_measurement(rng):
    tc = random_testcase(2, 40, 8, rng)
    output, m = execute(get_variant("cpu"), tc, "rand", None, TimingPolicy(warmup=0, reps=3, flush_l2=False))
    assert compare_outputs(output, reference_output(tc)).passed
    assert m.kernel.count == 3 and m.compute_s > 0 and m.tflops > 0
    assert m.to_dict()["shape"] == {"B": 2, "N": 40, "d": 8}


HALF_WRITER = """// test kernel: writes only the first half of each output item
#include "common.cuh"
extern "C" __global__ void half_writer(const float* qkv, float* out, int N, int d) {
    size_t item = blockIdx.y, n = (size_t)N * d;
    for (size_t i = threadIdx.x; i < n / 2; i += blockDim.x) out[item * n + i] = 0.0f;
}
"""


@pytest.mark.gpu
def test_unwritten_elements_show_as_nan(gpu, tmp_path, monkeypatch, rng):
    (tmp_path / "half.cu").write_text(HALF_WRITER)
    (tmp_path / "common.cuh").write_text((gpu_module.CUDA_DIR / "common.cuh").read_text())
    monkeypatch.setattr(gpu_module, "CUDA_DIR", tmp_path)
    variant = Variant(name="half", report="test", technique="test", source="half.cu", launches=(
        Launch("half_writer", grid=lambda s: (1, s.B, 1), block=lambda s: (128, 1, 1), args=("qkv", "out", "N", "d")),))
    tc = random_testcase(3, 10, 4, rng)
    output, _ = execute(variant, tc, "rand", gpu, TimingPolicy(warmup=0, reps=1, flush_l2=False))
    assert np.isnan(output.reshape(3, -1)[:, 20:]).all()
    assert (output.reshape(3, -1)[:, :20] == 0).all()


@pytest.mark.gpu
def test_out_of_memory_is_refused_before_allocating(gpu, rng):
    greedy = Variant(name="greedy", report="test", technique="test", source="naive.cu",
                     launches=get_variant("naive").launches, constraints=Constraints(),
                     workspace={"scores": _f32(lambda s: s.B * s.N * s.N * 1000)})
    tc = random_testcase(1, 8192, 1, rng)
    with pytest.raises(DeviceMemoryError, match=r"needs .* GiB of device memory .* GiB free"):
        execute(greedy, tc, "rand", gpu, TimingPolicy(warmup=0, reps=1))
