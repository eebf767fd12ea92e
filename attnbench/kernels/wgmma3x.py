"""wgmma3x's host-side facts: Hopper wgmma in 3xTF32, with a pre-split path (a pre-pass kernel for the first
items, the main kernel's producer warpgroup for the rest), a streaming path and a short-sequence path
(cuda/wgmma3x.cu). Registered in ladder order by `flash_route`, right after tf32x3."""

from __future__ import annotations

from typing import Callable

from attnbench.cases.testcase import Shape
from attnbench.kernels.variant import Constraints, Launch, Variant, cdiv, threads


def _wgmma3x_tile_keys(s: Shape) -> int:
    """Keys per K/V tile: 64, or 32 at d = 128."""
    return 64 if s.d <= 64 else 32


def _wgmma3x_warpgroups(s: Shape) -> int:
    """Consumer warpgroups (64 query rows each) per block."""
    return 2


def _wgmma3x_q_halves(s: Shape) -> int:
    """Halves of Q (big, small) each consumer warpgroup keeps in shared memory: both, or at d = 128 only the
    small one (Q big is in registers: two warpgroups' Q big and small would leave no room for the rings)."""
    return 1 if s.d == 128 else 2


def _wgmma3x_smem(s: Shape) -> int:
    """Bytes of dynamic shared memory of wgmma3x_fwd and wgmma3x_stream: K and V rings (big + small
    halves; 4 stages at d = 32, else 2), Q big/small per consumer warpgroup (small only at d = 128), 4
    mbarriers per stage and 3 more, then one raw K and one raw V tile at the next 128-byte boundary, and
    1024 B of slack for the 1024-byte swizzle alignment. 181,504 B at d = 32, 230,528 B at d = 64 and
    d = 128."""
    stages = 4 if s.d == 32 else 2
    stage_bytes = 16 * _wgmma3x_tile_keys(s) * s.d  # K big, K small, V^T big, V^T small
    q_bytes = _wgmma3x_warpgroups(s) * _wgmma3x_q_halves(s) * 64 * s.d * 4
    raw_offset = cdiv(stages * stage_bytes + q_bytes + stages * 32 + 24, 128) * 128
    return raw_offset + 2 * 4 * _wgmma3x_tile_keys(s) * s.d + 1024


def _wgmma3x_short(s: Shape) -> bool:
    """The short-sequence path (wgmma3x_short: whole items per block, no pre-pass) for d = 32 and
    N <= 128."""
    return s.d == 32 and s.N <= 128


# The streaming path (wgmma3x_stream: its producer warpgroup splits raw K/V tiles, no pre-pass) up to this
# N for each head dimension; the pre-pass and wgmma3x_fwd beyond. Measured on an H200 on 2026-11-25 (an
# A/B of the two paths over the course cases): up to N = 256 streaming is 1-43% faster than the pre-pass (t12
# 43%, t02 30%, t14 24%): the pre-pass's launch and its extra pass over K and V cost more than the products
# there; from N = 1024 on 16-71% slower (one staging tile each for K and V: the producer waits on each
# copy). At N = 512, after the producer's split got cheaper (split_raw_rows_k/vt), on an H100 on
# 2026-11-26: d = 32 streams 7.4% faster at (80, 512, 32) and 2.2% at
# t15; d = 64 is 1.0% slower at t06 and 1.7% faster at t16, so it stays at 256. At d = 128, with two consumer
# warpgroups whose S reads Q big from registers, on an H100 on 2026-11-26:
# streaming is 20% faster at (16, 512, 128), 15% at (2, 600, 128), 11% at (3, 1000, 128), 3% at (16, 1024, 128);
# 11% slower at (100, 2048, 128) and 10-18% at N = 4096 and 8192.
_STREAM_MAX_N = {32: 512, 64: 256, 128: 1024}


def _wgmma3x_streamed(s: Shape) -> bool:
    return not _wgmma3x_short(s) and s.N <= _STREAM_MAX_N.get(s.d, 256)


def _wgmma3x_prepass(s: Shape) -> bool:
    return not _wgmma3x_short(s) and not _wgmma3x_streamed(s)


# Batch items per wgmma3x_short block (its define WGMMA3X_SHORT_ITEMS): t11's 13,600 items make 1,700
# blocks, about 13 waves of one block per SM, each block paying the latency of its first item's copy once.
_WGMMA3X_SHORT_ITEMS = 8


def _wgmma3x_short_smem(s: Shape) -> int:
    """Bytes of dynamic shared memory of wgmma3x_short: two operand buffers of two 64-key tiles (K big,
    K small, V^T big, V^T small: 64 KB each), two raw staging buffers of one item's Q, K and V at N = 128
    (48 KB each), 8 mbarriers (full, opfull, opempty, qtaken, two each), 1024 B of slack for the 1024-byte
    swizzle alignment: 230,464 B, one block per SM."""
    return 2 * 16 * 128 * s.d + 2 * 3 * 128 * s.d * 4 + 8 * 8 + 1024


def _wgmma3x_split_bytes(s: Shape) -> int:
    """Workspace kv_split: every K/V tile of every item as [K big | K small | V^T big | V^T small]; none on
    the short and streaming paths, which split in shared memory."""
    if not _wgmma3x_prepass(s):
        return 0
    bn = _wgmma3x_tile_keys(s)
    return 4 * 4 * s.B * cdiv(s.N, bn) * bn * s.d


# Tiles of an item counted together as split (the kernel's kReadyTiles): a block starts on an item's first
# tiles while its later ones are being split.
_READY_TILES = 8


def _wgmma3x_prep_counters_bytes(s: Shape) -> int:
    """Workspace prep_counters of the pre-pass: jobs handed out, blocks finished, the items wgmma3x_prep
    split, and one count of split tiles per group of _READY_TILES tiles of each item. Zero
    before the first pass (the host zeroes every workspace when it allocates it); wgmma3x_prep writes its
    word each pass and the last block of wgmma3x_fwd sets the counts back to zero."""
    groups = cdiv(cdiv(s.N, _wgmma3x_tile_keys(s)), _READY_TILES)
    return 4 * (3 + s.B * groups) if _wgmma3x_prepass(s) else 0


def _wgmma3x_row_tiles(s: Shape) -> int:
    """Query-row blocks of one item: 64 rows per consumer warpgroup."""
    return cdiv(s.N, 64 * _wgmma3x_warpgroups(s))


# The key split is chosen for the SM count of the Hopper GPUs wgmma3x is built for (H100 SXM and H200:
# 132; a 114-SM H100 PCIe gets the same split, still correct, only less even). The cost model: a pass
# takes rounds x (K/V tiles a round + the fixed cost of a round in tiles). A split pass runs one block per
# (unit, part), and each pays a block's set-up, Q's load and split, the ring's fill, the record and the
# combine: 5 tiles, fitted to the split sweep on an H200 on 2026-11-25 (every
# cost from 4 to 8 agreed, 5 splits t10 in 3). An unsplit pass runs persistent blocks whose ring runs on from
# unit to unit: the block's set-up (the 3 tiles left of 5) once, then 2 tiles a unit for Q's load and split and
# its rows' write. From the sweeps on persistent blocks (an H100, 2026-11-26): over 27
# cases this picks the fastest count, or on t08 one within 0.3% of it (the first model lost 3.4-7.9% on 7 of
# them by splitting in 2, t09 among them); 0.5 to 2 tiles a unit do as well, 2.5 and up split t09 again.
_HOPPER_SMS = 132
_SPLIT_BLOCK_COST_TILES = 5.0
_PERSISTENT_UNIT_COST_TILES = 2.0
_MAX_KEY_SPLITS = 4  # 6 and 8 parts were 19-23% slower than 4 on t10 (an H200, 2026-11-25)
# A pass of more than four waves is not split: its last wave is a small share of it. The cap also bounds
# the split workspace of the smaller launches a pass may be cut into (see _wgmma3x_split_records).
_MAX_SPLIT_BLOCKS = 4 * _HOPPER_SMS


def _splits_for(blocks: int, tiles: int, max_blocks: int = _MAX_SPLIT_BLOCKS) -> int:
    if blocks > max_blocks:
        return 1

    def cost(splits: int) -> float:
        rounds = cdiv(blocks * splits, _HOPPER_SMS)
        if splits == 1:  # the block's own set-up once, then each unit's share
            setup = _SPLIT_BLOCK_COST_TILES - _PERSISTENT_UNIT_COST_TILES
            return setup + rounds * (tiles + _PERSISTENT_UNIT_COST_TILES)
        return rounds * (tiles / splits + _SPLIT_BLOCK_COST_TILES)

    return min(range(1, min(_MAX_KEY_SPLITS, tiles) + 1), key=lambda k: (cost(k), k))


def _wgmma3x_splits(s: Shape) -> int:
    """Parts the key range of each row block is split into (the fwd grid's z): more than 1 where the
    blocks fill the GPU's last wave badly (t10: 160 blocks on 132 SMs use 61% of two waves)."""
    if _wgmma3x_short(s):
        return 1
    return _splits_for(_wgmma3x_row_tiles(s) * s.B, cdiv(s.N, _wgmma3x_tile_keys(s)))


def _wgmma3x_split_records(s: Shape) -> int:
    """The most records (row blocks x parts) of any launch of at most s.B items. The runner cuts a batch
    into launches of fewer items (its pipeline's chunks, the last launch of a batch), and fewer items may
    split where the whole batch does not (t22's chunks of 5 items split in 3), so a workspace sized for
    s.B items must hold every one of them. (It asks `_wgmma3x_splits` itself, which a sweep may force.)"""
    if _wgmma3x_short(s):
        return 0
    row_tiles = _wgmma3x_row_tiles(s)

    def records(items: int) -> int:
        splits = _wgmma3x_splits(Shape(items, s.N, s.d))
        return items * row_tiles * splits if splits > 1 else 0

    # more items than the cap's never split on their own; the batch itself is counted in case it is forced
    return max(records(items) for items in (*range(1, min(s.B, _MAX_SPLIT_BLOCKS // row_tiles) + 1), s.B))


def _wgmma3x_units(s: Shape) -> int:
    """The main kernel's units of work: (item, row block) pairs."""
    return s.B * _wgmma3x_row_tiles(s)


def _wgmma3x_blocks(s: Shape, sms: int = _HOPPER_SMS) -> int:
    """The main kernel's grid x on a GPU of `sms` SMs. Its blocks loop over units (see cuda/wgmma3x.cu), so
    an unsplit pass runs one persistent block per SM with the units dealt out evenly: a block's set-up and
    its first copy's latency are paid once, and its producer fills the ring with the next unit's tiles
    while the consumers finish the current one. A split pass takes one block per unit."""
    units = _wgmma3x_units(s)
    if _wgmma3x_splits(s) > 1:
        return units
    return cdiv(units, cdiv(units, sms))


def _wgmma3x_main_grid(s: Shape, sms: int = _HOPPER_SMS) -> tuple[int, int, int]:
    return (_wgmma3x_blocks(s, sms), 1, _wgmma3x_splits(s))


# Rounds of the main kernel's blocks whose items wgmma3x_prep splits before it; the main kernel's producer
# warps split the rest while the products run. At the start every block waits for its first tiles, and the
# workers (one job in flight a block, about 7-10 us each on the H100) would hold them up; by the end of
# the second round they are ahead. With few items (t06, t10, t29, t30) that covers every item, which is
# the old separate pre-pass: the in-kernel workers lost 2-3% there when they did it all.
_PREP_ROUNDS = 2


def _wgmma3x_prepped_items(s: Shape, sms: int = _HOPPER_SMS) -> int:
    """Items split by wgmma3x_prep (its grid's y): those of the main kernel's first _PREP_ROUNDS rounds of
    units, at least one."""
    return max(1, min(s.B, cdiv(_PREP_ROUNDS * _wgmma3x_blocks(s, sms), _wgmma3x_row_tiles(s))))


def _wgmma3x_prep_grid(s: Shape, sms: int = _HOPPER_SMS) -> tuple[int, int, int]:
    return (cdiv(s.N, _wgmma3x_tile_keys(s)), _wgmma3x_prepped_items(s, sms), 1)


def _wgmma3x_main_launch(kernel: str, tiles: tuple[str, ...], applies: Callable[[Shape], bool]) -> Launch:
    """wgmma3x_fwd or wgmma3x_stream: the same grid (persistent blocks, key parts), block, shared memory and
    arguments, but for `tiles` (the pre-pass's workspaces, for wgmma3x_fwd)."""
    return Launch(
        kernel=kernel,
        grid=_wgmma3x_main_grid,
        grid_on_sms=_wgmma3x_main_grid,
        block=lambda s: (128 * (_wgmma3x_warpgroups(s) + 1), 1, 1),
        args=("qkv", "out", "B", "N", "scale_log2", *tiles, "split_partials", "split_counters"),
        smem=_wgmma3x_smem,
        applies=applies,
    )


def _wgmma3x_partials_bytes(s: Shape) -> int:
    """Workspace split_partials: one record (O, m and l of every consumer thread) per part of each split
    row block, for the largest split of any launch of at most s.B items; none where none splits."""
    consumer_threads = 128 * _wgmma3x_warpgroups(s)
    return 4 * _wgmma3x_split_records(s) * (s.d // 2 + 4) * consumer_threads


def _wgmma3x_counters_bytes(s: Shape) -> int:
    """Workspace split_counters: one counter per row block. It starts at zero (the host zeroes every
    workspace when it allocates it) and the last part of a split row block sets it back to zero."""
    return 0 if _wgmma3x_short(s) else 4 * s.B * _wgmma3x_row_tiles(s)


def _wgmma3x_defines(s: Shape) -> dict[str, int]:
    return {"HEAD_DIM": s.d, **({"WGMMA3X_SHORT_ITEMS": _WGMMA3X_SHORT_ITEMS} if s.d == 32 else {})}


WGMMA3X = Variant(
    name="wgmma3x",
    report="beyond 004 (3xTF32 on Hopper wgmma)",
    technique="Hopper wgmma in 3xTF32, FA3 style: K/V pre-split and swizzled into a workspace (N > 256; 512 at "
    "d = 32), the first items by a pre-pass kernel and the rest by three warps of each block's producer "
    "warpgroup beside the products, or split in shared memory by the producer warpgroup from raw bulk-copied "
    "tiles (shorter N), "
    "cp.async.bulk + mbarrier ring fed by a producer warpgroup, 2 consumer warpgroups ping-pong (at d = 128 "
    "free-running, Q big in registers and P V in two column halves), "
    "persistent blocks (one per SM) that run their ring on across (item, row block) units, "
    "softmax overlapped with P V (d <= 64); the key range split with a combine where the grid fills the last "
    "wave badly (few items); for d = 32, N <= 128 no pre-pass: 8 whole items per block, each item's "
    "Q K V bulk-copied two items ahead and split in shared memory by a producer warpgroup while the "
    "consumers compute the item before",
    source="wgmma3x.cu",
    launches=(
        Launch(
            kernel="wgmma3x_prep",
            grid=_wgmma3x_prep_grid,
            grid_on_sms=_wgmma3x_prep_grid,
            block=threads(256),
            args=("qkv", "kv_split", "prep_counters", "N"),
            applies=_wgmma3x_prepass,
        ),
        _wgmma3x_main_launch("wgmma3x_fwd", ("kv_split", "prep_counters"), _wgmma3x_prepass),
        _wgmma3x_main_launch("wgmma3x_stream", (), _wgmma3x_streamed),
        Launch(
            kernel="wgmma3x_short",
            grid=lambda s: (cdiv(s.B, _WGMMA3X_SHORT_ITEMS), 1, 1),
            block=threads(384),  # 2 consumer warpgroups and the producer warpgroup that splits K and V
            args=("qkv", "out", "B", "N", "scale_log2"),
            smem=_wgmma3x_short_smem,
            applies=_wgmma3x_short,
        ),
    ),
    constraints=Constraints(
        head_dims=(32, 64, 128),
        note="sm_90a only (Hopper wgmma); 3xTF32 on tensor cores",
    ),
    defines=_wgmma3x_defines,
    workspace={
        "kv_split": _wgmma3x_split_bytes,
        "prep_counters": _wgmma3x_prep_counters_bytes,
        "split_partials": _wgmma3x_partials_bytes,
        "split_counters": _wgmma3x_counters_bytes,
    },
    unit="wgmma3x",
    arch="sm_90a",  # wgmma: built for Hopper and run only there; other GPUs keep tf32x3
)
