"""wgmma16s (split FP16 Q K^T, FP16 P V on Hopper wgmma): its host facts without a GPU, and on a Hopper GPU
its margin (every element within half the course tolerance, COURSE_MARGIN_ATOL) on odd and extreme shapes,
each path (pre-pass, streaming), the key split and persistent blocks forced, and compute-sanitizer's
racecheck and synccheck on the paths whose threads hand shared memory to each other. Its poly builds
(wgmma16s:poly12 .. poly50, part of the exponentials by exp2_poly): with nvcc alone, the share they move off
MUFU and no spills; on a Hopper GPU, the same margin on odd shapes, large scores and scores in the thousands."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attnbench.bench.first_pass import WholeInput
from attnbench.bench.runner import run_cell
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.verify import COURSE_MARGIN_ATOL, compare_outputs
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Shape, Testcase
from attnbench.kernels import wgmma16s
from attnbench.kernels.catalogue import get_variant
from attnbench.kernels.exp2_poly import exp2_poly_defines
from attnbench.kernels.nvcc import compile_options, compile_report, include_dirs, nvcc_path, source_file
from attnbench.kernels.variant import cdiv
from tests.conftest import random_testcase, skip_unless_runs
from tests.large_scores import LARGE_SCORE_KINDS, check_large_scores, large_score_testcase, large_score_tolerance

ROOT = Path(__file__).resolve().parents[2]
WGMMA16S = get_variant("wgmma16s")
ONE_PASS = TimingPolicy(warmup=0, reps=1, flush_l2=False)


def kernels(shape: Shape) -> list[str]:
    return [launch.kernel for launch in WGMMA16S.launches_for(shape)]


def test_it_claims_the_course_margin_not_float32():
    assert WGMMA16S.accuracy == "course" and WGMMA16S.unit == "wgmma16s" and WGMMA16S.arch == "sm_90a"
    assert COURSE_MARGIN_ATOL == 2.5e-3


@pytest.mark.parametrize("d", [1, 16, 48, 80, 96, 256])
def test_other_head_dims_are_refused_in_one_sentence(d):
    refusal = WGMMA16S.refusal(Shape(2, 100, d))
    assert refusal is not None and "\n" not in refusal.sentence()


@pytest.mark.parametrize("shape", [Shape(1, 1, 32), Shape(3, 17, 64), Shape(2, 1001, 128), Shape(13600, 128, 32)], ids=str)
def test_any_sequence_length_is_taken_at_32_64_and_128(shape):
    assert WGMMA16S.refusal(shape) is None


@pytest.mark.parametrize("shape", [Shape(160, 128, 64), Shape(13600, 128, 32), Shape(80, 256, 64), Shape(3, 1, 32),
                                   Shape(1700, 512, 64), Shape(4, 257, 64)], ids=str)
def test_short_sequences_stream_without_a_pre_pass_or_its_workspace(shape):
    assert kernels(shape) == ["wgmma16s_fwd"]
    assert WGMMA16S.workspace["kv16"](shape) == 0
    assert WGMMA16S.defines(shape)["WGMMA16S_STREAM"] == 1


@pytest.mark.parametrize("shape", [Shape(500, 2048, 64), Shape(2, 32768, 32), Shape(8, 4096, 128), Shape(5, 100, 128),
                                   Shape(4, 513, 64), Shape(850, 1024, 64)], ids=str)
def test_longer_sequences_and_d128_convert_k_and_v_once_in_a_pre_pass(shape):
    assert kernels(shape) == ["wgmma16s_prep", "wgmma16s_fwd"]
    # [K hi | K lo] (64 x 2d FP16) and V^T (d x 64 FP16) per 64-key tile, keys past N zero-filled
    assert WGMMA16S.workspace["kv16"](shape) == shape.B * cdiv(shape.N, 64) * 384 * shape.d
    assert WGMMA16S.defines(shape)["WGMMA16S_STREAM"] == 0


@pytest.mark.parametrize("shape", [Shape(b, n, d) for b in (1, 3, 10, 500) for n in (1, 65, 129, 1000, 2048, 4097)
                                   for d in (32, 64, 128)], ids=str)
def test_every_split_has_a_key_tile_a_record_and_a_counter(shape):
    fwd = WGMMA16S.launches_for(shape)[-1]
    x, _, splits = fwd.grid(shape)
    warpgroups = 3 if shape.d <= 64 and shape.N > 512 else 2
    row_blocks = cdiv(shape.N, 64 * warpgroups)
    assert 1 <= splits <= min(4, cdiv(shape.N, 64))
    assert x == (shape.B * row_blocks if splits > 1 else x) and 1 <= x <= shape.B * row_blocks
    record = 4 * (shape.d // 2 + 4) * 128 * warpgroups  # the kernel's kRecordValues floats a consumer thread
    assert WGMMA16S.workspace["split_partials"](shape) >= (record * shape.B * row_blocks * splits if splits > 1 else 0)
    assert WGMMA16S.workspace["split_counters"](shape) == 4 * shape.B * row_blocks


@pytest.mark.parametrize("shape, warpgroups", [(Shape(4, 32768, 32), 3), (Shape(10, 513, 32), 3), (Shape(2, 513, 64), 3),
                                               (Shape(2, 512, 64), 2),
                                               (Shape(13600, 128, 32), 2), (Shape(8, 4096, 128), 2), (Shape(1, 1, 32), 2)],
                         ids=str)
def test_d32_and_d64_on_the_pre_pass_path_run_three_consumer_warpgroups_of_64_rows(shape, warpgroups):
    fwd = WGMMA16S.launches_for(shape)[-1]
    assert WGMMA16S.defines(shape)["WGMMA16S_WARPGROUPS"] == warpgroups
    assert fwd.block(shape) == (128 * warpgroups + 128, 1, 1)  # and the producer warpgroup
    assert WGMMA16S.workspace["split_counters"](shape) == 4 * shape.B * cdiv(shape.N, 64 * warpgroups)


def test_the_shared_memory_matches_the_kernels_layout():
    """Rings of [K hi | K lo] + V^T (4 stages, 3 at d = 128), when streaming raw FP32 staging tiles of K and V
    (4 at d = 32, 2 at d = 64) with an mbarrier each, 4 mbarriers a stage, 1024 B of alignment
    slack (the kernel's kSmemBytes), within the 227 KB a block may take."""
    source = (ROOT / "cuda" / "wgmma16s.cu").read_text()
    assert "constexpr int kSmemBytes = kBarrierOffset + kStages * 32 + kRawBuffers * 8 + 1024;" in source
    assert "constexpr int kBarrierOffset = kRawOffset + kRawBuffers * kRawBytes;" in source
    assert "constexpr int kStages = WGMMA16S_STAGES;" in source  # the host's, passed with the launch's size
    for shape, expected, raw_stages in ((Shape(1, 4096, 32), 4 * 12288, 4), (Shape(1, 4096, 64), 4 * 24576, 2),
                                        (Shape(1, 4096, 128), 3 * 49152, 2),
                                        (Shape(1, 128, 32), 4 * 12288 + 4 * (64 * 32 * 8 + 8), 4),
                                        (Shape(1, 128, 64), 4 * 24576 + 2 * (64 * 64 * 8 + 8), 2)):
        stages = 3 if shape.d == 128 else 4
        smem = WGMMA16S.launches_for(shape)[-1].smem(shape)
        assert smem == expected + stages * 32 + 1024 and smem <= 227 * 1024
        assert WGMMA16S.defines(shape)["WGMMA16S_RAW_STAGES"] == raw_stages
        assert WGMMA16S.defines(shape)["WGMMA16S_STAGES"] == stages


def test_t29_is_split_in_four_parts_and_t27_with_more_waves_is_not():
    """Passes of up to six waves of units are split where wgmma3x's model stops at four: t29's 684 units of 192
    rows (six rounds of 132 SMs for 5.2 rounds' work) in 4 parts; t27's 860 units whole."""
    assert wgmma16s._splits(Shape(4, 32768, 32)) == 4 and wgmma16s._splits(Shape(10, 16384, 32)) == 1
    assert WGMMA16S.workspace["split_partials"](Shape(4, 32768, 32)) >= 4 * 684 * 4 * (16 + 4) * 384


def test_the_streaming_path_loads_the_next_units_q_ahead():
    for shape, q_ahead in ((Shape(13600, 128, 32), 1), (Shape(9600, 128, 64), 1), (Shape(4, 32768, 32), 0),
                           (Shape(8, 4096, 128), 0)):
        assert WGMMA16S.defines(shape)["WGMMA16S_Q_AHEAD"] == q_ahead, shape


# -- the polynomial exponential's builds (wgmma16s:poly25 ...): eighths of the weights by exp2_poly ---------------
POLY = {name: get_variant(f"wgmma16s:{name}") for name in ("poly12", "poly25", "poly38", "poly50")}
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="no nvcc")


def test_the_poly_builds_move_one_to_four_eighths_of_the_exponentials_with_the_modules_coefficients():
    assert set(WGMMA16S.flavours) == set(POLY)
    for eighths, variant in enumerate(POLY.values(), start=1):
        defines = variant.defines(Shape(4, 32768, 32))
        assert defines["WGMMA16S_POLY_EIGHTHS"] == eighths
        assert {k: defines[k] for k in exp2_poly_defines()} == exp2_poly_defines()
        assert variant.accuracy == "course" and variant.unit == "wgmma16s" and variant.arch == "sm_90a"
        assert variant.launches == WGMMA16S.launches and f"{eighths}/8" in variant.technique
    assert "WGMMA16S_POLY_EIGHTHS" not in WGMMA16S.defines(Shape(4, 32768, 32))  # the plain build is unchanged


def ptx_exponentials(variant, shape) -> int:
    """MUFU exponentials (ex2.approx) in the PTX nvcc makes of the variant for the shape."""
    ptx = subprocess.run([nvcc_path(), *compile_options(variant, shape), "-arch=sm_90a", "-ptx",
                          *(flag for folder in include_dirs(variant) for flag in ("-I", str(folder))),
                          str(source_file(variant)), "-o", "-"], capture_output=True, text=True, check=True).stdout
    return ptx.count("ex2.approx")


@needs_nvcc
@pytest.mark.parametrize("shape", [Shape(4, 32768, 32), Shape(160, 128, 64), Shape(8, 4096, 128)], ids=str)
def test_each_eighth_takes_four_weights_a_thread_off_mufu_in_both_softmax_sites(shape):
    """softmax_tile is inlined twice (the first tile, the loop); each eighth is one column group of 4 weights."""
    plain = ptx_exponentials(WGMMA16S, shape)
    for eighths, variant in enumerate(POLY.values(), start=1):
        assert ptx_exponentials(variant, shape) == plain - 2 * 4 * eighths, variant.name


@needs_nvcc
@pytest.mark.parametrize("name", list(POLY))
@pytest.mark.parametrize("shape", [Shape(4, 32768, 32), Shape(2, 32768, 64), Shape(8, 4096, 128), Shape(13600, 128, 32),
                                   Shape(160, 128, 64)], ids=str)
def test_each_poly_build_compiles_for_hopper_without_spills(name, shape):
    figures = compile_report(POLY[name], shape, "sm_90a")
    assert set(figures) == {"wgmma16s_prep", "wgmma16s_fwd"}
    assert all(k.spills == 0 and k.stack_frame == 0 for k in figures.values()), figures


@needs_nvcc
@pytest.mark.parametrize("shape", [Shape(4, 32768, 32), Shape(10, 2048, 32), Shape(2, 32768, 64)], ids=str)
def test_three_warpgroups_compile_without_spills_in_a_launch_of_128_registers(shape):
    """Three consumer warpgroups share the register file as 160 each and 32 for the producers, from a launch
    of 512 threads at 128 (the kernel's setmaxnreg split): ptxas keeps the whole kernel in them."""
    figures = compile_report(WGMMA16S, shape, "sm_90a")
    fwd = figures["wgmma16s_fwd"]
    assert fwd.registers == 128 and fwd.spills == 0 and fwd.stack_frame == 0, figures


@needs_nvcc
@pytest.mark.parametrize("shape", [Shape(13600, 128, 32), Shape(9600, 128, 64), Shape(9, 300, 32), Shape(8, 4096, 128)],
                         ids=str)
def test_the_streaming_and_two_warpgroup_builds_compile_without_spills(shape):
    """The streaming producer keeps its per-tile indices in registers (88 at d = 32, 56 at d = 64, the consumers
    192 and 224): a split that spilled at d = 32 with 56 and 72 is caught here, not on a GPU."""
    figures = compile_report(WGMMA16S, shape, "sm_90a")
    assert all(k.spills == 0 and k.stack_frame == 0 for k in figures.values()), figures


def check_margin(gpu, shape, rng, how="", variant=WGMMA16S):
    skip_unless_runs(variant, Shape(*shape), gpu)
    tc = random_testcase(*shape, rng)
    output = run_cell(variant, WholeInput(tc, "random"), gpu, ONE_PASS).output
    report = compare_outputs(output, reference_output(tc), atol=COURSE_MARGIN_ATOL)
    where = f"{variant.name}{how} on {shape}"
    assert report.nan_count == 0, f"{where}: {report.nan_count} elements unwritten or NaN"
    assert report.passed, f"{where}: {report.failing} beyond {COURSE_MARGIN_ATOL}, worst {report.worst}"


# one key and one query; odd N below, across and above a 64-key tile, a 128-row block and the streaming path's
# reach; B below and above the SM count; the short course shapes
ODD_SHAPES = [(3, 1, 32), (2, 17, 64), (3, 100, 128), (2, 1000, 128), (5, 100, 32), (3, 1000, 64), (2, 33, 64),
              (9, 129, 32), (37, 255, 64), (2, 65, 128), (4, 257, 64), (2000, 127, 32), (1, 4097, 32), (160, 128, 64)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", ODD_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_wgmma16s_keeps_its_margin_on_odd_shapes(gpu, shape, rng):
    check_margin(gpu, shape, rng)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2, 100, 32), (2, 256, 64), (1, 1000, 128), (3, 700, 64)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", LARGE_SCORE_KINDS)
def test_wgmma16s_keeps_its_margin_on_large_scores(gpu, kind, shape, rng):
    """Q*30 (scores in the hundreds), zero Q, V*1000: within half the course rule scaled to V's range."""
    check_large_score_margin(gpu, WGMMA16S, kind, shape, rng)


def check_large_score_margin(gpu, variant, kind, shape, rng):
    skip_unless_runs(variant, Shape(*shape), gpu)
    tc = large_score_testcase(kind, *shape, rng)
    output = run_cell(variant, WholeInput(tc, kind), gpu, ONE_PASS, tolerance=large_score_tolerance(tc)).output
    _, problems = check_large_scores(kind, tc, output, variant.accuracy)
    assert not problems, f"{variant.name} on {kind} {shape}: " + "; ".join(problems)


@pytest.mark.gpu
@pytest.mark.parametrize("splits", [2, 3, 4])
@pytest.mark.parametrize("shape", [(2, 1000, 64), (3, 129, 32), (1, 2047, 128), (2, 256, 64)], ids=lambda s: "x".join(map(str, s)))
def test_wgmma16s_key_split_keeps_its_margin(gpu, shape, splits, rng, monkeypatch):
    monkeypatch.setattr(wgmma16s, "_splits", lambda s: splits)
    assert WGMMA16S.launches_for(Shape(*shape))[-1].grid(Shape(*shape))[2] == splits
    check_margin(gpu, shape, rng, f" in {splits} parts")


@pytest.mark.gpu
@pytest.mark.parametrize("blocks", [1, 3])
@pytest.mark.parametrize("shape", [(9, 129, 64), (7, 256, 32), (4, 1000, 32), (3, 1100, 128), (6, 64, 64)],
                         ids=lambda s: "x".join(map(str, s)))
def test_wgmma16s_persistent_blocks_keep_their_margin(gpu, shape, blocks, rng, monkeypatch):
    monkeypatch.setattr(wgmma16s, "_blocks", lambda s, sms=132: min(blocks, s.B * wgmma16s._row_tiles(s)))
    check_margin(gpu, shape, rng, f" on {blocks} blocks")


@pytest.mark.gpu
@pytest.mark.parametrize("streamed", [True, False])
@pytest.mark.parametrize("shape", [(3, 700, 64), (5, 100, 32), (2, 1000, 32)], ids=lambda s: "x".join(map(str, s)))
def test_wgmma16s_both_paths_on_each_side_of_the_switch(gpu, shape, streamed, rng, monkeypatch):
    monkeypatch.setattr(wgmma16s, "_streamed", lambda s: streamed)
    assert kernels(Shape(*shape))[0] == ("wgmma16s_fwd" if streamed else "wgmma16s_prep")
    check_margin(gpu, shape, rng, " streamed" if streamed else " after the pre-pass")


# B, N, d, key parts (0: the host's), persistent blocks (0: the host's)
RUNS = {
    "streaming": (5, 200, 64, 0, 2),
    "streaming, masked, d = 32": (9, 100, 32, 0, 0),
    "pre-pass, key split": (3, 1000, 64, 3, 0),
    "pre-pass, persistent": (4, 1000, 32, 1, 2),
    "pre-pass, key split, d = 32": (3, 1000, 32, 2, 0),
    "d = 128, key split": (3, 300, 128, 2, 0),
    "streaming, persistent, masked": (9, 100, 64, 1, 2),
    # 65 tiles a block through 4 staging buffers at d = 32: each buffer refilled by the last warp to read it
    "streaming, persistent, masked, d = 32": (9, 300, 32, 1, 2),
}
# the poly builds change registers only; one run of each path all the same (the issue asks it of every path)
POLY_RUNS = {"poly50 streaming, masked, d = 32": (9, 100, 32, 0, 0), "poly50 pre-pass, key split": (3, 1000, 64, 3, 0),
             "poly25 d = 128, key split": (3, 300, 128, 2, 0)}


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["racecheck", "synccheck"])
@pytest.mark.parametrize("name", [*RUNS, *POLY_RUNS])
def test_wgmma16s_has_no_shared_memory_hazards(gpu, tool, name):
    sanitizer = shutil.which("compute-sanitizer")
    if sanitizer is None:
        pytest.skip("compute-sanitizer is not installed")
    b, n, d, parts, blocks = RUNS[name] if name in RUNS else POLY_RUNS[name]
    build = f"wgmma16s:{name.split()[0]}" if name in POLY_RUNS else "wgmma16s"
    skip_unless_runs(WGMMA16S, Shape(b, n, d), gpu)
    result = subprocess.run(
        [sanitizer, "--tool", tool, "--error-exitcode", "9", sys.executable, "tests/kernels/wgmma16s_one_pass.py",
         f"{b},{n},{d},{parts},{blocks}", build],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    summary = [line for line in result.stdout.splitlines() if "SUMMARY" in line]
    assert result.returncode == 0, f"{tool} on {name}: exit {result.returncode}, {summary or result.stdout[-2000:]}"
    assert "passed" in result.stdout, result.stdout[-2000:]


# N = 1, 17, 129 and 32768 at small B; d = 32, 64 and 128; each path (streaming, pre-pass), the last tile masked
POLY_SHAPES = [(3, 1, 32), (2, 17, 64), (9, 129, 32), (2, 129, 128), (1, 32768, 32), (1, 32768, 64), (1, 4097, 128),
               (2, 1000, 128), (2000, 127, 32), (160, 128, 64)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", POLY_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", list(POLY))
def test_poly_builds_keep_the_margin_on_odd_shapes(gpu, name, shape, rng):
    check_margin(gpu, shape, rng, variant=POLY[name])


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2, 100, 32), (3, 700, 64), (1, 1000, 128)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", LARGE_SCORE_KINDS)
@pytest.mark.parametrize("name", list(POLY))
def test_poly_builds_keep_the_margin_on_large_scores(gpu, name, kind, shape, rng):
    """Q*30 (scores in the hundreds: most weights deep in the polynomial's clamped tail), zero Q (every x = 0),
    V*1000."""
    check_large_score_margin(gpu, POLY[name], kind, shape, rng)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2, 300, 32), (1, 2048, 64), (2, 200, 128), (1, 32768, 32)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", list(POLY))
def test_poly_builds_keep_the_margin_with_scores_in_the_thousands(gpu, name, shape, rng):
    """Q*300: scores (log2 units) in the thousands, so each row's weights run from 1 through every binade of
    exp2 into its clamped tail (x < -126.5 gives 0) within a tile; split FP16 still holds the scores to ~1e-3."""
    variant = POLY[name]
    skip_unless_runs(variant, Shape(*shape), gpu)
    qkv = rng.uniform(-3.0, 3.0, size=(shape[0], 3, *shape[1:]))
    qkv[:, 0] *= 300.0
    tc = Testcase(qkv.astype(np.float32))
    output = run_cell(variant, WholeInput(tc, "q300"), gpu, ONE_PASS).output
    report = compare_outputs(output, reference_output(tc), atol=COURSE_MARGIN_ATOL)
    assert report.nan_count == 0 and report.passed, f"{name} on {shape}: {report.failing} beyond, worst {report.worst}"
