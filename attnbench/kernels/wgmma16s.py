"""wgmma16s's host-side facts: Hopper wgmma at the course's accuracy, Q K^T in split FP16 (3 products) and
P V in one FP16 product (cuda/wgmma16s.cu): a pre-pass that converts K and V once per pass, then the main
kernel; up to N = 512 at d <= 64, the main kernel alone, converting K and V in shared memory. Its grid follows wgmma3x's model (persistent blocks, the key split where the last wave is poor).
Registered in ladder order by `flash_route`, right after wgmma3x."""

from __future__ import annotations

from attnbench.cases.testcase import Shape
from attnbench.kernels.exp2_poly import DEGREE, REL_ERROR_BOUND, exp2_poly_defines
from attnbench.kernels.variant import Constraints, Flavour, Launch, Variant, cdiv, threads
from attnbench.kernels.wgmma3x import _HOPPER_SMS, _splits_for

_TILE_KEYS = 64  # keys per K/V tile (the kernel's kTileKeys)
_WARPGROUP_ROWS = 64  # query rows of a consumer warpgroup

# Head dimensions whose pre-pass path runs three consumer warpgroups (192 query rows a block) instead of two: at
# d = 32 a warpgroup's softmax (4096 MUFU.EX2 of a 64 x 64 tile) takes as long as its products, so two no longer
# hide each other's softmax (the kernel's WGMMA16S_WARPGROUPS).
_THREE_WARPGROUP_HEAD_DIMS = (32, 64)  # d = 64 measured too: 0-28% faster (t10 the most, a fuller last wave)


def _stages(s: Shape) -> int:
    return 3 if s.d == 128 else 4


# The streaming path (no pre-pass: the producer warpgroup converts raw K/V tiles in shared memory) up to this
# N, for d <= 64: there each tile serves one to four row blocks, and the pre-pass's launch and its extra pass
# over K and V cost more than converting again. On an H100 on 2026-11-27 (kernel time, 15 samples, L2
# flushed, against the pre-pass on the same inputs): 1.7x faster on t11 (13600, 128, 32) and t12, 1.45-1.5x
# on t13 and t14 (N = 256), 1.04-1.14x at N = 512 (t15, t16, (80, 512, 32), (40, 512, 64)); at N = 1024
# 1-16% slower (t17, t18, (40, 1024, 32)): one staging tile each for K and V, the producer waits on each copy.
_STREAM_MAX_N = 512


# The streaming path's settings by head dimension (the kernel's WGMMA16S_RAW_STAGES), measured on an H200 on
# 2026-11-30 against the two-buffer path over t01, t02, t11-t16: raw K and V tiles staged ahead of their
# conversion, 4 at d = 32 (two units of N = 128 in flight per SM), 2 at d = 64, where 4 take 225 KB of shared
# memory, leave L1 little, and every d = 64 case measured slower (t12 7-10%). Each consumer thread loads the
# next unit's Q into registers during this one (WGMMA16S_Q_AHEAD: t11 17-20% faster, t01 11%); the consumer
# warpgroups' turns on the tensor cores stay (without them: within 2% either way).
_RAW_STAGES = {32: 4, 64: 2}


def _raw_stages(s: Shape) -> int:
    return _RAW_STAGES.get(s.d, 2)


def _streamed(s: Shape) -> bool:
    return s.d <= 64 and s.N <= _STREAM_MAX_N


def _warpgroups(s: Shape) -> int:
    """Consumer warpgroups of the main kernel: three where the head dimension calls for them, on the pre-pass
    path (the streaming path's producers need the registers a third warpgroup would take)."""
    return 3 if s.d in _THREE_WARPGROUP_HEAD_DIMS and not _streamed(s) else 2


def _consumer_threads(s: Shape) -> int:
    return 128 * _warpgroups(s)


def _tile_bytes(s: Shape) -> int:
    """One converted K/V tile: [K hi | K lo] (64 x 2d FP16) and V^T (d x 64 FP16)."""
    return _TILE_KEYS * 2 * s.d * 2 + s.d * _TILE_KEYS * 2


def _smem(s: Shape) -> int:
    """Bytes of dynamic shared memory of wgmma16s_fwd: the K/V rings (Q is in registers), on the streaming
    path _raw_stages raw FP32 staging tiles of K and V with an mbarrier each, 4 mbarriers a stage, 1024 B of
    slack for the swizzle atoms' alignment: 50,304 B at d = 32 and 99,456 B at d = 64 (115,872 and 164,960 B
    streaming), 148,576 B at d = 128."""
    raw = _raw_stages(s) * (2 * _TILE_KEYS * s.d * 4 + 8) if _streamed(s) else 0
    return _stages(s) * _tile_bytes(s) + raw + _stages(s) * 32 + 1024


def _row_tiles(s: Shape) -> int:
    return cdiv(s.N, _WARPGROUP_ROWS * _warpgroups(s))


# Passes of up to six waves of units are considered for the key split (wgmma3x's model stops at four): t29's 684
# units of 192 rows fill six rounds of 132 SMs with 5.2 rounds' work, and in the 4 parts the model picks it ran
# 10% faster on an H200 (2026-11-30: 2.42 -> 2.20 ms; 2 parts 2.25, 3 parts 2.23), while t27's 860 units (6.5
# waves) lost 3% in 2 parts.
_MAX_SPLIT_UNITS = 6 * _HOPPER_SMS


def _splits(s: Shape) -> int:
    """Parts the key range of each row block is split into (grid z), by wgmma3x's cost model."""
    return _splits_for(_row_tiles(s) * s.B, cdiv(s.N, _TILE_KEYS), _MAX_SPLIT_UNITS)


def _blocks(s: Shape, sms: int = _HOPPER_SMS) -> int:
    """Persistent blocks (one per SM, the units dealt evenly) unless the pass is split (a block per unit)."""
    units = s.B * _row_tiles(s)
    if _splits(s) > 1:
        return units
    return cdiv(units, cdiv(units, sms))


def _main_grid(s: Shape, sms: int = _HOPPER_SMS) -> tuple[int, int, int]:
    return (_blocks(s, sms), 1, _splits(s))


def _prep_grid(s: Shape) -> tuple[int, int, int]:
    return (cdiv(s.N, _TILE_KEYS), min(s.B, 65535), 1)


def _split_records(s: Shape) -> int:
    """The most records (row blocks x parts) of any launch of at most s.B items (the runner's chunks may
    split where the whole batch does not; see wgmma3x's _wgmma3x_split_records)."""
    row_tiles = _row_tiles(s)

    def records(items: int) -> int:
        splits = _splits(Shape(items, s.N, s.d))
        return items * row_tiles * splits if splits > 1 else 0

    return max(records(items) for items in (*range(1, min(s.B, _MAX_SPLIT_UNITS // row_tiles) + 1), s.B))


def _poly_exp2(eighths: int) -> Flavour:
    """The build whose softmax takes `eighths` eighths of its weights from exp2_poly on the FMA pipes (the rest
    and the rescale factors from MUFU.EX2): FlashAttention-4's relief of the exponential unit, which sets the
    pace at d = 32. The polynomial's relative error (below REL_ERROR_BOUND, a third of rounding P to FP16)
    keeps the variant's accuracy claim."""
    return Flavour(f"{eighths}/8 of the softmax's exponentials by a degree-{DEGREE} polynomial on the FMA pipes "
                   f"(relative error below {REL_ERROR_BOUND:.3g}), the rest on MUFU",
                   defines={"WGMMA16S_POLY_EIGHTHS": eighths, **exp2_poly_defines()}, weights_error=REL_ERROR_BOUND)


# `wgmma16s:poly25` and its neighbours, so one compare measures several splits: by a count of instructions (not
# measured), MUFU's 8 issue clocks a warp's exponential and the polynomial's 9 instructions balance near a fifth
# at d = 32
POLY_FLAVOURS = {"poly12": _poly_exp2(1), "poly25": _poly_exp2(2), "poly38": _poly_exp2(3), "poly50": _poly_exp2(4)}


WGMMA16S = Variant(
    name="wgmma16s",
    report="beyond wgmma3x (split FP16 on Hopper wgmma, the course's accuracy)",
    technique="Hopper wgmma at the course's accuracy: Q K^T in split FP16 (Q and K as hi + lo, hi*hi + hi*lo + "
    "lo*hi, FP32 accumulation; Q's fragments in registers), P V in one FP16 product, softmax in FP32; K and V "
    "converted once per pass by a pre-pass into the swizzled operand layout (N > 512 or d = 128; shorter: "
    "converted in shared memory by the producer warpgroup from raw bulk-copied tiles), "
    "cp.async.bulk + mbarrier ring, "
    "2 consumer warpgroups (3 where K and V are converted by the pre-pass at d <= 64) taking turns on the tensor "
    "cores with the softmax overlapped with P V, persistent blocks, the key "
    "range split where the last wave is poor",
    source="wgmma16s.cu",
    launches=(
        Launch(
            kernel="wgmma16s_prep",
            grid=_prep_grid,
            block=threads(256),
            args=("qkv", "kv16", "B", "N"),
            applies=lambda s: not _streamed(s),
        ),
        Launch(
            kernel="wgmma16s_fwd",
            grid=_main_grid,
            grid_on_sms=_main_grid,
            block=lambda s: (_consumer_threads(s) + 128, 1, 1),  # + the producer warpgroup
            args=("qkv", "out", "B", "N", "scale_log2", "kv16", "split_partials", "split_counters"),
            smem=_smem,
        ),
    ),
    constraints=Constraints(
        head_dims=(32, 64, 128),
        note="sm_90a only (Hopper wgmma); split FP16 for Q K^T and FP16 P V: within the course rule "
        "with margin, not float32-accurate; |V| and |Q| log2(e)/sqrt(d) and |K| up to FP16's 65504",
    ),
    defines=lambda s: {"HEAD_DIM": s.d, "WGMMA16S_STREAM": int(_streamed(s)), "WGMMA16S_WARPGROUPS": _warpgroups(s),
                       "WGMMA16S_RAW_STAGES": _raw_stages(s), "WGMMA16S_Q_AHEAD": int(_streamed(s)),
                       "WGMMA16S_STAGES": _stages(s)},
    workspace={
        "kv16": lambda s: 0 if _streamed(s) else s.B * cdiv(s.N, _TILE_KEYS) * _tile_bytes(s),
        "split_partials": lambda s: 4 * _split_records(s) * (s.d // 2 + 4) * _consumer_threads(s),
        "split_counters": lambda s: 4 * s.B * _row_tiles(s),
    },
    unit="wgmma16s",
    accuracy="course",
    arch="sm_90a",
    flavours=POLY_FLAVOURS,
)
