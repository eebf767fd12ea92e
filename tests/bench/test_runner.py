import numpy as np
import pytest

from attnbench.bench.runner import run_variant
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.verify import compare_outputs
from attnbench.cases.reference import reference_output
from attnbench.errors import DeviceMemoryError
from attnbench.kernels.catalogue import get_variant
from attnbench.kernels.variant import Constraints, Launch, Variant, f32_bytes
from tests.conftest import random_testcase


def test_cpu_execution_gives_a_measurement(rng):
    tc = random_testcase(2, 40, 8, rng)
    run = run_variant(get_variant("cpu"), tc, "rand", None, TimingPolicy(warmup=0, reps=3, flush_l2=False))
    output, m = run.output, run.measurement
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
def test_unwritten_elements_show_as_nan(gpu, tmp_path, rng):
    (tmp_path / "half.cu").write_text(HALF_WRITER)  # a kernel outside the package still finds common.cuh
    variant = Variant(name="half", report="test", technique="test", source_path=tmp_path / "half.cu", launches=(
        Launch("half_writer", grid=lambda s: (1, s.B, 1), block=lambda s: (128, 1, 1), args=("qkv", "out", "N", "d")),))
    tc = random_testcase(3, 10, 4, rng)
    output = run_variant(variant, tc, "rand", gpu, TimingPolicy(warmup=0, reps=1, flush_l2=False)).output
    assert np.isnan(output.reshape(3, -1)[:, 20:]).all()
    assert (output.reshape(3, -1)[:, :20] == 0).all()


@pytest.mark.gpu
def test_out_of_memory_is_refused_before_allocating(gpu, rng):
    greedy = Variant(name="greedy", report="test", technique="test", source="naive.cu",
                     launches=get_variant("naive").launches, constraints=Constraints(),
                     workspace={"scores": f32_bytes(lambda s: s.B * s.N * s.N * 1000)})
    tc = random_testcase(1, 8192, 1, rng)
    with pytest.raises(DeviceMemoryError, match=r"needs .* GiB of device memory .* GiB free"):
        run_variant(greedy, tc, "rand", gpu, TimingPolicy(warmup=0, reps=1))


def test_an_output_holding_nan_is_counted_without_a_check(rng):
    tc = random_testcase(3, 16, 8, rng)
    tc.qkv[1, 1, 5, 2] = np.nan  # one K element of item 1: every row of item 1 turns NaN
    run = run_variant(get_variant("cpu"), tc, "nan", None, TimingPolicy(warmup=0, reps=1, flush_l2=False))
    assert run.check is not None and not run.check.passed
    assert run.measurement.nonfinite == 16 * 8 == int(np.count_nonzero(~np.isfinite(run.output)))
    assert np.isfinite(run.output[[0, 2]]).all()
