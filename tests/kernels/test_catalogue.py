import re

import pytest

from attnbench.cases.testcase import Shape
from attnbench.errors import ShapeNotSupported, UnknownName, UsageError
from attnbench.kernels.catalogue import REGISTRY, baseline_name, default_variant, get_variant, gpu_variants, variants_for
from attnbench.kernels.nvcc import shared_headers
from attnbench.kernels.variant import SCALAR_ARGS
from attnbench.locations import kernel_dir

GPU_VARIANTS = gpu_variants()

CUDA_DIR = kernel_dir()


def test_registry_has_the_core_variants():
    assert {"cpu", "naive", "bankfree"} <= set(REGISTRY)
    assert REGISTRY["cpu"].backend == "cpu"


@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=lambda v: v.name)
def test_gpu_entries_point_at_real_kernels(variant):
    source = (CUDA_DIR / variant.source).read_text()
    assert source.lstrip().startswith(("//", "/*")), "each kernel file opens with a comment"
    assert variant.launches
    code = source + "".join(header.read_text() for header in shared_headers(variant))  # a shared kernel (softmax_rows.cuh)
    for launch in variant.launches:
        assert re.search(r'extern\s+"C"[^;{]*\b' + launch.kernel + r"\s*\(", code), launch.kernel
        for arg in launch.args:
            assert arg in SCALAR_ARGS or arg in ("qkv", "out") or arg in variant.workspace, (launch.kernel, arg)


@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=lambda v: v.name)
def test_launch_geometry_is_within_cuda_limits(variant):
    for shape in (Shape(1, 1, 32), Shape(3, 17, 64), Shape(100, 1000, 32), Shape(65535, 128, 32), Shape(1, 32768, 64)):
        if variant.refusal(shape):
            continue
        for launch in variant.launches_for(shape):  # a launch that does not apply to a shape is not sized for it
            grid, block = launch.grid(shape), launch.block(shape)
            assert len(grid) == 3 and len(block) == 3
            assert min(grid) >= 1 and max(grid[1:]) <= 65535
            assert 1 <= block[0] * block[1] * block[2] <= 1024
            assert 0 <= launch.smem(shape) <= 227 * 1024  # the most any GPU allows a block (Hopper)
        assert variant.steps(shape) >= 1


def test_refusals_are_one_line_and_name_the_shape():
    bankfree = get_variant("bankfree")
    assert bankfree.refusal(Shape(2, 17, 48)).sentence() == "bankfree needs d in {32, 64}, and the case has d=48"
    assert bankfree.refusal(Shape(2, 17, 64)) is None
    with pytest.raises(ShapeNotSupported) as info:
        bankfree.require(Shape(1, 8, 80))
    assert info.value.exit_code == 2


def test_unknown_variant_lists_the_known_ones():
    with pytest.raises(UnknownName, match="known variants: cpu"):
        get_variant("nope")


def test_default_is_cpu_without_a_gpu_and_a_gpu_variant_with_one():
    assert default_variant(Shape(2, 128, 64), gpu_usable=False).name == "cpu"
    chosen = default_variant(Shape(2, 128, 64), gpu_usable=True)
    assert chosen.backend == "gpu" and chosen.refusal(Shape(2, 128, 64)) is None
    assert default_variant(Shape(2, 128, 48), gpu_usable=True).refusal(Shape(2, 128, 48)) is None


def test_on_hopper_the_default_is_wgmma3x_from_the_measured_switch_point_and_tf32x3_below_or_elsewhere():
    hopper, ampere = (9, 0), (8, 0)
    for d in (32, 64, 128):
        assert default_variant(Shape(4, 512, d), True, hopper).name == "wgmma3x"
        assert default_variant(Shape(4, 32768, d), True, hopper).name == "wgmma3x"
        assert default_variant(Shape(4, 511, d), True, hopper).name == ("wgmma3x" if d == 128 else "tf32x3")
        assert default_variant(Shape(4, 4096, d), True, ampere).name == "tf32x3"
    assert default_variant(Shape(4, 4096, 48), True, hopper).name == "tf32x3"  # wgmma3x takes d in {32, 64, 128}


@pytest.mark.parametrize("shape, expected", [
    (Shape(160, 128, 64), "wgmma3x"), (Shape(80, 256, 64), "wgmma3x"),  # t02, t04
    (Shape(6800, 128, 64), "wgmma3x"), (Shape(3400, 256, 64), "wgmma3x"),  # t12, t14
    (Shape(80, 128, 64), "wgmma3x"), (Shape(10, 256, 64), "wgmma3x"), (Shape(40, 200, 64), "wgmma3x"),
    (Shape(5, 128, 64), "tf32x3"), (Shape(79, 128, 64), "tf32x3"), (Shape(9, 256, 64), "tf32x3"),
], ids=str)
def test_on_hopper_the_streaming_path_is_the_default_for_d64_from_80_or_20_row_blocks(shape, expected):
    assert default_variant(shape, True, (9, 0)).name == expected
    assert default_variant(shape, True, (8, 0)).name == "tf32x3"


def test_on_hopper_the_short_path_is_the_default_from_a_full_wave_of_items():
    hopper, ampere = (9, 0), (8, 0)
    assert default_variant(Shape(13600, 128, 32), True, hopper).name == "wgmma3x"  # t11
    assert default_variant(Shape(1056, 1, 32), True, hopper).name == "wgmma3x"
    assert default_variant(Shape(1055, 128, 32), True, hopper).name == "tf32x3"
    assert default_variant(Shape(320, 128, 32), True, hopper).name == "tf32x3"  # t01
    assert default_variant(Shape(13600, 129, 32), True, hopper).name == "tf32x3"  # past the short path, below 512
    assert default_variant(Shape(13600, 257, 64), True, hopper).name == "tf32x3"  # past the streaming path, below 512
    assert default_variant(Shape(1000, 128, 128), True, hopper).name == "wgmma3x"  # d = 128 from N = 65
    assert default_variant(Shape(5, 65, 128), True, hopper).name == "wgmma3x"
    assert default_variant(Shape(1000, 64, 128), True, hopper).name == "tf32x3"  # d = 128 at N = 64
    assert default_variant(Shape(1000, 128, 128), True, ampere).name == "tf32x3"
    assert default_variant(Shape(13600, 128, 32), True, ampere).name == "tf32x3"


@pytest.mark.parametrize("shape, expected", [
    (Shape(6800, 256, 32), "wgmma3x"), (Shape(160, 256, 32), "wgmma3x"), (Shape(40, 256, 32), "wgmma3x"),  # t13, t03
    (Shape(1056, 384, 32), "wgmma3x"), (Shape(39, 256, 32), "tf32x3"), (Shape(20, 256, 32), "tf32x3"),
    (Shape(1055, 384, 32), "tf32x3"),
], ids=str)
def test_on_hopper_the_streaming_path_is_the_default_for_d32_at_n256_from_80_row_blocks(shape, expected):
    assert default_variant(shape, True, (9, 0)).name == expected


def test_the_baseline_may_be_spelled_as_its_kernel_file_or_flavour_and_must_be_among_the_variants():
    from pathlib import Path

    from attnbench.errors import UsageError
    from attnbench.kernels.catalogue import baseline_name

    kernel_file = str(Path(__file__).parents[2] / "examples" / "report_kernel" / "flash.cu")
    chosen = [get_variant("cpu"), get_variant(kernel_file), get_variant("qreg:fastmath")]
    assert baseline_name(kernel_file, chosen) == "flash"
    assert baseline_name("qreg:fastmath", chosen) == "qreg:fastmath"
    assert baseline_name(None, chosen) is None
    for missing in ("qreg", "no_such_variant"):
        with pytest.raises(UsageError, match=f"--baseline {missing} is not among --variants"):
            baseline_name(missing, chosen)


def test_on_the_course_gtx_1080_tensor_core_variants_refuse_in_a_sentence_and_the_default_is_ffma():
    gtx_1080, ampere = (6, 1), (8, 0)
    for name in ("tf32x3", "gemmtc"):
        assert get_variant(name).gpu_refusal(gtx_1080).sentence() == (
            f"{name} needs sm_80 or newer for its tf32x3 instructions, and this GPU is sm_61")
        assert get_variant(name).runs_on(ampere)
    assert get_variant("wgmma3x").gpu_refusal(ampere).sentence() == "wgmma3x runs on sm_90a only, and this GPU is sm_80"
    assert get_variant("fa2simt").runs_on(gtx_1080) and get_variant("fa2simt").gpu_refusal(None) is None
    for shape in (Shape(4, 4096, 64), Shape(13600, 128, 32), Shape(2, 17, 48)):
        chosen = default_variant(shape, True, gtx_1080)
        assert chosen.unit == "ffma" and chosen.refusal(shape) is None, chosen.name


def test_square_lab_shapes_default_to_the_exact_tensor_core_gemms_where_measured_faster():
    hopper, ampere = (9, 0), (8, 0)
    assert default_variant(Shape(1, 2047, 2047), True, hopper).name == "gemmwg3x"
    assert default_variant(Shape(1, 1024, 1024), True, hopper).name == "gemmtc"  # gemmwg3x from n = 1025
    assert default_variant(Shape(1, 2047, 2047), True, ampere).name == "gemmtc"
    assert default_variant(Shape(1, 63, 63), True, hopper).name == "gemm"  # neither is faster below 64
    assert default_variant(Shape(1, 2047, 2047), True, (6, 1)).name == "gemm"  # no tensor cores
    assert default_variant(Shape(4, 4096, 64), True, hopper).name == "wgmma3x"


@pytest.mark.parametrize("variant", [v for v in REGISTRY.values() if v.workspace], ids=lambda v: v.name)
def test_a_workspace_sized_for_a_batch_holds_every_launch_of_fewer_items(variant):
    """The runner sizes workspaces for its launch chunk and launches fewer items at the end of a batch
    and in its pipeline's chunks (t22 in chunks of 5 items: wgmma3x splits those, not the batch)."""
    for B, N, d in ((48, 2048, 64), (500, 2048, 64), (10, 2048, 64), (300, 1000, 32), (20, 4097, 128), (900, 256, 64)):
        if variant.refusal(Shape(B, N, d)) is not None:
            continue
        for name, size in variant.workspace.items():
            whole = size(Shape(B, N, d))
            assert all(size(Shape(b, N, d)) <= whole for b in range(1, B + 1)), f"{name} at {B}, {N}, {d}"


def test_every_variant_and_flavour_names_the_arithmetic_of_its_products():
    """`attnbench list` shows it and saved results record it (VariantInfo.arithmetic)."""
    from attnbench.kernels.catalogue import all_variants, with_flavours
    from attnbench.kernels.nvcc import variant_info
    from attnbench.results.compute_units import COMPUTE_UNITS
    from attnbench.results.resultset import VariantInfo

    arithmetics = {unit.arithmetic for unit in COMPUTE_UNITS.values()}
    for variant in with_flavours(all_variants()):
        assert variant.arithmetic and (variant.arithmetic in arithmetics or variant.name == "cpu")
    expected = {"cpu": "FP32 (numpy)", "bankfree": "FP32 FFMA", "tf32x3": "3xTF32", "wgmma3x": "3xTF32 (wgmma)",
                "wgmma16s": "split FP16 + FP16", "triton:ieee": "FP32 FFMA", "triton:tf32": "TF32",
                "torch:fp16": "FP16", "torch:bf16": "BF16", "triton:bf16x3": "3xBF16", "triton:bf16x6": "6xBF16"}
    for name, arithmetic in expected.items():
        assert get_variant(name).arithmetic == arithmetic, name
    assert get_variant("wgmma16s").accuracy == "course" and get_variant("wgmma3x").accuracy == "float32"
    info = variant_info(get_variant("wgmma16s"), "sm_90a")
    assert info.arithmetic == "split FP16 + FP16" and info.accuracy == "course"
    assert VariantInfo.from_dict(info.to_dict()) == info
    older = {k: v for k, v in info.to_dict().items() if k != "arithmetic"}  # saved before it was recorded
    assert VariantInfo.from_dict(older).arithmetic == ""


@pytest.mark.parametrize("shape, expected", [
    (Shape(500, 2048, 64), "wgmma16s"), (Shape(2, 32768, 64), "wgmma16s"), (Shape(8, 4096, 128), "wgmma16s"),
    (Shape(10, 2048, 64), "wgmma16s"), (Shape(160, 128, 64), "wgmma16s"), (Shape(13600, 128, 32), "wgmma16s"),
    (Shape(40, 1024, 64), "wgmma16s"),
    (Shape(5, 1000, 128), "wgmma3x"),  # d = 128 below N = 2048, unmeasured against wgmma3x: the float32 default
    (Shape(2, 4096, 48), "tf32x3"),  # a head dim wgmma16s refuses
])
def test_the_course_accuracy_default_is_wgmma16s_where_it_was_measured_to_lead(shape, expected):
    assert default_variant(shape, gpu_usable=True, compute_capability=(9, 0), accuracy="course").name == expected
    # the float32 default never changes
    assert default_variant(shape, gpu_usable=True, compute_capability=(9, 0)).name != "wgmma16s"


def test_the_course_accuracy_default_off_hopper_and_without_a_gpu():
    shape = Shape(500, 2048, 64)
    assert default_variant(shape, gpu_usable=True, compute_capability=(8, 0), accuracy="course").name == "tf32x3"
    assert default_variant(shape, gpu_usable=False, accuracy="course").name == "cpu"
    with pytest.raises(UsageError):
        default_variant(shape, gpu_usable=True, compute_capability=(9, 0), accuracy="fast")


def test_the_half_precision_peers_claim_no_accuracy_and_their_float32_peers_keep_theirs():
    """Their cells are held to the course rule like every other (WRONG where they fail it); they promise nothing
    the GPU tests would hold them to."""
    for name in ("torch:fp16", "torch:bf16", "triton:bf16x3", "triton:bf16x6", "triton:tf32"):
        assert get_variant(name).accuracy == "none", name
    for name in ("torch", "triton", "triton:ieee"):
        assert get_variant(name).accuracy == "float32", name
    assert get_variant("torch:bf16").gpu_refusal((7, 5)).sentence() == "torch:bf16 needs sm_80 or newer for its bf16 instructions, and this GPU is sm_75"
    assert get_variant("torch:fp16").gpu_refusal((7, 5)) is None


def test_the_course_accuracy_default_passes_over_wgmma16s_where_its_rounding_cannot_hold_the_check():
    from attnbench.cases.fresh_values import SUITE_RANGE, InputRange

    hidden = InputRange((-3.0, -3.0, -1000.0), (3.0, 3.0, 1000.0))  # V up to 1000 (B 2, N 512, d 64)
    told = []
    shape = Shape(2, 512, 64)
    picked = default_variant(shape, gpu_usable=True, compute_capability=(9, 0), accuracy="course", ranges=hidden,
                             tolerance=(5e-3, 0.0), refused=told.append)
    assert picked.name == "wgmma3x"
    assert [r.variant for r in told] == ["wgmma16s"] and "|V| up to 1000" in told[0].sentence()
    # the course's own values, or a tolerance scaled to V's range, keep it
    for ranges, tolerance in ((SUITE_RANGE, (5e-3, 0.0)), (hidden, (5e-3 * 1000 / 3, 0.0))):
        assert default_variant(shape, gpu_usable=True, compute_capability=(9, 0), accuracy="course", ranges=ranges,
                               tolerance=tolerance).name == "wgmma16s"


def test_a_variant_without_roundings_of_its_own_never_refuses_an_inputs_values():
    from attnbench.cases.fresh_values import InputRange

    huge = InputRange((-1e30, -1e30, -1e30), (1e30, 1e30, 1e30))
    for name in ("wgmma3x", "tf32x3", "cpu", "naive"):
        assert get_variant(name).precision_refusal(huge, Shape(2, 512, 64), (0.0, 0.0)) is None
    refused = get_variant("wgmma16s").precision_refusal(huge, Shape(2, 512, 64), (5e-3, 0.0))
    assert refused is not None and "beyond FP16's largest value 65504" in refused.sentence()


def test_a_build_with_its_own_exponential_widens_its_units_rounding_of_the_weights():
    """wgmma16s:poly50 takes half its weights from a polynomial exp2: its envelope adds that polynomial's
    relative error to FP16's rounding of P, so near the edge of reach it refuses where plain wgmma16s does not."""
    from attnbench.cases.fresh_values import InputRange
    from attnbench.kernels.exp2_poly import REL_ERROR_BOUND
    from attnbench.results.precision_envelope import error_bound

    plain, poly = get_variant("wgmma16s"), get_variant("wgmma16s:poly50")
    assert poly.rounding.weights_relative == plain.rounding.weights_relative + REL_ERROR_BOUND
    shape = Shape(2, 512, 64)

    def ranges(v):
        return InputRange((-3.0, -3.0, -v), (3.0, 3.0, v))

    # the V at which plain wgmma16s's representation bound reaches 5e-3, found by bisection; just below it the
    # polynomial's extra error puts poly50 out of reach
    low, high = 1.0, 100.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if error_bound(plain.rounding, ranges(mid), 512, 64).representation <= 5e-3 else (low, mid)
    edge = ranges(low * 0.999)
    assert plain.precision_refusal(edge, shape, (5e-3, 0.0)) is None
    assert poly.precision_refusal(edge, shape, (5e-3, 0.0)) is not None


@pytest.mark.parametrize("baseline, shown", [("", "''"), ("  ", "'  '"), ("na\x1bive", "na\\x1bive")])
def test_a_baseline_not_among_the_variants_is_named_visibly(baseline, shown):
    """--baseline '' read '--baseline  is not among' (a newcomer pass): an empty name shows quoted, a control
    character escaped."""
    with pytest.raises(UsageError, match=re.escape(f"--baseline {shown} is not among --variants (cpu)")):
        baseline_name(baseline, variants_for("cpu"))


def test_a_whole_program_given_where_kernel_variants_go_is_named_as_one():
    """`sweep --variants exe:./att`, `info --variant exe:./att`, `profile --variant exe:./att` said "no variant named
    'exe'" (read as variant exe, flavour ./att) and listed every variant."""
    for lookup in (get_variant, variants_for):
        with pytest.raises(UnknownName) as info:
            lookup("exe:./att")
        said = str(info.value)
        assert said.startswith("exe:./att: a whole program, which compare runs") and "'exe'" not in said, said
