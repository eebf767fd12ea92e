"""The built-in baselines and report 004's ladder (naive, then kernels to qreg), as Variant entries in
ladder order. Launch facts follow the ABI in `attnbench.kernels.variant`."""

from __future__ import annotations

from typing import Callable

from attnbench.cases.testcase import Shape
from attnbench.kernels.variant import (
    Constraints,
    Dims,
    Flavour,
    Launch,
    Variant,
    cdiv,
    f32_bytes,
    grid_rows,
    one_kernel_variant,
    threads,
)

VARIANTS: list[Variant] = []

VARIANTS.append(
    Variant(
        name="cpu",
        report="004 §2.2",
        technique="the course's blocked flash algorithm (br = bc = 32, online softmax) in numpy float32",
        backend="cpu",
        arithmetic_note="FP32 (numpy)",
    )
)


def _maxsmem_cols(d: int, rows: int = 128) -> int:
    """bc of 004 §4.2.3: the largest power of two whose tiles (Q br x d, K and V bc x d, S br x bc)
    fit the GTX 1080's 48 KB of shared memory, at least 1."""
    fit = (12288 - rows * d) // (2 * d + rows)
    cols = 1
    while cols * 2 <= fit:
        cols *= 2
    return cols


def _maxsmem_bytes(s: Shape) -> int:
    cols = _maxsmem_cols(s.d)
    return 4 * (128 * s.d + 2 * cols * s.d + 128 * cols)


# maxsmem and splitq: above d = 86 the 48 KB rule leaves bc < 4, and rescaling O after every 1- or
# 2-column tile loses float32 accuracy at large N (relL2 about 3e-5 at bc = 1, N = 32768).
_MAXSMEM_MAX_HEAD_DIM = 86

# The running max m and sum l of each query row, in global memory (until report 004 §4.2.8).
_ROW_STATS = {"row_max": f32_bytes(lambda s: s.B * s.N), "row_sum": f32_bytes(lambda s: s.B * s.N)}

# Variants that materialise S (N*N floats per batch item) stop where one item's S stops fitting.
SCORES_IN_MEMORY = Constraints(max_seq_len=65536, note="S materialised: N*N floats per item (16 GiB at N = 65536)")

VARIANTS.append(
    Variant(
        name="naive",
        report="000, 002 (baseline)",
        technique="four kernels (S = QK^T, scale, row softmax, O = PV), S materialised in global memory",
        source="naive.cu",
        launches=(
            # grid.y strides over the rows (it is limited to 65535); grid.z is the batch item
            Launch(
                kernel="naive_qk",
                grid=lambda s: (cdiv(s.N, 256), min(s.N, 65535), s.B),
                block=threads(256),
                args=("qkv", "scores", "N", "d"),
            ),
            Launch(
                kernel="naive_scale",
                grid=lambda s: (cdiv(s.N, 256), min(s.N, 65535), s.B),
                block=threads(256),
                args=("scores", "N", "scale"),
            ),
            Launch(
                kernel="naive_softmax",
                grid=lambda s: (s.N, s.B, 1),
                block=threads(256),
                args=("scores", "N"),
            ),
            Launch(
                kernel="naive_pv",
                grid=lambda s: (cdiv(s.N * s.d, 256), s.B, 1),
                block=threads(256),
                args=("qkv", "scores", "out", "N", "d"),
            ),
        ),
        constraints=SCORES_IN_MEMORY,
        workspace={"scores": f32_bytes(lambda s: s.B * s.N * s.N)},
    )
)

_KERNELS_ARGS = ("qkv", "out", "N", "d", "scale_log2", "step", "scores", "tile_max", "tile_sum", "row_max", "row_sum")

VARIANTS.append(
    Variant(
        name="kernels",
        report="004 §4.2.1",
        technique="the course's blocked algorithm (br = bc = 32) as five kernels, host loop over K/V tiles",
        source="kernels.cu",
        # Per K/V tile j (step = j): QKDotAndScalar, RowMax, MinusMaxAndExp, RowSum, UpdateMiLiOi,
        # each over all batch items and query rows: 5*ceil(N/32) launches a pass.
        launches=tuple(
            Launch(kernel=name, grid=grid_rows(32), block=threads(32, 32), args=_KERNELS_ARGS)
            for name in ("QKDotAndScalar", "RowMax", "MinusMaxAndExp", "RowSum", "UpdateMiLiOi")
        ),
        steps=lambda s: cdiv(s.N, 32),
        constraints=Constraints(note="5*ceil(N/32) launches a pass"),
        workspace={
            "scores": f32_bytes(lambda s: s.B * s.N * 32),  # S / P tile
            "tile_max": f32_bytes(lambda s: s.B * s.N),  # m_ij
            "tile_sum": f32_bytes(lambda s: s.B * s.N),  # l_ij
            "row_max": f32_bytes(lambda s: s.B * s.N),  # running m_i
            "row_sum": f32_bytes(lambda s: s.B * s.N),  # running l_i
        },
    )
)


_STATS_ARGS = ("qkv", "out", "N", "scale_log2", "row_max", "row_sum")

VARIANTS.append(
    one_kernel_variant(
        "fused", "004 §4.2.2",
        "five steps fused in one kernel, Q/K/V/S tiles in shared memory; grid (B), br = bc = 32",
        grid=lambda s: (s.B, 1, 1), block=threads(32), args=_STATS_ARGS, smem=lambda s: 4 * (3 * 32 * s.d + 32 * 32),
        constraints=Constraints(max_head_dim=253),  # shared memory <= 99 KB
        defines=lambda s: {"HEAD_DIM": s.d},
        workspace=dict(_ROW_STATS),
    )
)

def _large_tile_step(name: str, section: str, technique: str, grid: Callable[[Shape], Dims]) -> Variant:
    """maxsmem and splitq: br = 128 and the 48 KB bc of §4.2.3; they differ in how blocks cover Q."""
    return one_kernel_variant(
        name, f"004 §{section}", technique, grid=grid, block=threads(128), args=_STATS_ARGS, smem=_maxsmem_bytes,
        constraints=Constraints(max_head_dim=_MAXSMEM_MAX_HEAD_DIM, note="bc >= 4 keeps float32 accuracy"),
        defines=lambda s: {"HEAD_DIM": s.d, "BLOCK_COLS": _maxsmem_cols(s.d)},
        workspace=dict(_ROW_STATS),
    )


VARIANTS.append(_large_tile_step(
    "maxsmem", "4.2.3", "tiles grown to fill 48 KB of shared memory: br = 128, bc = 16 (d = 64) / 32 (d = 32)",
    grid=lambda s: (s.B, 1, 1)))
VARIANTS.append(_large_tile_step(
    "splitq", "4.2.4", "Q tiles split across blocks: grid (ceil(N/128), B), one block per (Q tile, batch item)",
    grid=grid_rows(128)))

# Report 004 §4.2.5-4.2.10: one block of 128 threads per (Q tile of 128 rows, batch item), d a
# compile-time define; float4 needs d % 4 == 0 and the report sizes bc for d = 32 and 64 only.
_LADDER_D = Constraints(head_dims=(32, 64))

# The report builds with --use_fast_math (and writes __expf, __fdividef). These kernels already take
# each softmax weight as one MUFU.EX2 of a log2-scaled score (exp2_ftz, common.cuh), so fast math only
# drops the denormal handling of the two rescale factors' exp2f, makes the one division a tile
# approximate and flushes denormals elsewhere. The GPU tests hold it to the same rule as the plain build:
# relL2 <= 1e-5 against float64 and the course's 5e-3 per element.
FASTMATH = Flavour("built with --use_fast_math, as the report is (checked to relL2 <= 1e-5 all the same)",
                   options=("--use_fast_math",))
# qreg written for N a multiple of BR = 128 (so of BC) alone, as the report's kernel is: no row, K/V or
# score masks at all. Beside plain qreg it shows what taking any N costs.
FULL_TILES = Flavour("without masks: N a multiple of 128, as the report's kernel needs", defines={"FULL_TILES": 1},
                     seq_len_multiple=128)
REPORT_BUILD = Flavour("the report's restrictions together: --use_fast_math and N a multiple of 128",
                       defines={"FULL_TILES": 1}, options=("--use_fast_math",), seq_len_multiple=128)


def _ladder_004_step(name: str, section: str, technique: str, global_row_stats: bool,
                     flavours: dict[str, Flavour] | None = None) -> Variant:
    """A step of report 004's chain from float4 on: kernel flash_<name> in cuda/<name>.cu.

    Until §4.2.8 the running max m and sum l live in global workspaces passed after the scale.
    Every step offers `fastmath`, the report's build.
    """
    stats = ("row_max", "row_sum") if global_row_stats else ()
    return one_kernel_variant(
        name, f"004 §{section}", technique, grid=grid_rows(128), block=threads(128),
        args=("qkv", "out", "N", "scale_log2", *stats),
        constraints=_LADDER_D,
        defines=lambda s: {"HEAD_DIM": s.d},
        workspace=dict(_ROW_STATS) if global_row_stats else {},
        flavours={"fastmath": FASTMATH, **(flavours or {})},
    )


VARIANTS.append(
    _ladder_004_step(
        "float4",
        "4.2.5",
        "float4 loads, shared memory and dot products for Q, K, V",
        global_row_stats=True,
    )
)
VARIANTS.append(
    _ladder_004_step(
        "restructure",
        "4.2.6",
        "Q tile loaded once before the K/V loop; rescale factors computed once per tile",
        global_row_stats=True,
    )
)
VARIANTS.append(
    _ladder_004_step(
        "coalesced",
        "4.2.7",
        "Q, K, V tiles loaded by all threads, consecutive threads on consecutive float4s",
        global_row_stats=True,
    )
)
VARIANTS.append(
    _ladder_004_step(
        "reglm",
        "4.2.8",
        "running max m and sum l in registers instead of global arrays",
        global_row_stats=False,
    )
)
VARIANTS.append(
    _ladder_004_step(
        "bankfree",
        "4.2.9",
        "Q tile and S stored transposed (qi[x*br+tx], sij[y*br+tx]): no shared-memory bank conflicts",
        global_row_stats=False,
    )
)
VARIANTS.append(
    _ladder_004_step(
        "qreg",
        "4.2.10",
        "Q row in registers; the freed shared memory doubles bc (32 for d=64, 64 for d=32)",
        global_row_stats=False,
        flavours={"fulltiles": FULL_TILES, "report": REPORT_BUILD},
    )
)

