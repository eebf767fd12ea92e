"""Recording a whole program's kernels: the collector built with nvcc, a missing GPU or CUPTI said in one line,
and the recording run in the program's room with the collector's variables, never the judged run.

Without a GPU the collector cannot run, so the room's part is tested with a stand-in program that writes the
records the collector would (it finds the variables the recording run sets, and the library they name)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from attnbench.backends import kernel_records
from attnbench.backends.kernel_records import (
    INJECTION_ENV,
    RECORDS_ENV,
    collector_library,
    find_cupti,
    record_kernels,
    unavailable,
)
from attnbench.backends.program import program_cell, program_variant
from attnbench.cases.testcase import Shape, Testcase, write_testcase
from attnbench.results.resultset import OK
from attnbench.sandbox import ProgramSpec, SandboxSettings
from attnbench.sandbox.bwrap_args import bwrap_starts
from tests.fakes import stand_in_collector

SHAPE = Shape(1, 4, 8)
HAS_BWRAP = shutil.which("bwrap") is not None and not bwrap_starts(shutil.which("bwrap") or "")
MODES = ["none", pytest.param("required", marks=pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap here"))]
RECORDS = ("attnbench-kernel-records 1\\n"
           "kernel 1000 3000 2 1 1 64 1 1 0 7 _Z5firstPf\\n"
           "kernel 2000 5000 4 1 1 64 1 1 0 8 _Z6secondPf\\n"
           "kernel 9000 10000 2 1 1 64 1 1 0 7 _Z5firstPf\\n"
           "dropped 0\\nend 3\\n")


def _program(folder: Path, body: str) -> Path:
    path = folder / "prog"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _stand_in(folder: Path) -> Path:
    """A program that, when the collector would be loaded (its library is there, readable, and the records file
    named), writes the records the collector would; its output is zeros either way."""
    return _program(folder, f'if [ -n "${INJECTION_ENV}" ]; then\n'
                            f'  test -r "${INJECTION_ENV}" || exit 9\n'
                            f'  printf "{RECORDS}" > "${RECORDS_ENV}"\n'
                            f'fi\nhead -c {SHAPE.output_bytes} /dev/zero > "$2"\n')


@pytest.fixture
def collector_here(tmp_path, monkeypatch):
    """This machine as one with a GPU and the collector built (a file standing in for the library)."""
    return stand_in_collector(tmp_path / "lib", monkeypatch)


def _spec(folder: Path) -> ProgramSpec:
    path = folder / "case.in"
    write_testcase(path, Testcase(np.zeros((1, 3, 4, 8), np.float32)))
    return ProgramSpec("t", path, SHAPE, 30.0)


@pytest.mark.parametrize("mode", MODES)
def test_a_recording_run_reads_the_collectors_records_in_the_programs_room(tmp_path, collector_here, mode):
    recording = record_kernels(_stand_in(tmp_path), _spec(tmp_path), SandboxSettings(mode))
    assert recording.time is not None, recording.why
    assert recording.time.launches == 3 and recording.time.busy_s == pytest.approx(5000e-9)
    assert recording.time.total_s == pytest.approx(6000e-9)
    assert [(k.name, k.launches) for k in recording.time.kernels] == [("_Z5firstPf", 2), ("_Z6secondPf", 1)]


def test_a_program_that_never_starts_cuda_has_no_records_said_in_one_line(tmp_path, collector_here):
    program = _program(tmp_path, f'head -c {SHAPE.output_bytes} /dev/zero > "$2"\n')
    recording = record_kernels(program, _spec(tmp_path), SandboxSettings("none"))
    assert recording.time is None and recording.why.startswith("no kernel time: its recording run wrote no records")


def test_records_cut_short_are_no_kernel_time(tmp_path, collector_here):
    program = _program(tmp_path, f'printf "attnbench-kernel-records 1\\nkernel 0 10 1 1 1 1 1 1 0 7 k\\n" '
                                 f'> "${RECORDS_ENV}"\nhead -c {SHAPE.output_bytes} /dev/zero > "$2"\n')
    recording = record_kernels(program, _spec(tmp_path), SandboxSettings("none"))
    assert recording.time is None and "cut short" in recording.why


def test_records_a_program_forged_with_huge_numbers_are_no_kernel_time_never_an_error(tmp_path, collector_here):
    """The program writes its own records file (it can): a 4000-digit time passes int() and overflowed the float
    sums, ending a one-program judge in a traceback and turning a class's PASS into JUDGE ERROR."""
    huge = "1" + "0" * 4000
    program = _program(tmp_path, f'printf "attnbench-kernel-records 1\\nkernel 0 {huge} 1 1 1 1 1 1 0 7 k\\nend 1\\n" '
                                 f'> "${RECORDS_ENV}"\nhead -c {SHAPE.output_bytes} /dev/zero > "$2"\n')
    recording = record_kernels(program, _spec(tmp_path), SandboxSettings("none"))
    assert recording.time is None and "not a whole number" in recording.why


def test_without_a_gpu_nothing_runs_and_one_line_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_records, "gpu_present", lambda: False)
    marker = tmp_path / "ran"
    recording = record_kernels(_program(tmp_path, f"touch {marker}\n"), _spec(tmp_path), SandboxSettings("none"))
    assert recording == kernel_records.KernelRecording(None, "no kernel time: no NVIDIA GPU on this machine")
    assert not marker.exists()


def test_a_toolkit_without_cupti_is_said_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_records, "gpu_present", lambda: True)
    monkeypatch.setattr(kernel_records, "nvcc_path", lambda: "/usr/bin/nvcc")
    monkeypatch.setattr(kernel_records, "_toolkit_roots", lambda: [tmp_path])
    assert find_cupti() is None
    why = unavailable()
    assert why == f"no kernel time: CUPTI (cupti.h and libcupti.so) is not in the CUDA toolkit ({tmp_path})"
    with pytest.raises(kernel_records.CollectorUnavailable, match="CUPTI"):
        kernel_records.collector_library.__wrapped__()


@pytest.mark.parametrize("include, lib", [("extras/CUPTI/include", "extras/CUPTI/lib64"), ("include", "lib64"),
                                          ("targets/x86_64-linux/include", "targets/x86_64-linux/lib")])
def test_cupti_is_found_in_each_toolkit_layout(tmp_path, monkeypatch, include, lib):
    monkeypatch.setattr(kernel_records, "_toolkit_roots", lambda: [tmp_path])
    (tmp_path / include).mkdir(parents=True)
    (tmp_path / lib).mkdir(parents=True, exist_ok=True)
    (tmp_path / include / "cupti.h").write_text("")
    (tmp_path / lib / "libcupti.so").write_bytes(b"")
    assert find_cupti() == (tmp_path / include, tmp_path / lib)


def test_an_exe_cell_gets_the_kernel_time_of_a_second_run_never_the_timed_one(tmp_path, collector_here):
    # with the collector the program writes ones, which the check refuses: the cell is OK only when its timed
    # run had no collector, and has records only when a second run had it
    program = _program(tmp_path, f'if [ -n "${INJECTION_ENV}" ]; then\n  printf "{RECORDS}" > "${RECORDS_ENV}"\n'
                                 f'  head -c {SHAPE.output_bytes} /dev/zero | tr "\\000" "\\077" > "$2"\n'
                                 f'else head -c {SHAPE.output_bytes} /dev/zero > "$2"; fi\n')
    zeros = lambda output, reference: SimpleNamespace(passed=not output.any())
    cell = program_cell(program_variant(f"exe:{program}"), "t", Testcase(np.ones((1, 3, 4, 8), np.float32)),
                        zeros, lambda r: "not zeros", None, 30.0, "none")
    assert cell.status == OK, cell.message
    assert cell.extra["kernel"]["launches"] == 3 and cell.extra["kernel"]["busy_s"] == pytest.approx(5000e-9)
    assert cell.extra["kernel"]["tflops"] == pytest.approx(SHAPE.flops / 5000e-9 / 1e12)
    assert cell.extra["process_s"] > 0
    with_collector = _program(tmp_path, f'head -c {SHAPE.output_bytes} /dev/zero | tr "\\000" "\\077" > "$2"\n')
    assert program_cell(program_variant(f"exe:{with_collector}"), "t", Testcase(np.ones((1, 3, 4, 8), np.float32)),
                        zeros, lambda r: "not zeros", None, 30.0, "none").status != OK  # the check would see it


def test_a_wrong_programs_cell_records_no_kernels(tmp_path, collector_here):
    program = _program(tmp_path, f'[ -n "${INJECTION_ENV}" ] && exit 5\nhead -c {SHAPE.output_bytes} /dev/zero > "$2"\n')
    cell = program_cell(program_variant(f"exe:{program}"), "t", Testcase(np.ones((1, 3, 4, 8), np.float32)),
                        lambda o, r: SimpleNamespace(passed=False), lambda r: "differs", None, 30.0, "none")
    assert "kernel" not in cell.extra and "kernel_note" not in cell.extra


@pytest.mark.skipif(shutil.which("nvcc") is None or find_cupti() is None, reason="needs nvcc and CUPTI")
def test_the_collector_builds_with_nvcc_and_exports_the_injection_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_CACHE", str(tmp_path))
    collector_library.cache_clear()
    try:
        library = collector_library()
    finally:
        collector_library.cache_clear()
    assert library.is_file() and library.is_relative_to(tmp_path)
    if shutil.which("nm"):
        symbols = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True).stdout
        assert " T InitializeInjection" in symbols


# -- on a GPU (the lead runs these on the device) ------------------------------------------------------------
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TWO_KERNELS = r"""
#include <cstdio>
__global__ void fill(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = i; }
__global__ void scale(float *x, int n, float s) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= s; }
int main(int argc, char **argv) {
    const int n = 1 << 22;
    float *x;
    cudaMalloc(&x, n * sizeof(float));
    for (int i = 0; i < 3; ++i) fill<<<n / 256, 256>>>(x, n);
    for (int i = 0; i < 2; ++i) scale<<<n / 128, 128>>>(x, n, 0.5f);
    cudaDeviceSynchronize();
    cudaFree(x);
    FILE *out = fopen(argv[2], "wb");
    return out ? fclose(out) : 1;
}
"""


def _nvcc_build(source: Path, output: Path, gpu) -> Path:
    if shutil.which("nvcc") is None or find_cupti() is None:
        pytest.skip("needs nvcc and CUPTI")
    subprocess.run(["nvcc", "-O3", f"-arch={gpu.arch}", "-o", str(output), str(source)], check=True)
    return output


@pytest.mark.gpu
def test_a_program_with_two_kernels_and_several_launches_is_recorded_launch_by_launch(gpu, tmp_path):
    source = tmp_path / "two.cu"
    source.write_text(TWO_KERNELS)
    program = _nvcc_build(source, tmp_path / "two", gpu)
    recording = record_kernels(program, _spec(tmp_path), SandboxSettings("auto"))
    assert recording.time is not None, recording.why
    time = recording.time
    assert time.launches == 5 and time.dropped == 0
    by_name = {k.name: k for k in time.kernels}
    assert {name: k.launches for name, k in by_name.items()} == {"_Z4fillPfi": 3, "_Z5scalePfif": 2}
    assert all(k.total_s > 0 for k in time.kernels)
    assert 0 < time.busy_s <= time.total_s + 1e-12


@pytest.mark.gpu
@pytest.mark.gpu_alone
def test_the_course_examples_kernel_time_is_its_kernels_as_attnbench_times_them(gpu, tmp_path, monkeypatch):
    """The course example's one launch on t10, recorded by the collector, within 10% of the same kernel
    (examples/report_kernel/flash.cu: the same tiles, threads and loop) timed by attnbench with CUDA events."""
    from attnbench.api import compare

    program = _nvcc_build(EXAMPLES / "course_program" / "hw4.cu", tmp_path / "hw4", gpu)
    monkeypatch.chdir(EXAMPLES / "report_kernel")  # where the user variant `flash` is declared
    result = compare(f"flash,exe:{program}", "t10")
    events_ms = result.cell("flash", "t10").measurement.kernel.median
    program_cell = result.cell("exe:hw4", "t10")
    assert program_cell.status == "ok", program_cell.message
    recorded = program_cell.extra.get("kernel")
    assert recorded is not None, program_cell.extra.get("kernel_note")
    assert recorded["launches"] == 1
    assert 1e3 * recorded["busy_s"] == pytest.approx(events_ms, rel=0.10)


@pytest.mark.gpu
@pytest.mark.gpu_alone
def test_the_collector_is_never_in_the_judged_run(gpu, tmp_path):
    """Judged with --kernel-time, a program that fails whenever the collector is loaded still passes (and its
    kernels are recorded), and its judged wall time stays within the noise of a judge without it."""
    from attnbench.api import programs as api_programs

    source = tmp_path / "hw4.cu"
    source.write_text((EXAMPLES / "course_program" / "hw4.cu").read_text().replace(
        "int main(int argc, char** argv) {",
        'int main(int argc, char** argv) {\n    if (getenv("CUDA_INJECTION64_PATH")) { cudaFree(0); exit(3); }', 1))
    assert "CUDA_INJECTION64_PATH" in source.read_text(), "the course example's main() changed: update this test"
    program = _nvcc_build(source, tmp_path / "hw4", gpu)
    cases = "t01,t02,t03,t04,t05"  # five cases (a list names each case once)
    recorded, with_kernels = api_programs.judge(str(program), cases, time_limits="none", kernel_time=True)
    assert recorded.passed == 5
    assert all(j.kernels is not None and j.kernels.time is not None for j in recorded.judged), [
        j.kernels for j in recorded.judged]
    plain, _ = api_programs.judge(str(program), cases, time_limits="none")
    walls_with = sorted(j.wall_s for j in recorded.judged)
    walls_without = sorted(j.wall_s for j in plain.judged)
    assert abs(walls_with[2] - walls_without[2]) <= max(0.10 * walls_without[2], 0.03)
