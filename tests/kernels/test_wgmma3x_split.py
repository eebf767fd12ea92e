"""wgmma3x's main grid, chosen on the host: the key split (grid z; cuda/wgmma3x.cu combines the parts),
which shapes get one and the workspaces it needs, and the persistent blocks (grid x) that deal out the
units. The GPU side is in tests/backends/test_gpu_variants.py."""

import re

import pytest

from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import get_variant
from attnbench.kernels.nvcc import shared_headers
from attnbench.kernels import wgmma3x
from attnbench.kernels.variant import cdiv
from attnbench.locations import kernel_dir

WGMMA3X = get_variant("wgmma3x")


def fwd(shape: Shape):
    """The main kernel of the shape's path: wgmma3x_fwd after the pre-pass, or wgmma3x_stream."""
    return next(launch for launch in WGMMA3X.launches_for(shape) if launch.kernel in ("wgmma3x_fwd", "wgmma3x_stream"))


# Split fastest on persistent blocks (tools/lab/key_split_sweep.py on an H100, 2026-11-26): t10 in 3 parts, (6, 4096, 64)
# and (24, 1024, 128) in 2, (5, 4096, 32) in 4.
@pytest.mark.parametrize("shape", [Shape(10, 2048, 64), Shape(6, 4096, 64), Shape(24, 1024, 128),
                                   Shape(5, 4096, 32), Shape(1, 4096, 128)], ids=str)
def test_few_items_split_their_keys_so_the_blocks_fill_more_of_their_waves(shape):
    """t10's 160 blocks of 128 rows fill 61% of two waves on 132 SMs; split, the last wave is fuller."""
    splits = fwd(shape).grid(shape)[2]
    blocks = fwd(shape).grid(shape)[0]  # one block per (item, row block) in a split pass
    assert splits > 1 and blocks == shape.B * cdiv(shape.N, 128)
    filled = blocks * splits / (cdiv(blocks * splits, 132) * 132)
    assert filled > blocks / (cdiv(blocks, 132) * 132)


# t09, (24, 768, 32) and (50, 384, 128) ran 4.8-7.9% faster unsplit than in the 2 parts the first cost model gave
# them, which did not know that an unsplit pass's persistent blocks pay their set-up once (the same sweep).
@pytest.mark.parametrize("shape", [Shape(500, 2048, 64), Shape(2, 32768, 64), Shape(4, 32768, 32), Shape(8, 4096, 128),
                                   Shape(6800, 256, 32), Shape(80, 512, 32), Shape(40, 512, 64), Shape(40, 1024, 32),
                                   Shape(20, 2048, 32), Shape(24, 768, 32), Shape(50, 384, 128),
                                   Shape(1, 64, 64), Shape(3, 17, 64)], ids=str)
def test_full_grids_and_single_tiles_are_not_split(shape):
    assert fwd(shape).grid(shape)[2] == 1


@pytest.mark.parametrize("shape", [Shape(1, 64, 64), Shape(3, 17, 64), Shape(1000, 32, 128)], ids=str)
def test_single_tiles_need_no_partials_at_any_count(shape):
    assert WGMMA3X.workspace["split_partials"](shape) == 0


def test_more_than_four_waves_of_blocks_are_never_split():
    """t22 in launches of 34 items or more: 544 row blocks; in launches of 5 items: 80 row blocks, in 3 parts."""
    assert fwd(Shape(34, 2048, 64)).grid(Shape(34, 2048, 64))[2] == 1
    assert fwd(Shape(5, 2048, 64)).grid(Shape(5, 2048, 64))[2] == 3


@pytest.mark.parametrize("shape", [Shape(b, n, d) for b in (1, 3, 10, 500) for n in (1, 65, 129, 1000, 2048, 4097)
                                   for d in (32, 64, 128) if not (d == 32 and n <= 128)], ids=str)
def test_every_split_has_a_key_tile_and_a_record_and_every_row_block_a_counter(shape):
    splits = fwd(shape).grid(shape)[2]
    tiles = cdiv(shape.N, 64 if shape.d <= 64 else 32)
    consumer_threads = fwd(shape).block(shape)[0] - 128
    row_blocks = cdiv(shape.N, consumer_threads // 2)  # 64 query rows per consumer warpgroup
    assert 1 <= splits <= min(4, tiles)
    if splits > 1:  # one block per unit: the record index is the unit's
        assert fwd(shape).grid(shape)[0] == shape.B * row_blocks
    record = 4 * (shape.d // 2 + 4) * consumer_threads  # the kernel's kRecordValues floats per consumer thread
    assert WGMMA3X.workspace["split_partials"](shape) >= (record * shape.B * row_blocks * splits if splits > 1 else 0)
    assert WGMMA3X.workspace["split_partials"](shape) % record == 0
    assert WGMMA3X.workspace["split_counters"](shape) == 4 * shape.B * row_blocks


def test_the_record_layout_matches_the_kernel():
    # the kernel's source with the headers it includes (the key split is in wgmma_split.cuh)
    source = "\n".join(p.read_text() for p in [kernel_dir() / WGMMA3X.source, *shared_headers(WGMMA3X)])
    assert "constexpr int kRecordValues = kHeadDim / 2 + 4;" in source
    assert "const int splits = key_parts(N);" in source
    for kernel in ("wgmma3x_fwd", "wgmma3x_stream"):
        launch = next(launch for launch in WGMMA3X.launches if launch.kernel == kernel)
        assert launch.args[-2:] == ("split_partials", "split_counters")
        assert re.search(kernel + r"\([^)]*float\* __restrict__ split_partials, float\* __restrict__ split_counters\)",
                         source)
    # the counters are zeroed once (the runner) and set back by the last part, not by the pre-pass
    assert "reinterpret_cast<unsigned*>(counters)[rows] = 0u;" in source


def test_the_short_path_has_no_split_workspace():
    shape = Shape(13600, 128, 32)
    assert wgmma3x._wgmma3x_splits(shape) == 1
    assert WGMMA3X.workspace_bytes(shape) == 0


def units(shape: Shape) -> int:
    return shape.B * cdiv(shape.N, 128)


@pytest.mark.parametrize("shape", [Shape(6800, 128, 64), Shape(160, 128, 64), Shape(3400, 256, 64), Shape(6800, 256, 32),
                                   Shape(500, 2048, 64), Shape(4, 32768, 32), Shape(133, 100, 64), Shape(1, 1, 64),
                                   Shape(8, 4096, 128), Shape(1000, 32, 128), Shape(3, 17, 128)], ids=str)
def test_unsplit_passes_deal_their_units_evenly_to_at_most_one_block_per_sm(shape):
    """t12's 6,800 units run on 132 persistent blocks, 51 or 52 each; t02's 160 on 80 blocks of 2 (not 132
    blocks, 28 of them with a second unit: the same two rounds, on fewer SMs)."""
    x, _, z = fwd(shape).grid(shape)
    assert z == 1 and 1 <= x <= min(132, units(shape))
    assert cdiv(units(shape), x) == cdiv(units(shape), 132)  # no more rounds than one block per SM needs


@pytest.mark.parametrize("shape", [Shape(10, 2048, 64), Shape(2, 256, 64), Shape(1, 4096, 128), Shape(2, 600, 128)], ids=str)
def test_split_passes_take_one_block_per_unit(shape):
    """A split pass runs one unit per block (its parts combine through a record per unit)."""
    assert fwd(shape).grid(shape)[2] > 1 and fwd(shape).grid(shape)[0] == units(shape)


def test_the_persistent_rule_matches_the_kernel():
    """The host deals units to persistent blocks of two consumer warpgroups (128 rows) at every d."""
    source = (kernel_dir() / WGMMA3X.source).read_text()
    assert "constexpr int kWarpgroups = 2;" in source
    assert "for (int u = blockIdx.x; u < units; u += gridDim.x, g += n_tiles)" in source  # the streaming producer
    assert "kPersistent" not in source  # (once a rule that ran one unit a block at d = 128)


@pytest.mark.parametrize("sms", [114, 132, 78])
@pytest.mark.parametrize("shape", [Shape(6800, 128, 64), Shape(500, 2048, 64), Shape(125, 128, 64), Shape(160, 128, 64)],
                         ids=str)
def test_the_runner_deals_the_units_over_the_gpus_own_sms(shape, sms):
    """On a 114-SM H100 PCIe, t12's grid for 132 SMs (131 blocks of 52 units) would leave 17 SMs two blocks
    to run in turn: twice the units of the others. Dealt over 114, every block runs on an SM of its own."""
    x, _, z = fwd(shape).grid_for(shape, sms)
    assert z == 1 and x <= sms and cdiv(units(shape), x) == cdiv(units(shape), sms)
    assert fwd(shape).grid_for(shape, 132) == fwd(shape).grid(shape)
