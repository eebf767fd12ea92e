"""The route that materialises S: reports 002 and 000 (tiled, gemm) and the steps beyond on tensor cores
(gemmtc, gemmwg3x), as Variant entries in ladder order."""

from __future__ import annotations

from typing import Callable

from attnbench.cases.testcase import Shape
from attnbench.kernels.ladder_004 import SCORES_IN_MEMORY
from attnbench.kernels.softmax_rows import round_up4, softmax_rows
from attnbench.kernels.variant import (
    Constraints,
    Launch,
    Variant,
    cdiv,
    f32_bytes,
    threads,
)
from attnbench.kernels.gemmwg3x import GEMMWG3X

VARIANTS: list[Variant] = []


VARIANTS.append(
    Variant(
        name="tiled",
        report="002 (shared memory tiling)",
        technique="S = scale*QK^T and O = PV as 16x16 shared-memory tiled matmuls around a row softmax",
        source="tiled.cu",
        launches=(
            Launch(
                kernel="tiled_qkt",
                grid=lambda s: (cdiv(s.N, 16), cdiv(s.N, 16), s.B),
                block=threads(16, 16),
                args=("qkv", "scores", "N", "d", "scale"),
            ),
            softmax_rows("tiled_softmax_rows"),
            Launch(
                kernel="tiled_pv",
                grid=lambda s: (cdiv(s.d, 16), cdiv(s.N, 16), s.B),
                block=threads(16, 16),
                args=("qkv", "scores", "out", "N", "d"),
            ),
        ),
        constraints=SCORES_IN_MEMORY,
        workspace={"scores": f32_bytes(lambda s: s.B * s.N * s.N)},
    )
)


def _gemm_tile(blocks_of_128: int, rows: int, cols: int) -> int:
    """128x128 tiles (8x8 results per thread) when both sides fill them and one batch item alone
    gives at least as many blocks as SMs (132 on H100/H200); 64x64 tiles (4x4 per thread) otherwise.
    Must not depend on B: the defines are computed from the whole testcase shape, the grids from
    each chunk's shape, and both have to agree on the tile."""
    return 128 if rows >= 128 and cols >= 128 and blocks_of_128 >= 132 else 64


def _gemm_qk_tile(s: Shape) -> int:
    return _gemm_tile(cdiv(s.N, 128) ** 2, s.N, s.N)


def _gemm_pv_tile(s: Shape) -> int:
    return _gemm_tile(cdiv(s.N, 128) * cdiv(s.d, 128), s.N, s.d)


# Report 000 turns double buffering on only for matrices larger than 4000: here, per GEMM, when
# its reduction length (d for Q K^T, N for P V) exceeds 4000.
_GEMM_DOUBLE_BUFFER_FROM = 4001


VARIANTS.append(
    Variant(
        name="gemm",
        report="000 (final design)",
        technique="register-tiled SGEMMs (float4, implicit transposes, padded smem, double buffering) "
        "with the scale folded into the QK^T write-back, and an online-softmax row kernel",
        source="gemm.cu",
        launches=(
            Launch(
                kernel="gemm_qkt",
                grid=lambda s: (cdiv(s.N, _gemm_qk_tile(s)), cdiv(s.N, _gemm_qk_tile(s)), s.B),
                block=threads(256),
                args=("qkv", "scores", "N", "d", "scale_log2"),
            ),
            softmax_rows("gemm_softmax_rows"),
            Launch(
                kernel="gemm_pv",
                grid=lambda s: (cdiv(s.d, _gemm_pv_tile(s)), cdiv(s.N, _gemm_pv_tile(s)), s.B),
                block=threads(256),
                args=("qkv", "scores", "out", "N", "d"),
            ),
        ),
        defines=lambda s: {
            "QK_TILE": _gemm_qk_tile(s),
            "PV_TILE": _gemm_pv_tile(s),
            "QK_DOUBLE_BUFFER": int(s.d >= _GEMM_DOUBLE_BUFFER_FROM),
            "PV_DOUBLE_BUFFER": int(s.N >= _GEMM_DOUBLE_BUFFER_FROM),
        },
        constraints=SCORES_IN_MEMORY,
        workspace={"scores": f32_bytes(lambda s: s.B * s.N * s.N)},
    )
)


# gemmtc's block tiles follow gemm's rule, _gemm_qk_tile and _gemm_pv_tile (128 x 128 of 8 warps, else 64 x 64 of 4).
_GEMMTC_BK, _GEMMTC_STAGES = 32, 3  # k per shared-memory stage, cp.async ring depth (cuda/gemmtc.cu)


def _gemmtc_threads(tile: int) -> int:
    """256 threads (2 x 4 warps of 64 x 32) for 128 x 128 tiles, 128 (2 x 2 warps of 32 x 32) for 64 x 64."""
    return 2 * 32 * (tile // 32)


def _gemmtc_qk_smem(s: Shape) -> int:
    """Bytes of dynamic shared memory: per stage the Q and K tiles as [tile][32 + 4] floats.
    110,592 B with 128 x 128 tiles, 55,296 B with 64 x 64."""
    tile = _gemm_qk_tile(s)
    return 4 * _GEMMTC_STAGES * 2 * tile * (_GEMMTC_BK + 4)


def _gemmtc_pv_smem(s: Shape) -> int:
    """Bytes of dynamic shared memory: per stage the P tile as [tile][32 + 4] and the V tile as
    [32][tile + 8] floats. 107,520 B with 128 x 128 tiles, 55,296 B with 64 x 64."""
    tile = _gemm_pv_tile(s)
    return 4 * _GEMMTC_STAGES * (tile * (_GEMMTC_BK + 4) + _GEMMTC_BK * (tile + 8))


def _gemmtc_aligned(s: Shape) -> bool:
    """Rows of N and of d floats 16-byte aligned: both GEMMs read the input and S in place."""
    return s.N % 4 == 0 and s.d % 4 == 0


def _gemmtc_padded(s: Shape) -> bool:
    """N or d not a multiple of 4: a pre-pass pads Q, K, V (and S's rows) so the GEMMs load 16 bytes at a
    time (4-byte copies made odd n 0.83-0.97x PyTorch's math backend on an H200, 2026-11-22)."""
    return not _gemmtc_aligned(s)


def _gemmtc_qkt(kernel: str, source: str, applies: Callable[[Shape], bool]) -> Launch:
    """S = scale Q K^T from `source`: the input (`qkv`) or its padded copies (`padded`)."""
    return Launch(
        kernel=kernel,
        grid=lambda s: (cdiv(s.N, _gemm_qk_tile(s)), cdiv(s.N, _gemm_qk_tile(s)), s.B),
        block=lambda s: (_gemmtc_threads(_gemm_qk_tile(s)), 1, 1),
        args=(source, "scores", "N", "d", "scale_log2"),
        smem=_gemmtc_qk_smem,
        applies=applies,
    )


def _gemmtc_pv(kernel: str, source: str, applies: Callable[[Shape], bool]) -> Launch:
    """O = P V with V from `source`: the input (`qkv`) or its padded copies (`padded`)."""
    return Launch(
        kernel=kernel,
        grid=lambda s: (cdiv(s.d, _gemm_pv_tile(s)), cdiv(s.N, _gemm_pv_tile(s)), s.B),
        block=lambda s: (_gemmtc_threads(_gemm_pv_tile(s)), 1, 1),
        args=(source, "scores", "out", "N", "d"),
        smem=_gemmtc_pv_smem,
        applies=applies,
    )


def _gemmtc_padded_floats(s: Shape) -> int:
    """The padded copies of Q, K (N x dp each) and V (Np x dp) per item; none on the aligned path."""
    return s.B * (2 * s.N + round_up4(s.N)) * round_up4(s.d) if _gemmtc_padded(s) else 0


VARIANTS.append(
    Variant(
        name="gemmtc",
        report="beyond 000 (its two GEMMs on tensor cores, 3xTF32)",
        technique="gemm's plan (S materialised, row softmax, P V) with both GEMMs on mma.sync m16n8k8 in "
        "3xTF32: 128x128 block tiles of 8 warps (64x32 each; 64x64 of 4 warps on small shapes), k-tiles of 32 "
        "in a 3-stage cp.async ring, padded conflict-free smem, a fresh accumulator per k-tile added in FP32; "
        "N or d not a multiple of 4: Q, K, V and S's rows padded to 4 by a pre-pass, for 16-byte copies",
        source="gemmtc.cu",
        launches=(
            _gemmtc_qkt("gemmtc_qkt", "qkv", _gemmtc_aligned),
            softmax_rows("gemm_softmax_rows", _gemmtc_aligned),
            _gemmtc_pv("gemmtc_pv", "qkv", _gemmtc_aligned),
            Launch(
                kernel="gemmtc_pad",
                grid=lambda s: (cdiv((2 * s.N + round_up4(s.N)) * round_up4(s.d), 256), s.B, 1),
                block=threads(256),
                args=("qkv", "padded", "N", "d"),
                applies=_gemmtc_padded,
            ),
            _gemmtc_qkt("gemmtc_qkt_padded", "padded", _gemmtc_padded),
            softmax_rows("gemm_softmax_rows_padded", _gemmtc_padded),
            _gemmtc_pv("gemmtc_pv_padded", "padded", _gemmtc_padded),
        ),
        defines=lambda s: {"QK_TILE": _gemm_qk_tile(s), "PV_TILE": _gemm_pv_tile(s)},
        constraints=Constraints(
            max_seq_len=SCORES_IN_MEMORY.max_seq_len,
            note=SCORES_IN_MEMORY.note + "; 3xTF32 on tensor cores (sm_80+); 55-108 KB of shared memory a block",
        ),
        workspace={"scores": f32_bytes(lambda s: s.B * s.N * round_up4(s.N) if _gemmtc_padded(s) else s.B * s.N * s.N),
                   "padded": f32_bytes(_gemmtc_padded_floats)},
        unit="tf32x3",
    )
)

VARIANTS.append(GEMMWG3X)  # gemmtc on Hopper wgmma (attnbench/kernels/gemmwg3x.py), right after it
