"""The variant registry: every built-in kernel variant and its host-side launch facts, as data.

A GPU variant is one `cuda/<name>.cu` file plus the launches that make one attention pass.
The runner feeds each launch from this table alone; no code elsewhere branches on a variant name.

Kernel ABI (every `extern "C" __global__` kernel in `cuda/`): arguments are named in
`Launch.args` and taken from
  qkv         const float*  the chunk's first batch item; item b's Q at qkv + b*3*N*d, K at +N*d, V at +2*N*d
  out         float*        the chunk's output; item b's O at out + b*N*d (also named `o`)
  q, k, v     const float*  with layout "separate" instead of qkv: each the chunk's B x N x d array
  B, N, d     int           batch items in this chunk, sequence length, head dimension
  scale       float         1/sqrt(d)
  scale_log2  float         log2(e)/sqrt(d), for exp2f
  step        int           the host loop's iteration, for a variant with `steps` > 1
  <workspace> float*        a scratch buffer named in `Variant.workspace`, sized for the chunk
The runner splits the batch into chunks so that workspaces fit in memory and grids stay in range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

from attnbench.errors import ShapeNotSupported, UnknownName
from attnbench.testcase import Shape

Dims = tuple[int, int, int]
SCALAR_ARGS = ("B", "N", "d", "scale", "scale_log2", "step")


def cdiv(a: int, b: int) -> int:
    """Ceiling division, for grid sizes."""
    return -(-a // b)


@dataclass(frozen=True)
class Constraints:
    """Which shapes a variant accepts; `reason` says why one is refused, in one line."""

    head_dims: tuple[int, ...] | None = None  # exact allowed d values; None: any d in [min, max]
    min_head_dim: int = 1
    max_head_dim: int | None = None
    max_seq_len: int | None = None
    note: str = ""  # shown by `attnbench list`, e.g. documented overflow limits

    def reason(self, variant: str, shape: Shape) -> str | None:
        if self.head_dims is not None and shape.d not in self.head_dims:
            allowed = ", ".join(map(str, self.head_dims))
            return f"{variant} needs d in {{{allowed}}}, and the case has d={shape.d}"
        if shape.d < self.min_head_dim or (self.max_head_dim is not None and shape.d > self.max_head_dim):
            upper = self.max_head_dim if self.max_head_dim is not None else "any"
            return f"{variant} needs d in [{self.min_head_dim}, {upper}], and the case has d={shape.d}"
        if self.max_seq_len is not None and shape.N > self.max_seq_len:
            return f"{variant} needs N <= {self.max_seq_len}, and the case has N={shape.N}"
        return None

    def describe(self) -> str:
        parts = []
        if self.head_dims is not None:
            parts.append("d in {" + ", ".join(map(str, self.head_dims)) + "}")
        elif self.min_head_dim > 1 or self.max_head_dim is not None:
            parts.append(f"d in [{self.min_head_dim}, {self.max_head_dim or 'any'}]")
        else:
            parts.append("any d")
        parts.append(f"N <= {self.max_seq_len}" if self.max_seq_len else "any N")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a pass: grid, block and dynamic shared memory as functions of the chunk shape."""

    kernel: str
    grid: Callable[[Shape], Dims]
    block: Callable[[Shape], Dims]
    args: tuple[str, ...]
    smem: Callable[[Shape], int] = lambda s: 0


@dataclass(frozen=True)
class Variant:
    """A built-in variant: where its code is, how to launch it, which shapes it takes."""

    name: str
    report: str  # which report and section it reproduces, e.g. "004 §4.2.9"
    technique: str  # the technique this step adds, one line
    backend: Literal["gpu", "cpu", "torch", "program"] = "gpu"  # program: a whole executable (compare exe:PATH)
    source: str | None = None  # file under cuda/, or an absolute path (user variants, programs)
    launches: tuple[Launch, ...] = ()
    constraints: Constraints = field(default_factory=Constraints)
    defines: Callable[[Shape], dict[str, int]] = lambda s: {}
    workspace: dict[str, Callable[[Shape], int]] = field(default_factory=dict)  # bytes per chunk
    options: tuple[str, ...] = ()  # extra nvcc options
    max_chunk: int = 65535  # most batch items per launch (grid dimension limit)
    # A host-driven loop (one iteration per K/V tile, say): the whole launch sequence is played this
    # many times, with the iteration index passed as the int argument "step".
    steps: Callable[[Shape], int] = lambda s: 1
    # "float32" variants must meet relL2 <= 1e-5; "unsafe" ones (no max subtraction) may overflow.
    accuracy: Literal["float32", "unsafe"] = "float32"
    # "qkv": one interleaved input pointer (Q K V per batch item, as the file stores them);
    # "separate": q, k, v pointers, each a contiguous B x N x d array, as most course kernels take them.
    layout: Literal["qkv", "separate"] = "qkv"

    def refusal(self, shape: Shape) -> str | None:
        """Why this variant cannot take `shape`, or None if it can."""
        return self.constraints.reason(self.name, shape)

    def require(self, shape: Shape) -> None:
        reason = self.refusal(shape)
        if reason:
            raise ShapeNotSupported(reason)

    def workspace_bytes(self, chunk: Shape) -> int:
        return sum(size(chunk) for size in self.workspace.values())


def _grid_rows(rows_per_block: int) -> Callable[[Shape], Dims]:
    """One block per `rows_per_block` query rows of each batch item."""
    return lambda s: (cdiv(s.N, rows_per_block), s.B, 1)


def _threads(x: int, y: int = 1) -> Callable[[Shape], Dims]:
    return lambda s: (x, y, 1)


def _f32(count: Callable[[Shape], int]) -> Callable[[Shape], int]:
    return lambda s: 4 * count(s)


# Ladder order: the order `attnbench list` prints and the ladder benchmark walks.
REGISTRY: dict[str, Variant] = {}


def register(variant: Variant) -> Variant:
    if variant.name in REGISTRY:
        raise ValueError(f"variant {variant.name} registered twice")
    REGISTRY[variant.name] = variant
    return variant


register(
    Variant(
        name="cpu",
        report="004 §2.2",
        technique="the course's blocked flash algorithm (br = bc = 32, online softmax) in numpy float32",
        backend="cpu",
    )
)


# -- built-in variants, in ladder order ------------------------------------------------------
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

# Variants that materialise S (N*N floats per batch item) stop where one item's S stops fitting.
_SCORES_IN_MEMORY = Constraints(max_seq_len=65536, note="S materialised: N*N floats per item (16 GiB at N = 65536)")

register(
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
                block=_threads(256),
                args=("qkv", "scores", "N", "d"),
            ),
            Launch(
                kernel="naive_scale",
                grid=lambda s: (cdiv(s.N, 256), min(s.N, 65535), s.B),
                block=_threads(256),
                args=("scores", "N", "scale"),
            ),
            Launch(
                kernel="naive_softmax",
                grid=lambda s: (s.N, s.B, 1),
                block=_threads(256),
                args=("scores", "N"),
            ),
            Launch(
                kernel="naive_pv",
                grid=lambda s: (cdiv(s.N * s.d, 256), s.B, 1),
                block=_threads(256),
                args=("qkv", "scores", "out", "N", "d"),
            ),
        ),
        constraints=_SCORES_IN_MEMORY,
        workspace={"scores": _f32(lambda s: s.B * s.N * s.N)},
    )
)

_KERNELS_ARGS = ("qkv", "out", "N", "d", "scale_log2", "step", "scores", "tile_max", "tile_sum", "row_max", "row_sum")

register(
    Variant(
        name="kernels",
        report="004 §4.2.1",
        technique="the course's blocked algorithm (br = bc = 32) as five kernels, host loop over K/V tiles",
        source="kernels.cu",
        # Per K/V tile j (step = j): QKDotAndScalar, RowMax, MinusMaxAndExp, RowSum, UpdateMiLiOi,
        # each over all batch items and query rows: 5*ceil(N/32) launches a pass.
        launches=tuple(
            Launch(kernel=name, grid=_grid_rows(32), block=_threads(32, 32), args=_KERNELS_ARGS)
            for name in ("QKDotAndScalar", "RowMax", "MinusMaxAndExp", "RowSum", "UpdateMiLiOi")
        ),
        steps=lambda s: cdiv(s.N, 32),
        constraints=Constraints(note="5*ceil(N/32) launches a pass"),
        workspace={
            "scores": _f32(lambda s: s.B * s.N * 32),  # S / P tile
            "tile_max": _f32(lambda s: s.B * s.N),  # m_ij
            "tile_sum": _f32(lambda s: s.B * s.N),  # l_ij
            "row_max": _f32(lambda s: s.B * s.N),  # running m_i
            "row_sum": _f32(lambda s: s.B * s.N),  # running l_i
        },
    )
)


register(
    Variant(
        name="fused",
        report="004 §4.2.2",
        technique="five steps fused in one kernel, Q/K/V/S tiles in shared memory; grid (B), br = bc = 32",
        source="fused.cu",
        launches=(
            Launch(
                kernel="flash_fused",
                grid=lambda s: (s.B, 1, 1),
                block=_threads(32),
                args=("qkv", "out", "N", "scale_log2", "row_max", "row_sum"),
                smem=lambda s: 4 * (3 * 32 * s.d + 32 * 32),
            ),
        ),
        constraints=Constraints(max_head_dim=253),  # shared memory <= 99 KB
        defines=lambda s: {"HEAD_DIM": s.d},
        workspace={"row_max": _f32(lambda s: s.B * s.N), "row_sum": _f32(lambda s: s.B * s.N)},
    )
)

register(
    Variant(
        name="maxsmem",
        report="004 §4.2.3",
        technique="tiles grown to fill 48 KB of shared memory: br = 128, bc = 16 (d = 64) / 32 (d = 32)",
        source="maxsmem.cu",
        launches=(
            Launch(
                kernel="flash_maxsmem",
                grid=lambda s: (s.B, 1, 1),
                block=_threads(128),
                args=("qkv", "out", "N", "scale_log2", "row_max", "row_sum"),
                smem=_maxsmem_bytes,
            ),
        ),
        constraints=Constraints(max_head_dim=_MAXSMEM_MAX_HEAD_DIM, note="bc >= 4 keeps float32 accuracy"),
        defines=lambda s: {"HEAD_DIM": s.d, "BLOCK_COLS": _maxsmem_cols(s.d)},
        workspace={"row_max": _f32(lambda s: s.B * s.N), "row_sum": _f32(lambda s: s.B * s.N)},
    )
)

register(
    Variant(
        name="splitq",
        report="004 §4.2.4",
        technique="Q tiles split across blocks: grid (ceil(N/128), B), one block per (Q tile, batch item)",
        source="splitq.cu",
        launches=(
            Launch(
                kernel="flash_splitq",
                grid=_grid_rows(128),
                block=_threads(128),
                args=("qkv", "out", "N", "scale_log2", "row_max", "row_sum"),
                smem=_maxsmem_bytes,
            ),
        ),
        constraints=Constraints(max_head_dim=_MAXSMEM_MAX_HEAD_DIM, note="bc >= 4 keeps float32 accuracy"),
        defines=lambda s: {"HEAD_DIM": s.d, "BLOCK_COLS": _maxsmem_cols(s.d)},
        workspace={"row_max": _f32(lambda s: s.B * s.N), "row_sum": _f32(lambda s: s.B * s.N)},
    )
)

# Report 004 §4.2.5-4.2.10: one block of 128 threads per (Q tile of 128 rows, batch item), d a
# compile-time define; float4 needs d % 4 == 0 and the report sizes bc for d = 32 and 64 only.
_LADDER_D = Constraints(head_dims=(32, 64))
_ROW_STATS = {"row_max": _f32(lambda s: s.B * s.N), "row_sum": _f32(lambda s: s.B * s.N)}


def _ladder_004_step(name: str, section: str, technique: str, global_row_stats: bool) -> Variant:
    """A step of report 004's chain from float4 on: kernel flash_<name> in cuda/<name>.cu.

    Until §4.2.8 the running max m and sum l live in global workspaces passed after the scale.
    """
    stats = ("row_max", "row_sum") if global_row_stats else ()
    return Variant(
        name=name,
        report=f"004 §{section}",
        technique=technique,
        source=f"{name}.cu",
        launches=(
            Launch(
                kernel=f"flash_{name}",
                grid=_grid_rows(128),
                block=_threads(128),
                args=("qkv", "out", "N", "scale_log2", *stats),
            ),
        ),
        constraints=_LADDER_D,
        defines=lambda s: {"HEAD_DIM": s.d},
        workspace=dict(_ROW_STATS) if global_row_stats else {},
    )


register(
    _ladder_004_step(
        "float4",
        "4.2.5",
        "float4 loads, shared memory and dot products for Q, K, V",
        global_row_stats=True,
    )
)
register(
    _ladder_004_step(
        "restructure",
        "4.2.6",
        "Q tile loaded once before the K/V loop; rescale factors computed once per tile",
        global_row_stats=True,
    )
)
register(
    _ladder_004_step(
        "coalesced",
        "4.2.7",
        "Q, K, V tiles loaded by all threads, consecutive threads on consecutive float4s",
        global_row_stats=True,
    )
)
register(
    _ladder_004_step(
        "reglm",
        "4.2.8",
        "running max m and sum l in registers instead of global arrays",
        global_row_stats=False,
    )
)
register(
    _ladder_004_step(
        "bankfree",
        "4.2.9",
        "Q tile and S stored transposed (qi[x*br+tx], sij[y*br+tx]): no shared-memory bank conflicts",
        global_row_stats=False,
    )
)
register(
    _ladder_004_step(
        "qreg",
        "4.2.10",
        "Q row in registers; the freed shared memory doubles bc (32 for d=64, 64 for d=32)",
        global_row_stats=False,
    )
)

register(
    Variant(
        name="tiled",
        report="002 (shared memory tiling)",
        technique="S = scale*QK^T and O = PV as 16x16 shared-memory tiled matmuls around a row softmax",
        source="tiled.cu",
        launches=(
            Launch(
                kernel="tiled_qkt",
                grid=lambda s: (cdiv(s.N, 16), cdiv(s.N, 16), s.B),
                block=_threads(16, 16),
                args=("qkv", "scores", "N", "d", "scale"),
            ),
            Launch(
                kernel="tiled_softmax_rows",
                grid=lambda s: (cdiv(s.N, 8), s.B, 1),  # one warp per row, 8 rows per block
                block=_threads(256),
                args=("scores", "N"),
            ),
            Launch(
                kernel="tiled_pv",
                grid=lambda s: (cdiv(s.d, 16), cdiv(s.N, 16), s.B),
                block=_threads(16, 16),
                args=("qkv", "scores", "out", "N", "d"),
            ),
        ),
        constraints=_SCORES_IN_MEMORY,
        workspace={"scores": _f32(lambda s: s.B * s.N * s.N)},
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


register(
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
                block=_threads(256),
                args=("qkv", "scores", "N", "d", "scale_log2"),
            ),
            Launch(
                kernel="gemm_softmax_rows",
                grid=lambda s: (cdiv(s.N, 8), s.B, 1),  # one warp per row, 8 rows per block
                block=_threads(256),
                args=("scores", "N"),
            ),
            Launch(
                kernel="gemm_pv",
                grid=lambda s: (cdiv(s.d, _gemm_pv_tile(s)), cdiv(s.N, _gemm_pv_tile(s)), s.B),
                block=_threads(256),
                args=("qkv", "scores", "out", "N", "d"),
            ),
        ),
        defines=lambda s: {
            "QK_TILE": _gemm_qk_tile(s),
            "PV_TILE": _gemm_pv_tile(s),
            "QK_DOUBLE_BUFFER": int(s.d >= _GEMM_DOUBLE_BUFFER_FROM),
            "PV_DOUBLE_BUFFER": int(s.N >= _GEMM_DOUBLE_BUFFER_FROM),
        },
        constraints=_SCORES_IN_MEMORY,
        workspace={"scores": _f32(lambda s: s.B * s.N * s.N)},
    )
)

register(
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
                block=_threads(256),
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

register(
    Variant(
        name="singlehead",
        report="001 (single head flash attention)",
        technique="one thread per query row, Br = Bc = 64, K/V tiles in shared memory, "
        "unsafe softmax (exp without max subtraction, divide by the sum at the end)",
        source="singlehead.cu",
        launches=(
            Launch(
                kernel="singlehead_attention",
                grid=_grid_rows(64),
                block=_threads(64),
                args=("qkv", "out", "N", "scale"),
            ),
        ),
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


register(
    Variant(
        name="tf32x3",
        report="beyond 004 (3xTF32 tensor cores)",
        technique="tensor cores: FA2 warp tiles on mma.sync m16n8k8 in 3xTF32 (big + small split), "
        "cp.async double-buffered K/V",
        source="tf32x3.cu",
        launches=(
            Launch(
                kernel="flash_tf32x3",
                grid=_grid_rows(64),
                block=_threads(128),
                args=("qkv", "out", "N", "scale_log2"),
                smem=_tf32x3_smem,
            ),
        ),
        constraints=Constraints(
            head_dims=_TF32X3_HEAD_DIMS,
            note="3xTF32 on tensor cores (sm_80+)",
        ),
        defines=lambda s: {"HEAD_DIM": s.d},
    )
)


# A peer, not a kernel of ours: PyTorch on the same float32 data, where PyTorch is importable.
register(
    Variant(
        name="torch",
        report="peer",
        technique="PyTorch scaled_dot_product_attention on the same float32 data (its fastest float32 backend)",
        backend="torch",
    )
)


def get_variant(name: str) -> Variant:
    """Look a variant up by name, then among the user's (attnbench.toml, or a kernel file's path);
    an unknown name lists the known ones."""
    if name in REGISTRY:
        return REGISTRY[name]
    from attnbench.kernels.user import find_user_variant, user_variants

    found = find_user_variant(name)
    if found is not None:
        return found
    known = ", ".join([*REGISTRY, *(v.name for v in user_variants())])
    raise UnknownName(f"no variant named {name!r}; known variants: {known}")


def all_variants() -> list[Variant]:
    """The built-ins in ladder order, then the user's from the working directory's attnbench.toml."""
    from attnbench.kernels.user import user_variants

    return [*REGISTRY.values(), *user_variants()]


def gpu_variants() -> list[Variant]:
    return [v for v in REGISTRY.values() if v.backend == "gpu"]


# Which GPU variant is the default: the first in this list that accepts the shape.
# Measured on an H200 (results/2026-11-21_h200_ladder_*.md): tf32x3 leads wherever it applies; gemm
# leads the FFMA variants from N = 128 to 32768 and on square shapes; online takes the large head
# dimensions gemm cannot hold; singlehead is left out (its unsafe softmax can overflow).
FASTEST_FIRST: tuple[str, ...] = ("tf32x3", "gemm", "qreg", "online", "naive")


def default_variant(shape: Shape, gpu_usable: bool) -> Variant:
    """The fastest built-in GPU variant that takes `shape` when a GPU is usable, else `cpu`."""
    if gpu_usable:
        for name in FASTEST_FIRST:
            if name in REGISTRY and REGISTRY[name].refusal(shape) is None:
                return REGISTRY[name]
    return REGISTRY["cpu"]

