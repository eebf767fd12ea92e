"""Each GPU variant, and each flavour of one (qreg:fastmath), on odd and course-like shapes against float64,
on seeded random inputs (the `rng` fixture). Flavours are held to the same rule as their variant: the
course's 5e-3 per element and relL2 <= 1e-5, or for accuracy "course" (wgmma16s) half the course's
tolerance per element and relL2 <= 1e-3. Report 004's transcriptions (tools/report004) are checked too,
on the shapes they take, so the kernels ours are measured against compute the right thing.

The runner poisons the output buffer with NaN before the pass, so unwritten elements fail verify.
Every variant that claims a safe softmax (accuracy "float32" or "course") also runs the large-score cases of
tests/large_scores.py; `singlehead` (accuracy "unsafe") must fail the one that overflows, as documented.
`gemmtc`, made for the square lab and large head dims, also meets the lab's rule on its sizes (both
tiles, aligned and unaligned rows) and the course tolerance on report 003's large head dims.
"""

from pathlib import Path

import numpy as np
import pytest

from attnbench.bench.first_pass import WholeInput
from attnbench.bench.runner import run_cell
from attnbench.bench.squarelab import lab_check
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.verify import COURSE_MARGIN_ATOL, compare_outputs
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import flavoured_variants, get_variant, gpu_variants
from attnbench.kernels.user import find_launch_facts, load_variants
from tests.conftest import random_testcase, skip_unless_runs
from tests.large_scores import (
    FLOAT32_EXP_LIMIT,
    LARGE_SCORE_KINDS,
    COURSE_REL_L2_BOUND,
    check_large_scores,
    large_score_testcase,
    large_score_tolerance,
    max_scaled_score,
)

ODD_SHAPES = [(3, 1, 32), (2, 17, 48), (3, 100, 80), (2, 1000, 128), (2, 17, 1), (5, 100, 32), (3, 1000, 64), (2, 33, 64)]
COURSE_LIKE_SHAPES = [(64, 128, 32), (16, 256, 64), (2, 2048, 32), (1, 4096, 64), (3, 1536, 64), (1, 640, 512)]
LARGE_SCORE_SHAPES = [(2, 100, 32), (2, 256, 64), (1, 1000, 128)]
ONE_PASS = TimingPolicy(warmup=0, reps=1, flush_l2=False)
ALL_BUILDS = gpu_variants() + flavoured_variants()  # every variant, then every flavour of one
SAFE_VARIANTS = [v for v in ALL_BUILDS if v.accuracy in ("float32", "course")]
REPORT004 = Path(__file__).resolve().parents[2] / "tools" / "report004"


def check_variant(gpu, variant, B, N, d, rng):
    tc = random_testcase(B, N, d, rng)
    run = run_cell(variant, WholeInput(tc, "random"), gpu, ONE_PASS)
    output, measurement = run.output, run.measurement
    report = compare_outputs(output, reference_output(tc))
    where = f"{variant.name} on B={B} N={N} d={d}"
    assert report.nan_count == 0, f"{where}: {report.nan_count} elements unwritten or NaN"
    assert report.passed, f"{where}: {report.failing} failing, worst {report.worst}"
    if variant.accuracy == "course":  # within half the tolerance: the margin it claims
        assert report.max_abs_error <= COURSE_MARGIN_ATOL, f"{where}: max error {report.max_abs_error:.3g}"
        assert report.rel_l2_error <= COURSE_REL_L2_BOUND, f"{where}: relL2 {report.rel_l2_error:.3g}"
    else:
        assert report.rel_l2_error <= 1e-5, f"{where}: relL2 {report.rel_l2_error:.3g}"
    assert measurement.kernel.median > 0
    # the one sample ran on a fresh input, and its output was checked
    assert run.timed_check.passed and run.measurement.kernel.fresh_inputs == 1, f"{where}: {run.timed_check.describe()}"


SAMPLED_SHAPES = [(3, 1, 32), (2, 33, 64), (64, 128, 32), (16, 256, 64), (1, 4096, 64)]
SAMPLED = TimingPolicy(warmup=2, reps=10, flush_l2=True)


@pytest.mark.gpu
@pytest.mark.gpu_alone
@pytest.mark.parametrize("variant", ALL_BUILDS + [get_variant("torch")], ids=lambda v: v.name)
def test_the_fresh_samples_keep_every_builtin_passing(gpu, variant, rng):
    """Every built-in (and the torch peer) computes the answer of every fresh sample, gives the same bits for one
    input launched twice, and agrees with the host's wall clock."""
    if variant.kind.needs_torch:
        pytest.importorskip("torch")
    for shape in SAMPLED_SHAPES:
        if variant.refusal(Shape(*shape)) is not None or not variant.runs_on(gpu.compute_capability):
            continue
        tc = random_testcase(*shape, rng)
        run = run_cell(variant, WholeInput(tc, "random"), gpu, SAMPLED, lambda out: compare_outputs(out, reference_output(tc)),
                          gate=True)
        where = f"{variant.name} on {shape}"
        assert run.measurement is not None, f"{where}: {run.timed_check.describe() if run.timed_check else run.check}"
        timed = run.measurement.timed_check
        assert timed.passed and timed.clock_warning is None, f"{where}: {timed.describe()} {timed.clock_warning}"
        # 2 warm-up passes, 10 samples, then one input launched twice, one launch not poisoned first and that input
        # again over zeros
        assert timed.samples == 16 and timed.fresh_inputs == 14 and run.measurement.kernel.fresh_inputs == 10
        assert timed.differing is None, f"{where}: {timed.differing}"
        bound = COURSE_MARGIN_ATOL if variant.accuracy == "course" else 1e-4
        assert timed.max_abs_error < bound, f"{where}: {timed.max_abs_error}"


@pytest.mark.gpu
@pytest.mark.parametrize("shape", ODD_SHAPES + COURSE_LIKE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("variant", ALL_BUILDS, ids=lambda v: v.name)
def test_variant_matches_float64(gpu, variant, shape, rng):
    skip_unless_runs(variant, Shape(*shape), gpu)
    check_variant(gpu, variant, *shape, rng)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ALL_BUILDS, ids=lambda v: v.name)
def test_batch_chunks_and_long_sequences(gpu, variant, rng):
    """A batch large enough to be split into chunks, and a long sequence, where accepted."""
    for shape in ((2000, 128, 32), (1, 16384, 64)):
        if variant.refusal(Shape(*shape)) is None and variant.runs_on(gpu.compute_capability):
            check_variant(gpu, variant, *shape, rng)


def test_every_safe_variant_takes_a_large_score_shape():
    """Runs without a GPU: no variant that claims a safe softmax escapes the large-score cases by its constraints."""
    assert SAFE_VARIANTS and "singlehead" not in {v.name for v in SAFE_VARIANTS}
    for variant in SAFE_VARIANTS:
        taken = [s for s in LARGE_SCORE_SHAPES if variant.refusal(Shape(*s)) is None]
        assert taken, f"{variant.name} accepts none of {LARGE_SCORE_SHAPES}"
    singlehead = get_variant("singlehead")
    assert singlehead.accuracy == "unsafe" and singlehead.refusal(Shape(*LARGE_SCORE_SHAPES[0])) is None


@pytest.mark.gpu
@pytest.mark.parametrize("shape", COURSE_LIKE_SHAPES + [(1, 32768, 32)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", [f"{step}_report" for step in ("float4", "restructure", "coalesced", "reglm", "bankfree",
                                                                  "qreg")])
def test_report_004_transcriptions_match_float64(gpu, name, shape, rng):
    """The kernels tools/report004 holds, written the report's way, on the shapes they take (N a multiple of 128)."""
    variant = load_variants(find_launch_facts(REPORT004))[name]
    skip_unless_runs(variant, Shape(*shape), gpu)
    check_variant(gpu, variant, *shape, rng)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", LARGE_SCORE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", LARGE_SCORE_KINDS)
@pytest.mark.parametrize("variant", SAFE_VARIANTS, ids=lambda v: v.name)
def test_safe_softmax_on_large_scores(gpu, variant, kind, shape, rng):
    """Q*30, zero Q, V*1000: each within the course rule scaled to V's range (tests/large_scores.py)."""
    skip_unless_runs(variant, Shape(*shape), gpu)
    tc = large_score_testcase(kind, *shape, rng)
    output = run_cell(variant, WholeInput(tc, kind), gpu, ONE_PASS, tolerance=large_score_tolerance(tc)).output
    _, problems = check_large_scores(kind, tc, output, variant.accuracy)
    assert not problems, f"{variant.name} on {kind} B={shape[0]} N={shape[1]} d={shape[2]}: " + "; ".join(problems)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [s for s in LARGE_SCORE_SHAPES if s[2] <= 64], ids=lambda s: "x".join(map(str, s)))
def test_singlehead_overflows_on_large_scores_and_verify_catches_it(gpu, shape, rng):
    """The unsafe softmax (exp without the max subtraction) gives Inf/NaN once a scaled score passes ~88.7:
    Q*30 does that, and verify must fail it. Zero Q and V*1000 keep the scores under 9*sqrt(d) (72 at
    d = 64) and N*exp(max score)*max|V| far under float32's 3.4e38, so there it is right, as documented."""
    variant = get_variant("singlehead")
    for kind in LARGE_SCORE_KINDS:
        tc = large_score_testcase(kind, *shape, rng)
        output = run_cell(variant, WholeInput(tc, kind), gpu, ONE_PASS).output
        report, problems = check_large_scores(kind, tc, output)
        if kind == "q30":
            assert max_scaled_score(tc) > 2 * FLOAT32_EXP_LIMIT
            assert not report.passed and report.nan_count + report.inf_count > 0, f"singlehead on q30: {report}"
            assert report.rel_l2_error == float("inf")
        else:
            top = max_scaled_score(tc)
            assert top < FLOAT32_EXP_LIMIT and shape[1] * np.exp(top) * np.abs(tc.v).max() < 3.4e38
            assert not problems, f"singlehead on {kind} B={shape[0]} N={shape[1]} d={shape[2]}: " + "; ".join(problems)


# The lab's sizes around each tile and alignment change of gemmtc: 64 x 64 tiles up to n = 1408, 128 x 128
# from 1409 (cdiv(n, 128)^2 >= 132); n % 4 != 0 takes the 4-byte copies, n odd the scalar stores.
GEMMTC_SQUARE_SIZES = [1, 63, 64, 65, 127, 129, 255, 257, 1023, 1025, 1408, 1409, 2047, 2048, 2049, 4097]
# Report 003's large head dims as (batch * heads, seq, hdim), and odd ones beside them.
GEMMTC_LARGE_HEAD_DIMS = [(4, 64, 512), (4, 64, 2048), (2, 32, 4096), (1, 16, 8192), (3, 33, 1001), (2, 130, 4099)]


@pytest.mark.gpu
@pytest.mark.parametrize("n", GEMMTC_SQUARE_SIZES)
def test_gemmtc_meets_the_square_labs_rule(gpu, n, rng):
    """sum |Y - Y_ref| <= 100 n^2 FLT_EPSILON against float64, no NaN (the output starts as NaN), relL2 <= 1e-5."""
    variant = get_variant("gemmtc")
    skip_unless_runs(variant, Shape(1, n, n), gpu)
    tc = random_testcase(1, n, n, rng)
    output = run_cell(variant, WholeInput(tc, f"sq{n}"), gpu, ONE_PASS).output
    check = lab_check(output, reference_output(tc))
    assert check.passed, f"gemmtc on n={n}: {check.describe()}"
    assert check.rel_l2_error <= 1e-5, f"gemmtc on n={n}: relL2 {check.rel_l2_error:.3g}"


@pytest.mark.gpu
@pytest.mark.parametrize("shape", GEMMTC_LARGE_HEAD_DIMS, ids=lambda s: "x".join(map(str, s)))
def test_gemmtc_on_large_head_dims(gpu, shape, rng):
    variant = get_variant("gemmtc")
    skip_unless_runs(variant, Shape(*shape), gpu)
    check_variant(gpu, variant, *shape, rng)


# wgmma3x's short path (wgmma3x_short, d = 32 and N <= 128: 8 whole items per block, no pre-pass): B not a
# multiple of the 8 items (and below it), one key, odd N, one key tile (N <= 64) and two, the full 128.
WGMMA3X_SHORT_SHAPES = [(37, 128, 32), (3, 1, 32), (11, 100, 32), (9, 17, 32), (16, 64, 32), (10, 65, 32),
                        (1, 128, 32), (8, 128, 32), (2000, 127, 32)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", WGMMA3X_SHORT_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_wgmma3x_short_path_matches_float64(gpu, shape, rng):
    variant = get_variant("wgmma3x")
    assert [launch.kernel for launch in variant.launches_for(Shape(*shape))] == ["wgmma3x_short"]
    skip_unless_runs(variant, Shape(*shape), gpu)
    check_variant(gpu, variant, *shape, rng)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(11, 100, 32), (9, 128, 32)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", LARGE_SCORE_KINDS)
def test_wgmma3x_short_path_on_large_scores(gpu, kind, shape, rng):
    variant = get_variant("wgmma3x")
    skip_unless_runs(variant, Shape(*shape), gpu)
    tc = large_score_testcase(kind, *shape, rng)
    output = run_cell(variant, WholeInput(tc, kind), gpu, ONE_PASS).output
    _, problems = check_large_scores(kind, tc, output)
    assert not problems, f"wgmma3x on {kind} B={shape[0]} N={shape[1]} d={shape[2]}: " + "; ".join(problems)


# wgmma3x's key split (grid z: each block takes a range of K/V tiles, the last block of a row block to
# finish combines the records): every split count on uneven ranges (3 of 16 tiles: 5, 5, 6), the masked
# last tile in the last part only, one tile a part, more parts than tiles (3 tiles in 4: the fourth block
# leaves at once), each head dimension, the pre-pass path and the streaming path (N <= 512 at d = 32, 256 else); forced, so
# that the shapes are small.
WGMMA3X_SPLIT_SHAPES = [(2, 1000, 64), (3, 129, 32), (1, 2047, 128), (2, 256, 64), (1, 300, 32), (2, 700, 32)]


@pytest.mark.gpu
@pytest.mark.parametrize("splits", [2, 3, 4])
@pytest.mark.parametrize("shape", WGMMA3X_SPLIT_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_wgmma3x_key_split_matches_float64(gpu, shape, splits, rng, monkeypatch):
    from attnbench.kernels import wgmma3x

    variant = get_variant("wgmma3x")
    skip_unless_runs(variant, Shape(*shape), gpu)
    monkeypatch.setattr(wgmma3x, "_wgmma3x_splits", lambda s: splits)
    main = variant.launches_for(Shape(*shape))[-1]  # wgmma3x_fwd after the pre-pass, or wgmma3x_stream
    assert main.kernel == ("wgmma3x_stream" if wgmma3x._wgmma3x_streamed(Shape(*shape)) else "wgmma3x_fwd")
    assert main.grid(Shape(*shape))[2] == splits
    check_variant(gpu, variant, *shape, rng)


def check_wgmma3x_large_scores(gpu, kind, shape, rng, how):
    variant = get_variant("wgmma3x")
    skip_unless_runs(variant, Shape(*shape), gpu)
    tc = large_score_testcase(kind, *shape, rng)
    output = run_cell(variant, WholeInput(tc, kind), gpu, ONE_PASS).output
    _, problems = check_large_scores(kind, tc, output)
    assert not problems, f"wgmma3x {how} on {kind} {shape}: " + "; ".join(problems)


# wgmma3x's persistent blocks (grid x below the unit count: each block's rings, phases and ping-pong run
# on from unit to unit), forced to a few blocks so that each runs many units: units that end mid-item
# (N > 128: two row blocks an item) and ones that start a new item, uneven counts per block, masked rows
# and keys, both paths, d = 32 and 64, unsplit and split.
WGMMA3X_PERSISTENT_SHAPES = [(9, 129, 64), (7, 256, 32), (5, 200, 64), (4, 1000, 32), (3, 300, 64), (6, 64, 64)]


@pytest.mark.gpu
@pytest.mark.parametrize("blocks", [1, 3, 7])
@pytest.mark.parametrize("shape", WGMMA3X_PERSISTENT_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_wgmma3x_persistent_blocks_match_float64(gpu, shape, blocks, rng, monkeypatch):
    from attnbench.kernels import wgmma3x

    variant = get_variant("wgmma3x")
    skip_unless_runs(variant, Shape(*shape), gpu)
    monkeypatch.setattr(wgmma3x, "_wgmma3x_blocks", lambda s, sms=132: min(blocks, wgmma3x._wgmma3x_units(s)))
    assert variant.launches_for(Shape(*shape))[-1].grid(Shape(*shape))[0] <= blocks
    check_variant(gpu, variant, *shape, rng)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(5, 200, 64), (3, 1000, 32)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", LARGE_SCORE_KINDS)
def test_wgmma3x_persistent_blocks_on_large_scores(gpu, kind, shape, rng, monkeypatch):
    """Each unit starts its softmax afresh: a unit's huge maximum must not leak into the next one's."""
    from attnbench.kernels import wgmma3x

    monkeypatch.setattr(wgmma3x, "_wgmma3x_blocks", lambda s, sms=132: 2)
    check_wgmma3x_large_scores(gpu, kind, shape, rng, "on 2 persistent blocks")


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2, 1000, 64), (2, 256, 64)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", LARGE_SCORE_KINDS)
def test_wgmma3x_key_split_on_large_scores(gpu, kind, shape, rng, monkeypatch):
    """The parts' maxima differ by far more than float32's exponent range: the combine rescales each."""
    from attnbench.kernels import wgmma3x

    monkeypatch.setattr(wgmma3x, "_wgmma3x_splits", lambda s: 4)
    check_wgmma3x_large_scores(gpu, kind, shape, rng, "split in 4")


# wgmma3x's pre-pass: wgmma3x_prep splits the items of the main kernel's first two rounds of blocks, and
# the main kernel's producer warps split the rest (jobs from a counter of the grid's, a count of split
# tiles per group of each item; the last block to finish sets the counters back to zero). A counter left
# behind would make the next pass skip the split and read the last pass's K and V: the second and third
# passes, on other inputs through the same workspace, would be wrong. Two persistent blocks, so that the
# workers split every item but the first; odd N (a masked last tile); d = 128.
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(3, 1000, 64), (3, 1100, 128), (5, 600, 32)], ids=lambda s: "x".join(map(str, s)))
def test_wgmma3x_pre_split_runs_again_on_new_inputs(gpu, shape, rng, monkeypatch):
    from attnbench.backends.gpu_execution import GpuExecution
    from attnbench.kernels import wgmma3x

    variant = get_variant("wgmma3x")
    skip_unless_runs(variant, Shape(*shape), gpu)
    monkeypatch.setattr(wgmma3x, "_wgmma3x_blocks", lambda s, sms=132: min(2, wgmma3x._wgmma3x_units(s)))
    prep, fwd = variant.launches_for(Shape(*shape))
    assert (prep.kernel, fwd.kernel) == ("wgmma3x_prep", "wgmma3x_fwd")
    assert prep.grid_for(Shape(*shape), gpu.sm_count)[1] == 1  # wgmma3x_prep splits item 0, the workers the rest
    execution = GpuExecution(gpu, variant, random_testcase(*shape, rng))
    try:
        execution.upload()
        for attempt in range(3):
            testcase = random_testcase(*shape, rng)
            gpu.driver.memcpy_htod(execution.device_input, testcase.qkv)
            execution.poison_output()
            execution.run_pass()
            report = compare_outputs(execution.download(), reference_output(testcase))
            assert report.passed and report.rel_l2_error <= 1e-5, f"pass {attempt} on {shape}: {report.worst}"
    finally:
        execution.free()


@pytest.mark.gpu
@pytest.mark.parametrize("host_rows", [False, True], ids=["device", "host"])
def test_each_samples_rows_are_checked_at_head_dims_in_the_thousands(gpu, host_rows, rng, monkeypatch):
    """A row of d = 4099 needs 67 KB of shared memory in our check kernel (opted in); where a GPU allows less,
    the sampled rows are computed on the host instead. Both ways every sample is checked and passes."""
    from attnbench.backends import gpu_fresh

    if host_rows:
        monkeypatch.setattr(gpu_fresh.DeviceFreshSamples, "_shared_limit", lambda self: 0)
    variant = get_variant("gemmtc")
    skip_unless_runs(variant, Shape(2, 130, 4099), gpu)
    tc = random_testcase(2, 130, 4099, rng)
    run = run_cell(variant, WholeInput(tc, "random"), gpu, TimingPolicy(warmup=1, reps=3, flush_l2=False))
    assert run.measurement is not None, run.timed_check.describe()
    timed = run.measurement.timed_check
    assert timed.passed and timed.rows_per_sample == 130 * 2, timed.describe()
