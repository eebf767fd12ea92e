"""The pipelined run end to end on the CPU: the runner, the API and the command line around a fake device.

GpuExecution and GpuStages are replaced by fakes whose 'kernel' is the float64 reference (rounded to
float32), so the wiring is tested here: the output file written safely through the pipeline, the kept
output checked, the timed passes, the measurement's clock, `--json`, `--no-pipeline`, the exit codes.
The GPU tests hold the real device to the same results bit for bit.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from attnbench import api
from attnbench.backends import gpu_execution, gpu_pipeline
from attnbench.backends.base import HostClock
from attnbench.backends.cpu import row_digests
from attnbench.backends.host_sample_check import host_sample_errors
from attnbench.bench import runner
from attnbench.cases import suite
from attnbench.cases.fresh_values import fresh_values
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Testcase, read_output
from attnbench.cli import main
from attnbench.results.limits import UNKNOWN_LIMITS
from tests.bench.fake_stages import FakeStages
from tests.fakes import FakeDriverVersion


def reference_kernel(qkv: np.ndarray) -> np.ndarray:
    return reference_output(Testcase(np.ascontiguousarray(qkv))).astype(np.float32)


class FakeExecution:
    """What the runner and the sampler need of a GpuExecution, on the host: its 'device' input is a copy
    of the testcase (or of the fake pipeline's device memory), which the fresh samples fill anew."""

    instances: list["FakeExecution"] = []

    def __init__(self, gpu, variant, testcase_or_shape, flush_l2=True) -> None:
        self.testcase = testcase_or_shape if isinstance(testcase_or_shape, Testcase) else None
        self.shape = self.testcase.shape if self.testcase is not None else testcase_or_shape
        self.variant = variant
        self.device_name, self.peak_flops, self.compile_s = "fake GPU", 1e12, 0.0
        self.limits = UNKNOWN_LIMITS
        self.clock = HostClock()
        self.passes = 0
        self.freed = False
        self.stages = None  # the fake pipeline, whose device memory holds the input on the pipelined path
        self.qkv = self.out = None
        FakeExecution.instances.append(self)

    def _device_qkv(self) -> np.ndarray:
        if self.qkv is None:
            s = self.shape
            source = self.testcase.qkv if self.testcase is not None else self.stages.device_in.view(np.float32)
            self.qkv = source.reshape(s.B, 3, s.N, s.d).copy()
        return self.qkv

    def run_pass(self) -> None:
        self.passes += 1
        self.out = None  # computed when read back: the reference is too slow to run on every pass

    def upload(self) -> None:  # the unpipelined path
        assert self.testcase is not None

    def download(self) -> np.ndarray:
        if self.out is None:
            self.out = reference_kernel(self._device_qkv())
        return self.out.copy()

    def poison_output(self, value: float = float("nan")) -> None:
        self.out = np.full((self.shape.B, self.shape.N, self.shape.d), value, dtype=np.float32)

    def refresh_inputs(self, seed, ranges) -> None:
        s = self.shape
        tensors = [fresh_values(seed, t, 0, s.elements, *ranges.bounds(t)).reshape(s.B, s.N, s.d) for t in range(3)]
        self.qkv = np.stack(tensors, axis=1)

    def check_sample(self, seed, ranges, rows, atol, rtol):
        qkv = self._device_qkv()
        return host_sample_errors(self.download(), qkv[:, 0], qkv[:, 1], qkv[:, 2], rows, atol, rtol)

    def output_digest(self) -> np.ndarray:
        return row_digests(self.download())

    def synchronize(self) -> None:
        pass

    def flush_l2(self) -> None:
        pass

    def free(self) -> None:
        self.freed = True


class FakeGpu:
    name = "fake GPU"
    sm_count = 132
    driver = FakeDriverVersion()

    def throttle_reasons(self) -> list[str]:
        return []


def fake_stages(kernel):
    def make(execution, chunks, depth, items):
        stages = FakeStages(execution.shape, chunks, depth, items, kernel=kernel)
        stages.device_alloc_s = 0.001
        execution.stages = stages
        return stages
    return make


@pytest.fixture
def fake_gpu(monkeypatch):
    FakeExecution.instances.clear()
    monkeypatch.setattr(gpu_execution, "GpuExecution", FakeExecution)
    monkeypatch.setattr(gpu_pipeline, "GpuStages", fake_stages(reference_kernel))
    for command in (api.run_command, api.compare_command, api.sweep_command):  # each opens the GPU it needs
        monkeypatch.setattr(command, "open_gpu_for", lambda variants, device=0, listed=False: FakeGpu())
    return monkeypatch


def test_api_run_streams_the_case_through_the_pipeline(fake_gpu, tmp_path):
    case = suite.get_case("odd_100x32")
    out = tmp_path / "out.bin"
    m = api.run(case.name, "naive", out, check=True, timing=api.TimingOptions(reps=3, warmup=0)).measurement
    assert m.clock is not None and m.clock.chunks >= 2
    assert m.verification is not None and m.verification.passed
    assert m.kernel.count == 3 and FakeExecution.instances[-1].passes == 3 + 4 and FakeExecution.instances[-1].freed
    assert m.kernel.fresh_inputs == 3  # and after them: one input launched twice, one launch not poisoned first and
    # that input again over zeros
    assert m.timed_check is not None and m.timed_check.passed and m.timed_check.samples == 3 + 4
    assert m.total_s == m.clock.wall_s and m.input_s == m.clock.read_s and m.output_s == m.clock.write_s
    expected = read_output(suite.reference_path(case), case.shape)
    assert np.array_equal(read_output(out, case.shape), expected)
    assert not list(tmp_path.glob(".*partial"))


def test_no_pipeline_gives_the_same_file_without_a_clock(fake_gpu, tmp_path):
    piped, plain = tmp_path / "piped.bin", tmp_path / "plain.bin"
    api.run("odd_100x32", "naive", piped, timing=api.TimingOptions(reps=2))
    m = api.run("odd_100x32", "naive", plain, pipeline=False, check=True, timing=api.TimingOptions(reps=2)).measurement
    assert m.clock is None and m.verification.passed and m.input_s is not None and m.output_s is not None
    assert plain.read_bytes() == piped.read_bytes()
    cpu = api.run("odd_100x32", "cpu", tmp_path / "cpu.bin").measurement  # the cpu variant has no pipeline
    assert cpu.clock is None


def test_a_wrong_result_fails_the_check_and_the_command_exits_1(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_execution, "GpuExecution", FakeExecution)
    monkeypatch.setattr(gpu_pipeline, "GpuStages", fake_stages(lambda qkv: reference_kernel(qkv) + 0.01))
    monkeypatch.setattr(api.run_command, "open_gpu_for", lambda variants, device=0, listed=False: FakeGpu())
    out = tmp_path / "out.bin"
    result = CliRunner().invoke(main, ["run", "odd_100x32", str(out), "--variant", "naive", "--check", "--reps", "2",
                                       "--json"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["verification"]["passed"] is False
    assert data["pipeline"]["chunks"] >= 2 and data["pipeline"]["bound"] in ("read", "h2d", "kernel", "d2h", "write")
    assert out.exists()  # the course writes what it computed; the check judges it


def test_the_run_table_names_the_stages(fake_gpu, tmp_path):
    result = CliRunner().invoke(main, ["run", "odd_100x32", str(tmp_path / "o.bin"), "--variant", "naive",
                                       "--reps", "2"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    for word in ("H2D", "D2H", "bound by", "wall time", "pipeline"):
        assert word in result.output


def test_a_refused_plan_says_why_and_runs_unpipelined(fake_gpu, tmp_path):
    from attnbench.bench.chunk_plan import plan_chunks

    notes: list[str] = []
    case = suite.get_case("odd_100x32")
    fake_gpu.setattr(runner, "plan_for_input", lambda *a, **k: plan_chunks(case.shape, True, host_bound=0.01))
    m = api.run(case.name, "naive", tmp_path / "o.bin", check=True, notice=notes.append,
                timing=api.TimingOptions(reps=1)).measurement
    assert any("over the 0.01x bound; running the unpipelined path" in n for n in notes), notes
    assert m.clock is None and m.verification.passed


def test_the_command_line_without_the_pipeline_prints_the_sequential_rows(fake_gpu, tmp_path):
    result = CliRunner().invoke(main, ["run", "odd_100x32", str(tmp_path / "o.bin"), "--variant", "naive",
                                       "--reps", "2", "--no-pipeline", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["pipeline"] is None and data["input_s"] is not None and data["output_s"] is not None
    assert data["total_s"] == pytest.approx(data["input_s"] + data["compute_s"] + data["output_s"])
    help_text = CliRunner().invoke(main, ["run", "--help"]).output
    assert "--no-pipeline" in help_text


class LazyExecution(FakeExecution):
    """Computes on its first pass (the pipeline's, or the first run_pass), then never again: its output
    buffer keeps what was there, NaN poison included."""

    def run_pass(self) -> None:
        self.passes += 1
        if self.passes == 1 and self.stages is None:
            self.out = reference_kernel(self._device_qkv())

    def download(self) -> np.ndarray:
        if self.out is None:  # the pipelined first pass wrote it
            self.out = reference_kernel(self._device_qkv())
        return self.out.copy()


@pytest.mark.parametrize("pipeline", [True, False], ids=["pipelined", "unpipelined"])
def test_a_lazy_kernel_is_wrong_without_a_speed_and_run_exits_1(pipeline, monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_execution, "GpuExecution", LazyExecution)
    monkeypatch.setattr(gpu_pipeline, "GpuStages", fake_stages(reference_kernel))
    monkeypatch.setattr(api.run_command, "open_gpu_for", lambda variants, device=0, listed=False: FakeGpu())
    args = ["run", "odd_100x32", str(tmp_path / "out.bin"), "--variant", "naive", "--check", "--reps", "3"]
    args += [] if pipeline else ["--no-pipeline"]
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["verification"]["passed"] is True and data["tflops"] is None and data["peak_fraction"] is None
    failure = data["timed_check"]["failure"]
    # the warm-up passes run on fresh inputs and are checked too: the first one catches it
    assert failure["sample"] == 1 and failure["warmup"] is True and failure["errors"]["nonfinite"] > 0
    assert data["timed_check"]["fresh_inputs"] == data["timed_check"]["samples"] == 1
    assert "error: a launch did not compute the answer: warm-up pass 1 (on a fresh input)" in result.stderr
    table = CliRunner().invoke(main, args, catch_exceptions=False)
    assert table.exit_code == 1 and "TFLOP/s" not in table.stdout and "WRONG" in table.stdout


class CompareGpu(FakeGpu):
    """What a compare's saved metadata reads of the GPU, besides."""

    arch, index = "sm_90", 0

    def facts(self) -> dict:
        return {"name": self.name}


def test_compare_calls_a_lazy_kernel_wrong_and_exits_1(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_execution, "GpuExecution", LazyExecution)
    monkeypatch.setattr(api.compare_command, "open_gpu_for", lambda variants, device=0, listed=False: CompareGpu())
    result = CliRunner().invoke(main, ["compare", "--variants", "naive,cpu", "--cases", "odd_100x32", "--reps", "2",
                                       "--results-dir", str(tmp_path), "--name", "lazy"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    cells = {c["variant"]: c for c in json.loads((tmp_path / "lazy.json").read_text())["cells"]}
    assert cells["naive"]["status"] == "wrong" and cells["naive"]["measurement"] is None
    assert cells["naive"]["message"].startswith("a launch did not compute the answer")
    assert cells["naive"]["check"]["passed"] is True and cells["naive"]["timed_check"]["passed"] is False
    assert cells["cpu"]["status"] == "ok" and cells["cpu"]["timed_check"]["passed"] is True


def test_a_pipelined_run_into_dev_null_is_timed_and_checked(fake_gpu):
    m = api.run("odd_100x32", "naive", "/dev/null", timing=api.TimingOptions(reps=2)).measurement
    assert m.clock is not None and m.timed_check.passed


def test_a_streamed_run_to_a_pipe_whose_reader_stopped_runs_and_checks_its_whole_pass(fake_gpu):
    """`run t02 /dev/stdout | head -c 300` on a GPU variant (streamed): the broken pipe, swallowed around the whole
    write, stopped the pipeline at the reader's end and the run failed with a traceback on its missing clock
    (red team 18). The pass runs to its end, its output checked in full."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has stopped before the first byte
    try:
        m = api.run("odd_100x32", "naive", f"/proc/self/fd/{write_end}", check=True,
                    timing=api.TimingOptions(reps=2, warmup=0)).measurement
    finally:
        os.close(write_end)
    assert m.clock is not None and m.clock.chunks >= 2
    assert m.verification is not None and m.verification.passed
