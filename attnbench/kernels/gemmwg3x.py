"""gemmwg3x's host-side facts: gemmtc's materialised attention with its two exact GEMMs on Hopper wgmma
in 3xTF32 (cuda/gemmwg3x.cu). Registered by `gemm_route`, right after gemmtc."""

from __future__ import annotations

from typing import Callable

from attnbench.cases.testcase import Shape
from attnbench.kernels.ladder_004 import SCORES_IN_MEMORY
from attnbench.kernels.softmax_rows import round_up4, softmax_rows
from attnbench.kernels.variant import Constraints, Launch, Variant, cdiv, f32_bytes, threads

TILE_M = 128  # rows of A (Q or P) per GEMM block: two consumer warpgroups of 64
TILE_N = 128  # rows of B (K or V^T) per GEMM block: wgmma m64n128k8
TILE_K = 32  # k per split tile and ring stage: one 128-byte swizzle column of tf32
STAGES = 3  # shared-memory ring depth (kStages)
GEMM_THREADS = 384  # 2 consumer warpgroups + 1 producer warpgroup
SPLIT_THREADS = 256


def _split_floats(rows_per_tile: int) -> Callable[[int, int], int]:
    """Floats of a split operand (big and small TF32 halves) of `rows` x `cols`, in whole tiles."""
    return lambda rows, cols: cdiv(rows, rows_per_tile) * cdiv(cols, TILE_K) * 2 * rows_per_tile * TILE_K


_a_split, _b_split = _split_floats(TILE_M), _split_floats(TILE_N)


def _gemm_smem(s: Shape) -> int:
    """Bytes of dynamic shared memory of a GEMM block: STAGES of split A and B tiles (64 KB each),
    a full and an empty mbarrier per stage, 1024 B of slack for the swizzle alignment: 197,680 B."""
    return STAGES * 4 * 2 * (TILE_M + TILE_N) * TILE_K + 2 * STAGES * 8 + 1024


def _split(kernel: str, source: str, workspace: str, grid: Callable[[Shape], tuple[int, int]],
           extra: tuple[str, ...] = ("d",)) -> Launch:
    return Launch(kernel=kernel, grid=lambda s: (*grid(s), s.B), block=threads(SPLIT_THREADS),
                  args=(source, workspace, "N", *extra))


GEMMWG3X = Variant(
    name="gemmwg3x",
    report="beyond 000 (gemmtc's exact GEMMs on Hopper wgmma, 3xTF32)",
    technique="gemmtc's plan (S materialised, row softmax, P V) with both GEMMs on wgmma m64n128k8 in 3xTF32: "
    "pre-passes split Q, K, P and V^T into big/small TF32 tiles already swizzled for wgmma, a producer "
    "warpgroup bulk-copies 128x32 tiles into a 3-stage mbarrier ring, 2 consumer warpgroups compute a "
    "128x128 block, a fresh accumulator per 32-k tile added into FP32 registers",
    source="gemmwg3x.cu",
    launches=(
        _split("gemmwg3x_split_q", "qkv", "q_split", lambda s: (cdiv(s.d, TILE_K), cdiv(s.N, TILE_M))),
        _split("gemmwg3x_split_k", "qkv", "k_split", lambda s: (cdiv(s.d, TILE_K), cdiv(s.N, TILE_N))),
        Launch(
            kernel="gemmwg3x_qkt",
            grid=lambda s: (cdiv(s.N, TILE_N), cdiv(s.N, TILE_M), s.B),
            block=threads(GEMM_THREADS),
            args=("q_split", "k_split", "scores", "N", "d", "scale_log2"),
            smem=_gemm_smem,
        ),
        softmax_rows("gemm_softmax_rows_padded"),  # S's rows are N rounded up to 4 long
        _split("gemmwg3x_split_p", "scores", "p_split", lambda s: (cdiv(s.N, TILE_K), cdiv(s.N, TILE_M)), ()),
        _split("gemmwg3x_split_vt", "qkv", "vt_split", lambda s: (cdiv(s.N, TILE_K), cdiv(s.d, TILE_N))),
        Launch(
            kernel="gemmwg3x_pv",
            grid=lambda s: (cdiv(s.d, TILE_N), cdiv(s.N, TILE_M), s.B),
            block=threads(GEMM_THREADS),
            args=("p_split", "vt_split", "out", "N", "d"),
            smem=_gemm_smem,
        ),
    ),
    constraints=Constraints(
        max_seq_len=SCORES_IN_MEMORY.max_seq_len,
        note=SCORES_IN_MEMORY.note + "; split operands take 2x Q, K, P and V again; sm_90a only (Hopper wgmma)",
    ),
    workspace={
        "q_split": f32_bytes(lambda s: s.B * _a_split(s.N, s.d)),
        "k_split": f32_bytes(lambda s: s.B * _b_split(s.N, s.d)),
        "scores": f32_bytes(lambda s: s.B * s.N * round_up4(s.N)),
        "p_split": f32_bytes(lambda s: s.B * _a_split(s.N, s.N)),
        "vt_split": f32_bytes(lambda s: s.B * _b_split(s.d, s.N)),
    },
    unit="wgmma3x",
    arch="sm_90a",
)
