"""The pipelined host path on the GPU: the same bits as the unpipelined path, for every GPU variant.

Each case is written to a course input file; the unpipelined run reads it whole, the pipelined run
streams it in chunks (small ones here, so every shape is several chunks, some of them split further
into the variant's own launch chunks) and writes the output file as it goes. Output arrays and
output files must match bit for bit, and the clock must have timed every stage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from attnbench.bench.chunk_plan import plan_chunks
from attnbench.bench.first_pass import StreamedFile, WholeInput
from attnbench.bench.runner import run_cell
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.verify import COURSE_MARGIN_ATOL, compare_outputs
from attnbench.cases import suite
from attnbench.cases.fresh_values import file_range
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Shape, read_output, write_testcase
from attnbench.kernels.catalogue import get_variant, gpu_variants
from tests.conftest import random_testcase, skip_unless_runs

pytestmark = pytest.mark.gpu

SHAPES = [(5, 100, 32), (7, 256, 64), (64, 128, 32), (3, 1000, 64), (4, 17, 48)]
ONE_PASS = TimingPolicy(warmup=0, reps=1, flush_l2=False)


def both_paths(gpu, variant, shape, tmp_path, depth=3, items=None, seed=0):
    testcase = random_testcase(*shape, np.random.default_rng(seed))
    path = tmp_path / "case.in"
    write_testcase(path, testcase)
    plain = run_cell(variant, WholeInput(testcase, "random"), gpu, ONE_PASS).output
    plan = plan_chunks(Shape(*shape), keep_output=True, target_chunk_bytes=1, depth=depth)
    if items is not None:
        plan = type(plan)(plan.shape, items, min(depth, -(-shape[0] // items)), True)
    assert plan.refusal is None and len(plan.chunks) >= 2
    out = tmp_path / "out.bin"
    run = run_cell(variant, StreamedFile(path, plan, "random", file_range(path, Shape(*shape)), out), gpu, ONE_PASS)
    return testcase, plain, run, out


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("variant", gpu_variants(), ids=lambda v: v.name)
def test_pipelined_output_is_bit_identical(gpu, variant, shape, tmp_path):
    skip_unless_runs(variant, Shape(*shape), gpu)
    testcase, plain, run, out = both_paths(gpu, variant, shape, tmp_path)
    assert np.array_equal(run.output.view(np.uint32), plain.view(np.uint32)), f"{variant.name} on {shape}"
    assert out.read_bytes() == plain.astype("<f4").tobytes()
    clock = run.measurement.clock
    assert clock is not None and clock.chunks == shape[0]
    assert clock.read_s > 0 and clock.write_s > 0 and clock.kernel_s > 0
    assert clock.h2d_s + clock.d2h_s > 0  # a copy of a few kB may be under the events' resolution alone
    assert clock.wall_s >= clock.device_busy_s > 0 and run.measurement.kernel.median > 0
    if variant.accuracy in ("float32", "course"):  # both claim the course rule
        assert compare_outputs(run.output, reference_output(testcase)).passed


@pytest.mark.parametrize("variant", gpu_variants(), ids=lambda v: v.name)
def test_many_items_per_chunk_and_a_ring_of_one(gpu, variant, tmp_path):
    """Chunks of several items (larger than some variants' own launch chunks), and a single-buffer ring."""
    shape = (2000, 128, 32)
    skip_unless_runs(variant, Shape(*shape), gpu)
    for depth, items in ((3, 333), (1, 700)):
        testcase, plain, run, out = both_paths(gpu, variant, shape, tmp_path, depth=depth, items=items, seed=depth)
        assert out.read_bytes() == run.output.astype("<f4").tobytes()
        if variant.accuracy != "course":
            assert np.array_equal(run.output.view(np.uint32), plain.view(np.uint32)), f"{variant.name} depth {depth}"
        else:
            # wgmma16s's bits on (2000, 128, 32) moved by up to 7e-5 between chunks of 333 items and the whole
            # batch on an H100 (its persistent grid is 111 blocks against 125); its claim is the margin, which holds
            report = compare_outputs(run.output, reference_output(testcase))
            assert report.nan_count == 0 and report.max_abs_error <= COURSE_MARGIN_ATOL, f"{variant.name} depth {depth}"


def attnbench(*args: str) -> subprocess.CompletedProcess:
    """The command line in its own process (its own CUDA context), as a user runs it."""
    return subprocess.run([sys.executable, "-m", "attnbench", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "200"})


def test_the_command_line_with_and_without_the_pipeline(gpu, tmp_path):
    case = "odd_1000x64"
    piped, plain = tmp_path / "piped.bin", tmp_path / "plain.bin"
    result = attnbench("run", case, str(piped), "--variant", "tf32x3", "--check", "--json", "--reps", "3")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["pipeline"]["chunks"] >= 2 and data["pipeline"]["h2d_gbps"] > 0
    assert data["verification"]["passed"] and data["total_s"] == data["pipeline"]["wall_s"]
    result = attnbench("run", case, str(plain), "--variant", "tf32x3", "--check", "--no-pipeline")
    assert result.returncode == 0, result.stderr
    assert "bound by" not in result.stdout and "PASS" in result.stdout
    assert piped.read_bytes() == plain.read_bytes()
    shape = suite.get_case(case).shape
    assert np.array_equal(read_output(piped, shape), read_output(plain, shape))
    table = attnbench("run", case, str(piped), "--variant", "qreg", "--reps", "2")
    assert table.returncode == 0, table.stderr
    assert "H2D" in table.stdout and "bound by" in table.stdout


def test_a_single_item_case_runs_unpipelined_and_says_why(gpu, tmp_path):
    assert suite.get_case("sq63").shape.B == 1
    result = attnbench("run", "sq63", str(tmp_path / "o.bin"), "--variant", "naive", "--reps", "2", "--check")
    assert result.returncode == 0, result.stderr
    assert "so a pipeline has nothing to overlap; running the unpipelined path" in result.stderr
    assert "bound by" not in result.stdout


def test_the_default_plan_runs_a_course_like_case(gpu, tmp_path):
    """The planner's own chunks (not forced small) on a case of several chunks."""
    variant = get_variant("tf32x3")
    shape = Shape(48, 2048, 64)
    testcase = random_testcase(shape.B, shape.N, shape.d, np.random.default_rng(7))
    path = tmp_path / "case.in"
    write_testcase(path, testcase)
    plan = plan_chunks(shape, keep_output=True)
    assert plan.refusal is None and len(plan.chunks) >= 8
    run = run_cell(variant, StreamedFile(path, plan, "random", file_range(path, plan.shape), tmp_path / "out.bin"),
                   gpu, ONE_PASS)
    plain = run_cell(variant, WholeInput(testcase, "random"), gpu, ONE_PASS).output
    assert np.array_equal(run.output.view(np.uint32), plain.view(np.uint32))


def test_wgmma3x_chunks_that_split_their_keys_where_the_batch_does_not(gpu, tmp_path):
    """The pipeline's chunks of 5 items split their key range in 3 (80 row blocks on 132 SMs); the whole
    batch of 48 does not. The workspace sized for 48 items holds the chunks' records, and the output is
    right (not bit-identical to the unpipelined pass: the parts are summed in a different order)."""
    variant = get_variant("wgmma3x")
    shape = Shape(48, 2048, 64)
    skip_unless_runs(variant, shape, gpu)
    plan = plan_chunks(shape, keep_output=True)
    assert plan.refusal is None and plan.items_per_chunk == 5
    fwd = next(launch for launch in variant.launches if launch.kernel == "wgmma3x_fwd")
    assert fwd.grid(shape)[2] == 1 and fwd.grid(Shape(5, 2048, 64))[2] == 3
    testcase = random_testcase(shape.B, shape.N, shape.d, np.random.default_rng(11))
    path = tmp_path / "case.in"
    write_testcase(path, testcase)
    run = run_cell(variant, StreamedFile(path, plan, "random", file_range(path, plan.shape), tmp_path / "out.bin"),
                   gpu, ONE_PASS)
    report = compare_outputs(run.output, reference_output(testcase))
    assert report.passed and report.rel_l2_error < 1e-5
