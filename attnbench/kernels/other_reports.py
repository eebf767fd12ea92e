"""The other reports' variants (tiled, gemm, online, singlehead), the steps beyond (gemmtc, tf32x3, ...)
and the PyTorch peer, as Variant entries in ladder order."""

from __future__ import annotations

from typing import Callable

from attnbench.cases.testcase import Shape
from attnbench.kernels.ladder_004 import SCORES_IN_MEMORY
from attnbench.kernels.softmax_rows import round_up4, softmax_rows
from attnbench.kernels.variant import (
    Constraints,
    Flavour,
    Launch,
    Variant,
    cdiv,
    f32_bytes,
    grid_rows,
    one_kernel_variant,
    threads,
)
from attnbench.kernels.gemmwg3x import GEMMWG3X
from attnbench.kernels.wgmma3x import WGMMA3X

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
    time (4-byte copies made odd n 0.83-0.97x PyTorch's math backend, results/README.md)."""
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

VARIANTS.append(
    Variant(
        name="online",
        report="003 (online softmax + K/V tiling)",
        technique="one query per 256-thread block streaming K/V tiles of 64 keys with online softmax, "
        "float4 loads and warp-shuffle reductions (for large d)",
        source="online.cu",
        launches=(
            Launch(
                kernel="online_attention",
                grid=lambda s: (s.N, s.B, 1),
                block=threads(256),
                args=("qkv", "out", "N", "d", "scale_log2"),
                smem=lambda s: 16 * cdiv(s.d, 4),  # the query row, zero padded to whole float4s
            ),
        ),
        constraints=Constraints(
            max_head_dim=16384,
            note="built for d = 512..8192; float4 loads when d % 4 == 0, scalar loads otherwise",
        ),
        defines=lambda s: {"ONLINE_GROUPS": cdiv(s.d, 1024)},  # float4 accumulators per thread
    )
)

VARIANTS.append(
    one_kernel_variant(
        "singlehead", "001 (single head flash attention)",
        "one thread per query row, Br = Bc = 64, K/V tiles in shared memory, "
        "unsafe softmax (exp without max subtraction, divide by the sum at the end)",
        kernel="singlehead_attention", grid=grid_rows(64), block=threads(64), args=("qkv", "out", "N", "scale"),
        constraints=Constraints(
            max_head_dim=64,
            note="unsafe softmax: Inf/NaN once a scaled score exceeds ~88.7 or N*exp(max score) > 3.4e38; "
            "for inputs in [-3, 3] the max score is 9*sqrt(d) (50.9 at d=32, 72 at d=64): safe up to d=64, "
            "overflows from about d=96",
        ),
        defines=lambda s: {"HEAD_DIM": s.d},
        accuracy="unsafe",
    )
)

_TF32X3_HEAD_DIMS = (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128)


def _tf32x3_smem(s: Shape) -> int:
    """Bytes of dynamic shared memory: double-buffered K and V tiles (+ the Q tile when d > 64), rows padded by 4."""
    padded_row = 4 * (s.d + 4)
    if s.d <= 64:
        return 2 * 2 * 64 * padded_row  # 1024 * (d + 4): 36,864 B at d = 32, 69,632 B at d = 64
    return (2 * 2 * 32 + 64) * padded_row  # 768 * (d + 4): 101,376 B (99 KB) at d = 128


VARIANTS.append(
    one_kernel_variant(
        "tf32x3", "beyond 004 (3xTF32 tensor cores)",
        "tensor cores: FA2 warp tiles on mma.sync m16n8k8 in 3xTF32 (big + small split), cp.async double-buffered K/V",
        grid=grid_rows(64), block=threads(128), args=("qkv", "out", "N", "scale_log2"), smem=_tf32x3_smem,
        constraints=Constraints(
            head_dims=_TF32X3_HEAD_DIMS,
            note="3xTF32 on tensor cores (sm_80+)",
        ),
        defines=lambda s: {"HEAD_DIM": s.d},
        unit="tf32x3",
    )
)


VARIANTS.append(WGMMA3X)  # Hopper wgmma (attnbench/kernels/wgmma3x.py), right after tf32x3



_FA2SIMT_KEYS_PER_TILE = 64


def _fa2simt_config(s: Shape) -> tuple[int, int, int]:
    """(FA2_WARPS, FA2_UNROLL, FA2_SPLIT_S), the configurations measured best on an H200.

    d = 32 and 64: 8 warps (BR = 256, one block per SM) for N > 128; 4 warps (BR = 128) for N <= 128,
    where BR = 256 would leave half the rows empty (t11: 0.90 ms instead of 1.73). d = 128: 4 warps
    (BR = 64; 8 would need 236 KB of shared memory). FA2_UNROLL: the inner k loops' unroll (64 at
    d = 32 unrolls both whole). FA2_SPLIT_S: S = Q K^T summed in two halves at d = 64 (2) and 128 (1),
    which keeps every element within 5e-3 when inputs are uniform in [-30, 30] (one float32 sum over
    d: up to 6.1e-3).
    """
    if s.d == 128:
        return 4, 8, 1
    warps = 4 if s.N <= 128 else 8
    if s.d == 32:
        return warps, 64 if warps == 8 else 32, 0
    return warps, 32, 2


def _fa2simt_rows(s: Shape) -> int:
    """Query rows per block: 32 per warp (16 at d = 128)."""
    return _fa2simt_config(s)[0] * (16 if s.d == 128 else 32)


def _fa2simt_smem(s: Shape) -> int:
    """Bytes of dynamic shared memory: 133,632 (d = 32), 200,704 (d = 64), 187,392 (d = 128) with 8,
    8 and 4 warps; 84,480 (d = 32) and 135,168 (d = 64) with 4 warps."""
    stride = _fa2simt_rows(s) + 4  # Qt and Pt rows; 4*stride = 16 (mod 32) banks
    keys = _FA2SIMT_KEYS_PER_TILE
    return 4 * (s.d * stride + keys * stride + 2 * s.d * (keys + 4) + 2 * keys * s.d)


VARIANTS.append(
    one_kernel_variant(
        "fa2simt", "beyond 004 (FlashAttention-2 work split on FFMA)",
        "FFMA only: warps over Q rows, 8x8 register micro-tiles of S and O per thread (SGEMM-style), "
        "K^T/V double-buffered by cp.async, online softmax in registers with shuffles",
        grid=lambda s: (cdiv(s.N, _fa2simt_rows(s)), s.B, 1), block=lambda s: (32 * _fa2simt_config(s)[0], 1, 1),
        args=("qkv", "out", "N", "scale_log2"), smem=_fa2simt_smem,
        constraints=Constraints(
            head_dims=(32, 64, 128),
            note="83-196 KB of shared memory a block: every shape on Hopper (227 KB), d = 32 on an A100 (163 KB), "
            "none on a GTX 1080 (48 KB), where the launch is refused in one sentence",
        ),
        defines=lambda s: dict(
            zip(("HEAD_DIM", "FA2_WARPS", "FA2_UNROLL", "FA2_SPLIT_S"), (s.d, *_fa2simt_config(s)))
        ),
    )
)


# A peer, not a kernel of ours: PyTorch on the same float32 data, where PyTorch is importable.
VARIANTS.append(
    Variant(
        name="torch",
        report="peer",
        technique="PyTorch scaled_dot_product_attention on the same float32 data (its fastest float32 backend)",
        backend="torch",
        unit="tf32x3",  # its efficient backend runs float32 as 3xTF32 on mma.sync
    )
)


# A peer written the way Triton users write attention (attnbench.backends.triton_kernel), where Triton and
# PyTorch are importable; the flavour's unit is the precision of its tl.dot.
VARIANTS.append(
    Variant(
        name="triton",
        report="peer",
        technique="a Triton flash-attention forward (one program per query block and item, online softmax in "
        "float32, tiles autotuned once per shape and GPU); tl.dot in 3xTF32",
        backend="triton",
        unit="tf32x3",  # on Hopper Triton's tl.dot issues wgmma, whose 3xTF32 ceiling is higher than mma.sync's
        min_capability=(8, 0),  # Triton supports NVIDIA GPUs from compute capability 8.0
        # d padded to a power of two >= 16 in one tile: beyond 256 the tiles no longer fit
        constraints=Constraints(max_head_dim=256),
        flavours={
            "ieee": Flavour("tl.dot in IEEE float32 (FFMA, no tensor cores)", unit="ffma"),
            "tf32": Flavour("tl.dot in plain TF32 (10-bit mantissa): fails the course rule, to show why", unit="tensor"),
        },
    )
)


