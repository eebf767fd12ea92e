import numpy as np
import pytest

from attnbench.bench.first_pass import WholeInput
from attnbench.bench.runner import run_case, run_cell
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.verify import compare_outputs
from attnbench.cases.inputs import SyntheticInput
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Shape, Testcase, read_output
from attnbench.errors import DeviceMemoryError, TestcaseError
from attnbench.kernels.catalogue import get_variant
from attnbench.kernels.variant import Constraints, Launch, Variant, f32_bytes
from tests.conftest import random_testcase


def test_cpu_execution_gives_a_measurement(rng):
    tc = random_testcase(2, 40, 8, rng)
    run = run_cell(get_variant("cpu"), WholeInput(tc, "rand"), None, TimingPolicy(warmup=0, reps=3, flush_l2=False))
    output, m = run.output, run.measurement
    assert compare_outputs(output, reference_output(tc)).passed
    assert m.kernel.count == 3 and m.compute_s > 0 and m.tflops > 0
    assert m.to_dict()["shape"] == {"B": 2, "N": 40, "d": 8}



def test_run_case_takes_the_whole_file_path_where_there_is_no_pipeline(tmp_path):
    """The cpu variant on an input in memory: read whole, checked, timed and written; no pipeline clock."""
    bench_input, out, notes = SyntheticInput(Shape(2, 24, 8), seed=3), tmp_path / "out.bin", []
    m = run_case(get_variant("cpu"), bench_input, None, TimingPolicy(warmup=0, reps=2, flush_l2=False), out,
                 check=True, tolerance=(1e-4, 0.0), notice=notes.append)
    assert m.clock is None and m.input_s is not None and m.output_s is not None and not notes
    assert m.verification.passed and m.verification.atol == 1e-4
    expected = reference_output(bench_input.load())
    assert np.allclose(read_output(out, bench_input.shape), expected, atol=1e-4)


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
    output = run_cell(variant, WholeInput(tc, "rand"), gpu, TimingPolicy(warmup=0, reps=1, flush_l2=False)).output
    assert np.isnan(output.reshape(3, -1)[:, 20:]).all()
    assert (output.reshape(3, -1)[:, :20] == 0).all()


@pytest.mark.gpu
def test_out_of_memory_is_refused_before_allocating(gpu, rng):
    greedy = Variant(name="greedy", report="test", technique="test", source="naive.cu",
                     launches=get_variant("naive").launches, constraints=Constraints(),
                     workspace={"scores": f32_bytes(lambda s: s.B * s.N * s.N * 1000)})
    tc = random_testcase(1, 8192, 1, rng)
    with pytest.raises(DeviceMemoryError, match=r"needs .* GiB of device memory .* GiB free"):
        run_cell(greedy, WholeInput(tc, "rand"), gpu, TimingPolicy(warmup=0, reps=1))


def test_an_input_holding_nan_is_blamed_on_the_input_not_the_variant(rng):
    tc = random_testcase(3, 16, 8, rng)
    tc.qkv[1, 1, 5, 2] = np.nan  # one K element of item 1: every row of item 1 would turn NaN
    with pytest.raises(TestcaseError, match=r"^mine.in: the input holds NaN or Inf values \(1 in K\)") as caught:
        run_cell(get_variant("cpu"), WholeInput(tc, "mine.in"), None, TimingPolicy(warmup=0, reps=1, flush_l2=False),
                    check=lambda output: None, gate=True)
    assert caught.value.exit_code == 2


# -- the physical floor and the SM clock, on a fake H200 -------------------------------------------------
@pytest.fixture
def fake_device(monkeypatch, tmp_path):
    from attnbench.backends import gpu_execution
    from attnbench.results.ceilings import CACHE_ENV
    from tests.bench.fake_device import fake_execution

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))  # no measured ceilings: the datasheet's
    return lambda pass_ms: monkeypatch.setattr(gpu_execution, "GpuExecution", fake_execution(pass_ms))


def test_an_impossibly_fast_median_is_refused_with_both_numbers(fake_device, rng):
    from tests.bench.fake_device import FakeH200

    fake_device(1e-6)
    run = run_cell(get_variant("naive"), WholeInput(random_testcase(4, 64, 16, rng), "rand"), FakeH200(),
                      TimingPolicy(warmup=0, reps=5))
    m = run.measurement
    assert m.impossible and m.floor is not None and m.floor.device == "NVIDIA H200" and not m.floor.hot
    reason = m.impossible_reason()
    assert reason.startswith("median 1e-06 ms is below the physical floor ") and "(4, 64, 16) on NVIDIA H200" in reason
    data = m.to_dict()
    assert data["tflops"] is None and data["peak_fraction"] is None and data["ceiling"] is None
    assert data["impossible"] == reason and data["floor"]["bound"] in ("memory", "compute")


def test_an_honest_time_keeps_its_speed_and_the_share_of_its_units_datasheet_peak(fake_device, rng):
    from tests.bench.fake_device import FakeH200

    fake_device(1.0)
    m = run_cell(get_variant("naive"), WholeInput(random_testcase(2, 64, 16, rng), "rand"), FakeH200(),
                    TimingPolicy(warmup=0, reps=3, flush_l2=False)).measurement
    assert not m.impossible and m.floor is not None and m.floor.hot
    assert m.ceiling["measured"] is False and m.ceiling["name"] == "FP32 FFMA peak" and 0 < m.peak_fraction < 1


def test_the_cpu_variant_is_held_to_the_hosts_floor(rng):
    m = run_cell(get_variant("cpu"), WholeInput(random_testcase(1, 16, 4, rng), "rand"), None,
                    TimingPolicy(warmup=0, reps=2, flush_l2=False)).measurement
    assert m.floor is not None and m.floor.device == "the host" and not m.impossible


def test_the_sm_clock_is_kept_with_each_sample_and_a_steady_cap_warns_of_nothing(fake_device, rng):
    from tests.bench.fake_device import FakeH200

    fake_device(2.0)
    gpu = FakeH200(clocks=[1980.0, 1755.0, 1755.0, 1755.0, 1755.0, 1755.0, 1755.0], reasons=("software power cap",))
    m = run_cell(get_variant("naive"), WholeInput(random_testcase(2, 32, 8, rng), "rand"), gpu,
                    TimingPolicy(warmup=2, reps=7)).measurement
    assert m.kernel.clocks_mhz == [1980.0] + [1755.0] * 6  # read after each sample, not after the warm-up
    assert m.kernel.clock is not None and m.kernel.clock.text() == "1755 MHz (1755-1980)"
    assert m.kernel.clock_warning is None and m.all_warnings() == []  # the cap held the median steady
    assert m.to_dict()["kernel"]["throttle_reasons"] == ["software power cap"]


def test_a_clock_that_moved_the_median_is_a_warning_with_its_remedy(fake_device, rng):
    from tests.bench.fake_device import FakeH200

    fake_device([1.0] * 6 + [1.3] * 6)
    gpu = FakeH200(clocks=[1980.0] * 6 + [1500.0] * 6)
    m = run_cell(get_variant("naive"), WholeInput(random_testcase(2, 32, 8, rng), "rand"), gpu,
                    TimingPolicy(warmup=0, reps=12)).measurement
    shift = m.kernel.clock_warning
    assert shift is not None and (shift.low_mhz, shift.high_mhz) == (1500.0, 1980.0)
    assert any("moved between 1500 and 1980 MHz" in w.sentence() and "lock the clocks" in w.sentence()
               for w in m.all_warnings())


def test_without_nvml_the_clock_is_unknown_and_nothing_fails(fake_device, rng):
    from tests.bench.fake_device import FakeH200

    fake_device(1.0)
    m = run_cell(get_variant("naive"), WholeInput(random_testcase(2, 32, 8, rng), "rand"), FakeH200(clocks=None),
                    TimingPolicy(warmup=0, reps=3)).measurement
    assert m.kernel.clocks_mhz is None and m.kernel.clock is None and m.to_dict()["kernel"]["sm_clock"] is None


def test_a_kernel_that_shrinks_its_input_in_the_first_pass_still_gets_fresh_values_in_the_case_range(
        monkeypatch, rng):
    """The fresh inputs' range is the host's input's, taken before any launch: a kernel that computes its first pass
    and then writes its input down to a range near zero (where the answer is near zero) and returns zeros after
    gains nothing, as it would if the range were read from the device buffers it wrote."""
    from attnbench.backends import gpu_execution
    from tests.bench.fake_device import FakeH200, fake_execution

    class Shrinker(fake_execution(1.0)):
        def run_pass(self) -> None:
            self.passes += 1
            if self.passes == 1:
                super().run_pass()
                self.testcase = Testcase(self.testcase.qkv * np.float32(1e-30))  # its "device input", written down
            else:
                self.output = np.zeros_like(self.output)

    monkeypatch.setattr(gpu_execution, "GpuExecution", Shrinker)
    tc = random_testcase(2, 40, 8, rng)
    run = run_cell(get_variant("naive"), WholeInput(tc, "rand"), FakeH200(), TimingPolicy(warmup=0, reps=3),
                      check=lambda out: compare_outputs(out, reference_output(tc)), gate=True)
    assert run.check.passed and run.measurement is None  # the first pass was right; the first sample is not
    failure = run.timed_check.failure
    assert failure.kind == "timed" and failure.sample == 1 and failure.errors.failing_row_count > 0


def test_a_run_says_where_its_time_went_beyond_the_first_pass(tmp_path, monkeypatch):
    """`run t11 --variant cpu --check` took 40 s while its table said "total 2.387 s": the total is the first pass
    only, and the samples, the reference and the whole run are timed and shown beside it."""
    import time

    from attnbench.output.tables.run_tables import measurement_table

    bench_input = SyntheticInput(Shape(2, 24, 8), seed=3)
    slow_reference = bench_input.reference

    def reference(testcase, progress=None):
        time.sleep(0.3)  # a float64 reference that takes a while, as a large case's does on the host
        return slow_reference(testcase)

    monkeypatch.setattr(bench_input, "reference", reference)
    m = run_case(get_variant("cpu"), bench_input, None, TimingPolicy(warmup=0, reps=2, flush_l2=False),
                 tmp_path / "out.bin", check=True)
    assert m.check_s >= 0.3 and m.sampling_s > 0 and m.total_s < 0.3
    assert m.wall_s >= m.total_s + m.sampling_s + m.check_s
    rows = {row[0].text: (row[1].text, row[2].text) for row in measurement_table(m).rows}
    assert rows["total"][1].startswith("first pass")
    assert float(rows["reference"][0].split()[0]) >= 0.3 and float(rows["whole run"][0].split()[0]) >= 0.3
    assert m.to_dict()["wall_s"] == m.wall_s


def test_a_run_without_check_has_no_reference_time(tmp_path):
    m = run_case(get_variant("cpu"), SyntheticInput(Shape(1, 8, 4), seed=1), None,
                 TimingPolicy(warmup=0, reps=1, flush_l2=False), tmp_path / "out.bin")
    assert m.check_s is None and m.wall_s is not None


def test_a_variant_whose_arithmetic_cannot_hold_the_check_on_the_inputs_ranges_is_refused_before_any_launch(rng):
    # the cpu variant given split FP16's roundings (the wgmma16s unit): V up to 1000 is out of its reach at 5e-3
    from dataclasses import replace

    from attnbench.errors import OutOfPrecision

    rounded = replace(get_variant("cpu"), unit="wgmma16s")
    tc = random_testcase(2, 16, 8, rng)
    tc.qkv[:, 2] *= 1000 / 3
    tc.qkv[1, 2, 3, 4] = -1000.0
    launched = []
    first = WholeInput(tc, "v1000")
    first.execution = lambda *args, **kwargs: launched.append(args)  # type: ignore[method-assign]
    with pytest.raises(OutOfPrecision) as refused:
        run_cell(rounded, first, None, TimingPolicy(warmup=0, reps=1, flush_l2=False))
    assert not launched
    assert str(refused.value).startswith("cpu cannot meet 0.005 on this input: |V| up to 1000 gives FP16 rounding "
                                         "errors up to 0.74 per element (V 0.25, P 0.49); use a float32 variant")
    assert refused.value.exit_code == 2
    # the same input under the course rule scaled to V's range (5e-3 * 1000 / 3 = 1.67) is within reach, and runs
    run = run_cell(rounded, WholeInput(tc, "v1000"), None, TimingPolicy(warmup=0, reps=1, flush_l2=False),
                   tolerance=(5e-3 * 1000 / 3, 0.0))
    assert run.measurement is not None


def test_a_failed_sample_off_by_a_rounding_sized_amount_says_so_and_garbage_still_does_not_compute():
    from attnbench.bench.runner import _rounding_explained
    from attnbench.cases.fresh_values import InputRange
    from attnbench.results.timed_check import TIMED, SampleErrors, SampleFailure, TimedCheck, WorstElement

    def failed(error: float, nonfinite: int = 0) -> TimedCheck:
        worst = WorstElement(0, 5, 3, 1.0 + error, 1.0, error)
        errors = SampleErrors(nonfinite, 7 if nonfinite else None, 64, [5], 1, 1, worst)
        return TimedCheck(3, 3, 64, 64, 5e-3, 0.0, SampleFailure(2, TIMED, 16, 8, errors))

    wgmma16s = get_variant("wgmma16s")
    v6 = InputRange((-3.0, -3.0, -6.0), (3.0, 3.0, 6.0))  # within reach: V and P's rounding 4.9e-3 at most
    shape = Shape(2, 16, 8)
    # 0.00505 is past 5e-3 and within every rounding's worst case at d = 8: V 1.95e-3 (half FP16's spacing at 6)
    # + P 2.93e-3 (2^-11 * 6) + the scores 2.2e-4 + the tail 3e-6 = 5.11e-3
    rounding = _rounding_explained(failed(5.05e-3), wgmma16s, v6, shape)
    assert rounding.describe().startswith("off by 0.00505 at its worst element (O[0, 5, 3] = 1.00505, exact 1 "
                                          "(|error| 0.00505)), which FP16's rounding of V, P and the scores explains: "
                                          "up to 0.0051 per element on this input (|Q|, |K|, |V| up to 3, 3, 6); "
                                          "1 of 64 rows checked exactly were outside |out - exact| <= 0.005")
    assert "did not compute" not in rounding.describe()
    # far past any rounding, or NaN in the output, or a float32 variant: the launch did not compute the answer
    for timed, variant in ((failed(5.2e-3), wgmma16s), (failed(5.05e-3, nonfinite=1), wgmma16s),
                           (failed(5.05e-3), get_variant("wgmma3x"))):
        explained = _rounding_explained(timed, variant, v6, shape)
        assert explained.precision is None and explained.describe().startswith("a launch did not compute the answer")
    assert TimedCheck.from_dict(rounding.to_dict()) == rounding
