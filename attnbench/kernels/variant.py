"""The Variant model: a kernel variant's host-side launch facts, as data.

A GPU variant is one `.cu` file plus the launches that make one attention pass. The runner feeds
each launch from a Variant alone; no code elsewhere branches on a variant name.

Kernel ABI (every `extern "C" __global__` kernel): arguments are named in `Launch.args` and taken from
  qkv         const float*  the chunk's first batch item; item b's Q at qkv + b*3*N*d, K at +N*d, V at +2*N*d
  out         float*        the chunk's output; item b's O at out + b*N*d (also named `o`)
  q, k, v     const float*  with layout "separate" instead of qkv: each the chunk's B x N x d array
  B, N, d     int           batch items in this chunk, sequence length, head dimension
  scale       float         1/sqrt(d)
  scale_log2  float         log2(e)/sqrt(d), for exp2f
  step        int           the host loop's iteration, for a variant with `steps` > 1
  <workspace> float*        a scratch buffer named in `Variant.workspace`, sized for the chunk: its
                            size for B items must hold any launch of fewer (a pipeline's chunks);
                            zeroed once when it is allocated, not before each pass (a kernel that
                            counts in one sets it back: wgmma3x's split counters)
The runner splits the batch into chunks so that workspaces fit in memory and grids stay in range.
A launch may apply to some shapes only (`Launch.applies`): a variant with a second path for short
sequences, say; its workspace may then be sized 0 for the shapes that do not use it.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Literal, Mapping, Sequence

from attnbench.cases.fresh_values import InputRange
from attnbench.cases.testcase import Shape
from attnbench.errors import ShapeNotSupported, UnknownName
from attnbench.kernels.backend_kinds import BACKEND_KINDS, BackendKind
from attnbench.results.compute_units import COMPUTE_UNITS, ComputeUnit
from attnbench.results.precision_envelope import Rounding, error_bound, largest_magnitudes
from attnbench.results.refusal import Refusal, RefusalKind

Dims = tuple[int, int, int]
# What a variant runs on: a name of attnbench.results.compute_units.COMPUTE_UNITS (FP32 FFMA, tensor cores in
# TF32 or 3xTF32, Hopper wgmma, memory-bound, the half-precision peers), where its facts are.
Unit = str
SCALAR_ARGS = ("B", "N", "d", "scale", "scale_log2", "step")
# What a variant claims of its accuracy (checked by the GPU tests): "float32" (relL2 <= 1e-5 and the course
# rule), "course" (the course rule with a margin of half its tolerance), "unsafe" (no max subtraction: may
# overflow), "none" (no claim: a peer in half precision, shown for what precision buys; every cell is still
# held to the check of the command that runs it, so one that fails is WRONG).
Accuracy = Literal["float32", "course", "unsafe", "none"]


def cdiv(a: int, b: int) -> int:
    """Ceiling division, for grid sizes."""
    return -(-a // b)


@dataclass(frozen=True)
class Constraints:
    """Which shapes a variant accepts; `refusal` says why one is refused."""

    head_dims: tuple[int, ...] | None = None  # exact allowed d values; None: any d in [min, max]
    min_head_dim: int = 1
    max_head_dim: int | None = None
    max_seq_len: int | None = None
    seq_len_multiple: int = 1  # N must be a multiple of this (a kernel without a mask for a partial tile)
    note: str = ""  # shown by `attnbench list`, e.g. documented overflow limits

    def refusal(self, variant: str, shape: Shape) -> Refusal | None:
        """Why `variant` with these constraints does not take `shape`, or None."""
        if self.head_dims is not None and shape.d not in self.head_dims:
            return Refusal(variant, RefusalKind.HEAD_DIMS, self.head_dims, shape.d)
        if shape.d < self.min_head_dim or (self.max_head_dim is not None and shape.d > self.max_head_dim):
            return Refusal(variant, RefusalKind.HEAD_DIM_RANGE, (self.min_head_dim, self.max_head_dim), shape.d)
        if self.max_seq_len is not None and shape.N > self.max_seq_len:
            return Refusal(variant, RefusalKind.MAX_SEQ_LEN, self.max_seq_len, shape.N)
        if shape.N % self.seq_len_multiple:
            return Refusal(variant, RefusalKind.SEQ_LEN_MULTIPLE, self.seq_len_multiple, shape.N)
        return None

    def narrowed(self, seq_len_multiple: int = 1, note: str = "") -> Constraints:
        """These constraints and a further restriction (a flavour's)."""
        multiple = self.seq_len_multiple * seq_len_multiple // math.gcd(self.seq_len_multiple, seq_len_multiple)
        return replace(self, seq_len_multiple=multiple, note="; ".join(n for n in (self.note, note) if n))

    def describe(self) -> str:
        parts = []
        if self.head_dims is not None:
            parts.append("d in {" + ", ".join(map(str, self.head_dims)) + "}")
        elif self.min_head_dim > 1 or self.max_head_dim is not None:
            parts.append(f"d in [{self.min_head_dim}, {self.max_head_dim or 'any'}]")
        else:
            parts.append("any d")
        seq_len = f"N <= {self.max_seq_len}" if self.max_seq_len else "any N"
        if self.seq_len_multiple > 1:
            seq_len = f"N a multiple of {self.seq_len_multiple}" + (f", <= {self.max_seq_len}" if self.max_seq_len else "")
        parts.append(seq_len)
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a pass: grid, block and dynamic shared memory as functions of the chunk shape.

    `applies` says whether the launch is part of the pass for a shape (N and d; never B, so that every
    chunk of a batch runs the same launches): a variant may take another path on some shapes.

    `grid_on_sms`, where given, is the grid on a GPU of that many SMs, for a launch of persistent blocks
    (one a SM, each looping over its share of the work): the runner uses it with the GPU's SM count, since
    such a grid sized for more SMs than the GPU has leaves some SMs two blocks to run in turn. `grid` is
    then the grid on the SM count the variant is built for."""

    kernel: str
    grid: Callable[[Shape], Dims]
    block: Callable[[Shape], Dims]
    args: tuple[str, ...]
    smem: Callable[[Shape], int] = lambda s: 0
    applies: Callable[[Shape], bool] = lambda s: True
    grid_on_sms: Callable[[Shape, int], Dims] | None = None

    def grid_for(self, shape: Shape, sm_count: int) -> Dims:
        """The grid on a GPU of `sm_count` SMs."""
        return self.grid(shape) if self.grid_on_sms is None else self.grid_on_sms(shape, sm_count)


@dataclass(frozen=True)
class Flavour:
    """A named build of a variant, asked for as `variant:flavour` (qreg:fastmath): the same kernel file
    with extra defines and nvcc options, and any restriction that build adds (N a multiple of a tile)."""

    description: str  # one line, shown by `attnbench list` after the variant's technique
    defines: Mapping[str, int] = field(default_factory=dict)
    options: tuple[str, ...] = ()
    seq_len_multiple: int = 1
    unit: Unit | None = None  # a build that runs on another unit (a peer's precision): its ceiling follows it
    accuracy: Accuracy | None = None  # a build that claims another accuracy (a half-precision peer claims none)
    # A build that computes the softmax's weights by an approximation of its own (a polynomial exp2): its
    # relative error, added to its unit's rounding of P in the accuracy envelope (`precision_envelope`).
    weights_error: float = 0.0


FLAVOUR_SEPARATOR = ":"


@dataclass(frozen=True)
class Variant:
    """A built-in variant: where its code is, how to launch it, which shapes it takes."""

    name: str
    report: str  # which report and section it reproduces, e.g. "004 §4.2.9"
    technique: str  # the technique this step adds, one line
    # gpu: a .cu file through pycuda; torch, triton: the peers, in this process on PyTorch's tensors;
    # program: a whole executable (compare exe:PATH)
    backend: Literal["gpu", "cpu", "torch", "triton", "program"] = "gpu"
    source: str | None = None  # file under the built-in kernel folder, or `source_path` for a user's
    source_path: Path | None = None  # a kernel file outside the package (a user variant)
    launches: tuple[Launch, ...] = ()
    constraints: Constraints = field(default_factory=Constraints)
    defines: Callable[[Shape], dict[str, int]] = lambda s: {}
    workspace: dict[str, Callable[[Shape], int]] = field(default_factory=dict)  # bytes per chunk
    options: tuple[str, ...] = ()  # extra nvcc options
    max_chunk: int = 65535  # most batch items per launch (grid dimension limit)
    # A host-driven loop (one iteration per K/V tile, say): the whole launch sequence is played this
    # many times, with the iteration index passed as the int argument "step".
    steps: Callable[[Shape], int] = lambda s: 1
    # "float32" variants must meet relL2 <= 1e-5; "course" ones meet the course rule (5e-3 per element) with
    # a margin of half of it (COURSE_MARGIN_ATOL), not float32's relL2; "unsafe" ones (no max subtraction)
    # may overflow; "none" claim nothing (see Accuracy).
    accuracy: Accuracy = "float32"
    unit: Unit = "ffma"  # what it runs on (see Unit)
    # "qkv": one interleaved input pointer (Q K V per batch item, as the file stores them);
    # "separate": q, k, v pointers, each a contiguous B x N x d array, as most course kernels take them.
    layout: Literal["qkv", "separate"] = "qkv"
    # An architecture the variant must be built for and can only run on (sm_90a: Hopper's wgmma);
    # None builds for the GPU at hand.
    arch: str | None = None
    # The oldest GPU the variant runs on whatever its unit (Triton's own floor, say); None: the unit's.
    min_capability: tuple[int, int] | None = None
    # Named builds of the same kernel (`qreg:fastmath`); `flavoured` makes the Variant for one.
    flavours: Mapping[str, Flavour] = field(default_factory=dict)
    # The arithmetic of its products where its unit does not say it (the cpu variant's numpy); else the unit's.
    arithmetic_note: str | None = None
    weights_error: float = 0.0  # its flavour's approximation of the weights (Flavour.weights_error)

    @property
    def arithmetic(self) -> str:
        """The arithmetic of its products: FP32 FFMA, 3xTF32, split FP16 + FP16, TF32, ..."""
        return self.arithmetic_note or self.compute_unit.arithmetic

    def flavoured(self, flavour: str) -> Variant:
        """This variant built as `flavour`: named `name:flavour` (so results record it so), with the
        flavour's defines and options added and its restriction joined to the constraints."""
        chosen = self.flavours.get(flavour)
        if chosen is None:
            offered = ", ".join(self.flavours) or "none"
            raise UnknownName(f"{self.name} has no option {flavour!r}; its options: {offered}")
        base_defines = self.defines
        return replace(
            self,
            name=f"{self.name}{FLAVOUR_SEPARATOR}{flavour}",
            technique=f"{self.technique}; {chosen.description}",
            defines=lambda s: {**base_defines(s), **chosen.defines},
            options=(*self.options, *chosen.options),
            constraints=self.constraints.narrowed(chosen.seq_len_multiple),
            unit=chosen.unit or self.unit,
            accuracy=chosen.accuracy or self.accuracy,
            flavours={},
            weights_error=self.weights_error + chosen.weights_error,
        )

    @property
    def rounding(self) -> Rounding | None:
        """What its arithmetic rounds beyond float32: its unit's roundings, with P's widened by its own
        approximation of the weights if it has one; None when its unit rounds nothing of its own."""
        rounding = self.compute_unit.rounding
        if rounding is None or not self.weights_error:
            return rounding
        return replace(rounding, weights_relative=rounding.weights_relative + self.weights_error)

    @property
    def compute_unit(self) -> ComputeUnit:
        """The facts of the unit it runs on (its arithmetic, the oldest GPU with it, its ceiling)."""
        return COMPUTE_UNITS[self.unit]

    @property
    def kind(self) -> BackendKind:
        """The facts of this variant's backend (what it needs, how it is timed, whether it is compiled)."""
        return BACKEND_KINDS[self.backend]

    def runs_on(self, compute_capability: tuple[int, int] | None) -> bool:
        """Whether a GPU of this compute capability can run the variant (unknown: assume it can)."""
        return self.gpu_refusal(compute_capability) is None

    def gpu_refusal(self, compute_capability: tuple[int, int] | None) -> Refusal | None:
        """Why a GPU of this compute capability cannot run the variant, or None."""
        if compute_capability is None:
            return None
        here = "sm_{}{}".format(*compute_capability)
        if self.arch is not None:
            if compute_capability != capability_of(self.arch):
                return Refusal(self.name, RefusalKind.ARCH, self.arch, here)
        oldest = self.compute_unit.min_capability
        if oldest is not None and compute_capability < oldest:
            return Refusal(self.name, RefusalKind.UNIT_CAPABILITY, "sm_{}{}".format(*oldest), here, self.unit)
        if self.min_capability is not None and compute_capability < self.min_capability:
            return Refusal(self.name, RefusalKind.MIN_CAPABILITY, "sm_{}{}".format(*self.min_capability), here)
        return None

    def refusal(self, shape: Shape) -> Refusal | None:
        """Why this variant cannot take `shape`, or None if it can."""
        return self.constraints.refusal(self.name, shape)

    def precision_refusal(self, ranges: InputRange, shape: Shape, tolerance: tuple[float, float]) -> Refusal | None:
        """Why this variant's arithmetic cannot hold the check's `tolerance` (atol, rtol) on an input of these
        value ranges, or None: its unit's rounding of V and P (`precision_envelope`) above atol + rtol * max |V|
        (the loosest the rule can be on any element). A unit without roundings of its own never refuses."""
        rounding = self.rounding
        if rounding is None:
            return None
        atol, rtol = tolerance
        bound = error_bound(rounding, ranges, shape.N, shape.d)
        if bound.representation <= atol + rtol * largest_magnitudes(ranges)[2]:
            return None
        return Refusal(self.name, RefusalKind.PRECISION, atol, bound.reason())

    def require(self, shape: Shape) -> None:
        refusal = self.refusal(shape)
        if refusal is not None:
            raise ShapeNotSupported(refusal.sentence())

    def launches_for(self, shape: Shape) -> tuple[Launch, ...]:
        """The launches of one pass on `shape`, in order (those whose `applies` holds)."""
        return tuple(launch for launch in self.launches if launch.applies(shape))

    def workspace_bytes(self, chunk: Shape) -> int:
        return sum(size(chunk) for size in self.workspace.values())


# CUDA's launch limits, the same on every GPU since sm_30 (the CUDA C Programming Guide's table).
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)  # each of x, y, z on its own, besides the 1024 threads in all
MAX_GRID_X = 2**31 - 1
MAX_GRID_YZ = 65535


def launch_beyond_limits(name: str, kernel: str, grid: Sequence[int], block: Sequence[int]) -> str | None:
    """The one sentence for a launch no CUDA GPU takes, or None: `run` refuses it before launching and
    `info` before describing it."""
    if min(grid) < 1 or grid[0] > MAX_GRID_X or any(g > MAX_GRID_YZ for g in grid[1:]):
        return (f"{name}: kernel {kernel} asks for grid {tuple(grid)}, beyond CUDA's limits "
                f"(x at most {MAX_GRID_X}, y and z at most {MAX_GRID_YZ}, none below 1)")
    if min(block) < 1 or math.prod(block) > MAX_THREADS_PER_BLOCK:
        return f"{name}: kernel {kernel} asks for block {tuple(block)}, beyond {MAX_THREADS_PER_BLOCK} threads"
    if any(b > most for b, most in zip(block, MAX_BLOCK_DIMS)):  # (1, 1, 128) was described, and failed at launch
        return (f"{name}: kernel {kernel} asks for block {tuple(block)}, beyond CUDA's limits "
                f"(x and y at most {MAX_BLOCK_DIMS[0]}, z at most {MAX_BLOCK_DIMS[2]})")
    return None


def capability_of(arch: str) -> tuple[int, int]:
    """sm_90a -> (9, 0)."""
    digits = arch.lower().removeprefix("sm_").rstrip("a")
    return int(digits[:-1]), int(digits[-1])


def one_kernel_variant(name: str, report: str, technique: str, *, grid: Callable[[Shape], Dims],
                       block: Callable[[Shape], Dims], args: tuple[str, ...], smem: Callable[[Shape], int] = lambda s: 0,
                       kernel: str | None = None, **facts: object) -> Variant:
    """A variant of one launch (most are): kernel flash_<name> in <name>.cu unless named otherwise."""
    source = str(facts.pop("source", f"{name}.cu"))
    return Variant(name=name, report=report, technique=technique, source=source,
                   launches=(Launch(kernel or f"flash_{name}", grid, block, args, smem),), **facts)  # type: ignore[arg-type]


def grid_rows(rows_per_block: int) -> Callable[[Shape], Dims]:
    """One block per `rows_per_block` query rows of each batch item."""
    return lambda s: (cdiv(s.N, rows_per_block), s.B, 1)


def threads(x: int, y: int = 1) -> Callable[[Shape], Dims]:
    """A fixed block of x * y threads."""
    return lambda s: (x, y, 1)


def f32_bytes(count: Callable[[Shape], int]) -> Callable[[Shape], int]:
    """Bytes of `count(shape)` float32 values, for workspaces."""
    return lambda s: 4 * count(s)
