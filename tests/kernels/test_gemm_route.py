"""Host-side facts of the entries in attnbench/kernels/gemm_route.py that go beyond what every
variant is checked for in test_catalogue.py: gemmtc's tiles, threads, shared memory and workspace."""

import re

import pytest

from attnbench.cases.testcase import Shape
from attnbench.kernels import gemm_route, wgmma3x
from attnbench.kernels.catalogue import REGISTRY, get_variant
from attnbench.kernels.variant import cdiv
from attnbench.locations import kernel_dir

GEMMTC = get_variant("gemmtc")
QKT, SOFTMAX, PV, PAD, QKT_PADDED, SOFTMAX_PADDED, PV_PADDED = GEMMTC.launches


def test_gemmtc_follows_gemm_and_shares_its_row_softmax():
    names = list(REGISTRY)
    assert names.index("gemmtc") == names.index("gemm") + 1
    assert [launch.kernel for launch in GEMMTC.launches_for(Shape(1, 2048, 2048))] == [
        "gemmtc_qkt", "gemm_softmax_rows", "gemmtc_pv"]
    gemm_softmax = get_variant("gemm").launches[1]
    shape = Shape(3, 1000, 64)
    assert (SOFTMAX.grid(shape), SOFTMAX.block(shape), SOFTMAX.args) == (
        gemm_softmax.grid(shape), gemm_softmax.block(shape), gemm_softmax.args)
    assert GEMMTC.unit == "tf32x3" and GEMMTC.arch is None and GEMMTC.accuracy == "float32"


@pytest.mark.parametrize(
    ("shape", "qk_tile", "pv_tile"),
    [
        (Shape(1, 1, 1), 64, 64),
        (Shape(1, 1024, 1024), 64, 64),      # 64 blocks of 128 x 128 would leave half of 132 SMs idle
        (Shape(1, 1408, 1408), 64, 64),      # 11 x 11 = 121 < 132
        (Shape(1, 1409, 1409), 128, 128),    # 12 x 12 = 144
        (Shape(1, 8193, 8193), 128, 128),
        (Shape(500, 2048, 64), 128, 64),     # P V is 2048 x 64: too narrow for 128-wide tiles
        (Shape(1, 1024, 2048), 64, 64),      # 8 x 8 and 8 x 16 = 128 blocks: both under 132
        (Shape(1, 1100, 2048), 64, 128),     # 9 x 9 = 81 for Q K^T, 9 x 16 = 144 for P V
    ],
    ids=str,
)
def test_gemmtc_tiles(shape, qk_tile, pv_tile):
    assert GEMMTC.defines(shape) == {"QK_TILE": qk_tile, "PV_TILE": pv_tile}
    threads = {64: 128, 128: 256}
    assert QKT.block(shape) == (threads[qk_tile], 1, 1) and PV.block(shape) == (threads[pv_tile], 1, 1)
    assert QKT.grid(shape) == (cdiv(shape.N, qk_tile), cdiv(shape.N, qk_tile), shape.B)
    assert PV.grid(shape) == (cdiv(shape.d, pv_tile), cdiv(shape.N, pv_tile), shape.B)


def test_gemmtc_tiles_do_not_depend_on_the_batch():
    """Defines come from the whole case, grids from each chunk: they must agree on the tile."""
    for N, d in ((1409, 1409), (2048, 64), (300, 5000), (17, 1)):
        assert len({tuple(GEMMTC.defines(Shape(B, N, d)).items()) for B in (1, 7, 65535)}) == 1


def test_gemmtc_shared_memory_and_workspace():
    small, square, wide = Shape(2, 1000, 64), Shape(1, 4096, 4096), Shape(2, 2048, 64)
    assert (QKT.smem(small), PV.smem(small)) == (55_296, 55_296)
    assert (QKT.smem(square), PV.smem(square)) == (110_592, 107_520)
    assert (QKT.smem(wide), PV.smem(wide)) == (110_592, 55_296)
    assert max(QKT.smem(square), PV.smem(square)) <= 163 * 1024  # fits an A100 (sm_80) as well as Hopper
    assert SOFTMAX.smem(square) == 0
    assert GEMMTC.workspace_bytes(Shape(3, 1000, 64)) == 4 * 3 * 1000 * 1000


@pytest.mark.parametrize("shape", [Shape(1, 2049, 2049), Shape(2, 100, 63), Shape(3, 101, 64), Shape(1, 1, 1)], ids=str)
def test_gemmtc_pads_where_rows_are_not_16_byte_aligned(shape):
    """N or d not a multiple of 4: the pre-pass, then the same GEMM tiles and grids on padded rows."""
    kernels = [launch.kernel for launch in GEMMTC.launches_for(shape)]
    assert kernels == ["gemmtc_pad", "gemmtc_qkt_padded", "gemm_softmax_rows_padded", "gemmtc_pv_padded"]
    for plain, padded in ((QKT, QKT_PADDED), (PV, PV_PADDED), (SOFTMAX, SOFTMAX_PADDED)):
        assert (padded.grid(shape), padded.block(shape), padded.smem(shape)) == (
            plain.grid(shape), plain.block(shape), plain.smem(shape))
    n_pad, d_pad = cdiv(shape.N, 4) * 4, cdiv(shape.d, 4) * 4
    item = (2 * shape.N + n_pad) * d_pad  # Q and K: N rows, V: n_pad rows, each d_pad wide
    assert PAD.grid(shape) == (cdiv(item, 256), shape.B, 1) and PAD.args == ("qkv", "padded", "N", "d")
    assert QKT_PADDED.args[0] == PV_PADDED.args[0] == "padded"
    assert GEMMTC.workspace_bytes(shape) == 4 * shape.B * (shape.N * n_pad + item)
    source = (kernel_dir() / GEMMTC.source).read_text()
    assert all(f"gemmtc_{k}(" in source for k in ("pad", "qkt_padded", "pv_padded"))


def test_gemmtc_host_constants_match_the_kernel():
    """The shared-memory sizes above rest on the kernel's k-tile and ring depth."""
    source = (kernel_dir() / GEMMTC.source).read_text()
    bk = int(re.search(r"constexpr int kBK = (\d+);", source)[1])
    stages = int(re.search(r"constexpr int kStages = (\d+);", source)[1])
    assert (bk, stages) == (gemm_route._GEMMTC_BK, gemm_route._GEMMTC_STAGES)


def test_gemmtc_takes_any_d_and_n_up_to_the_scores_limit():
    for shape in (Shape(1, 1, 1), Shape(2, 17, 1), Shape(1, 8193, 8193), Shape(1, 16, 16384), Shape(1, 65536, 7)):
        assert GEMMTC.refusal(shape) is None, shape
    assert "N <= 65536" in GEMMTC.refusal(Shape(1, 65537, 64)).sentence()
    assert "sm_80+" in GEMMTC.constraints.describe()


# ---- wgmma3x: the short-sequence path (wgmma3x_short), the streaming path and the pre-pass path -----

WGMMA3X = get_variant("wgmma3x")
SHORT_SHAPES = [Shape(13600, 128, 32), Shape(37, 128, 32), Shape(3, 1, 32), Shape(11, 100, 32), Shape(9, 17, 32),
                Shape(8, 64, 32), Shape(1, 65, 32)]
# The streaming path up to N = 512 at d = 32, 256 at d = 64 and 1024 at d = 128 (wgmma3x._STREAM_MAX_N).
STREAMED_SHAPES = [Shape(2, 129, 32), Shape(6800, 256, 32), Shape(2, 257, 32), Shape(80, 512, 32), Shape(160, 128, 64),
                   Shape(3, 17, 64), Shape(2, 100, 128), Shape(1, 256, 128), Shape(1, 257, 128), Shape(3, 1024, 128)]
LONG_SHAPES = [Shape(2, 513, 32), Shape(4, 32768, 32), Shape(500, 2048, 64), Shape(3, 257, 64), Shape(40, 512, 64),
               Shape(8, 4096, 128), Shape(1, 1025, 128)]


@pytest.mark.parametrize("shape", SHORT_SHAPES, ids=str)
def test_wgmma3x_takes_the_short_path_for_d32_and_n_up_to_128(shape):
    (short,) = WGMMA3X.launches_for(shape)
    items = WGMMA3X.defines(shape)["WGMMA3X_SHORT_ITEMS"]
    assert short.kernel == "wgmma3x_short" and items == 8
    assert short.grid(shape) == (cdiv(shape.B, items), 1, 1) and short.block(shape) == (384, 1, 1)
    assert short.args == ("qkv", "out", "B", "N", "scale_log2")
    assert short.smem(shape) == 230_464 <= 227 * 1024  # one block per SM on Hopper
    assert WGMMA3X.workspace_bytes(shape) == 0


@pytest.mark.parametrize("shape", STREAMED_SHAPES, ids=str)
def test_wgmma3x_streams_raw_tiles_up_to_its_reach_past_the_short_path(shape):
    (stream,) = WGMMA3X.launches_for(shape)
    assert stream.kernel == "wgmma3x_stream" and WGMMA3X.workspace["kv_split"](shape) == 0
    assert WGMMA3X.workspace["prep_counters"](shape) == 0
    assert stream.smem(shape) == (181_504 if shape.d == 32 else 230_528) <= 227 * 1024


@pytest.mark.parametrize("shape", LONG_SHAPES, ids=str)
def test_wgmma3x_takes_the_pre_split_path_elsewhere(shape):
    """wgmma3x_prep splits the first items, wgmma3x_fwd's producer the rest, both into kv_split, counted in
    prep_counters."""
    prep, fwd = WGMMA3X.launches_for(shape)
    assert prep.kernel == "wgmma3x_prep" and prep.args == ("qkv", "kv_split", "prep_counters", "N")
    assert fwd.kernel == "wgmma3x_fwd" and fwd.args[5:7] == ("kv_split", "prep_counters")
    assert fwd.smem(shape) == (181_504 if shape.d == 32 else 230_528) <= 227 * 1024
    assert WGMMA3X.workspace["kv_split"](shape) == 16 * shape.B * cdiv(shape.N, 64 if shape.d <= 64 else 32) * (
        64 if shape.d <= 64 else 32) * shape.d
    groups = cdiv(cdiv(shape.N, 64 if shape.d <= 64 else 32), 8)  # the kernel's kReadyTiles
    assert WGMMA3X.workspace["prep_counters"](shape) == 4 * (3 + shape.B * groups)


@pytest.mark.parametrize("sms", [78, 114, 132])
@pytest.mark.parametrize("shape", [Shape(500, 2048, 64), Shape(10, 2048, 64), Shape(2, 32768, 64), Shape(1700, 1024, 32),
                                   Shape(8, 4096, 128), Shape(1, 600, 32)], ids=str)
def test_wgmma3x_pre_pass_kernel_splits_the_items_of_the_first_two_rounds(shape, sms):
    """wgmma3x_prep's items (its grid's y) hold every unit that the main kernel's blocks start in their first
    two rounds (units are item-major), and no more than one item past them."""
    prep, fwd = WGMMA3X.launches_for(shape)
    tiles, items, _ = prep.grid_for(shape, sms)
    blocks, row_blocks = fwd.grid_for(shape, sms)[0], cdiv(shape.N, 128)
    first_units = min(2 * blocks, shape.B * row_blocks)
    assert tiles == cdiv(shape.N, 64 if shape.d <= 64 else 32)
    assert 1 <= items <= shape.B and (first_units - 1) // row_blocks < items <= (first_units - 1) // row_blocks + 1
    if shape in (Shape(500, 2048, 64), Shape(1700, 1024, 32)):
        assert items < shape.B / 10  # the main kernel splits most items


def test_wgmma3x_path_does_not_depend_on_the_batch():
    """The runner plans every chunk of a batch with the same launches and compiles once per testcase."""
    for n in (1, 17, 128, 129, 4096):
        paths = {tuple(launch.kernel for launch in WGMMA3X.launches_for(Shape(b, n, 32))) for b in (1, 7, 8, 9, 13600, 65535)}
        defines = {tuple(WGMMA3X.defines(Shape(b, n, 32)).items()) for b in (1, 7, 8, 9, 13600, 65535)}
        assert len(paths) == 1 and len(defines) == 1


def test_wgmma3x_short_host_constants_match_the_kernel():
    source = (kernel_dir() / WGMMA3X.source).read_text()
    assert int(re.search(r"#define WGMMA3X_SHORT_ITEMS (\d+)", source)[1]) == wgmma3x._WGMMA3X_SHORT_ITEMS
    assert int(re.search(r"constexpr int kShortRawStages = (\d+);", source)[1]) == 2
    short = next(launch for launch in WGMMA3X.launches if launch.kernel == "wgmma3x_short")
    shape = Shape(13600, 128, 32)
    assert f"{short.smem(shape):,} B" in source  # the kernel's figure for kShortSmemBytes, as the host computes it
    threads = sum(int(re.search(rf"constexpr int kShort{part} = (\d+);", source)[1]) for part in ("Consumers", "Producers"))
    assert short.block(shape) == (threads, 1, 1) == (384, 1, 1)
