"""Launch geometry of a variant on a shape, and theoretical occupancy, with no GPU.

The per-architecture limits are those of NVIDIA's CUDA C Programming Guide (compute capabilities
table) and its occupancy calculator (`cuda_occupancy.h`): registers are allocated per warp in units
of 256 from four sub-partitions of the register file, shared memory in units of 128 bytes (plus 1 KB
reserved per block from sm_80 on).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnbench.cases.testcase import Shape
from attnbench.errors import UnknownName
from attnbench.kernels.variant import MAX_GRID_YZ, Launch, Variant


@dataclass(frozen=True)
class GpuModel:
    """One GPU model's limits that decide occupancy and waves."""

    name: str
    arch: str  # sm_XY
    sm_count: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    smem_per_sm: int  # bytes, the largest shared-memory carve-out
    smem_per_block_optin: int  # bytes a block may ask for (dynamic, after opting in)
    smem_reserved_per_block: int  # bytes the driver reserves per block
    register_unit: int = 256  # registers are allocated per warp in multiples of this
    smem_unit: int = 128  # shared memory is allocated in multiples of this
    sub_partitions: int = 4

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // 32


# One representative model per architecture, as the course and the measurements used them.
GPU_MODELS: dict[str, GpuModel] = {
    "sm_61": GpuModel("GeForce GTX 1080", "sm_61", 20, 2048, 32, 65536, 255, 96 * 1024, 48 * 1024, 0, smem_unit=256),
    "sm_80": GpuModel("A100", "sm_80", 108, 2048, 32, 65536, 255, 164 * 1024, 163 * 1024, 1024),
    "sm_86": GpuModel("GeForce RTX 3090", "sm_86", 82, 1536, 16, 65536, 255, 100 * 1024, 99 * 1024, 1024),
    "sm_89": GpuModel("GeForce RTX 4090", "sm_89", 128, 1536, 24, 65536, 255, 100 * 1024, 99 * 1024, 1024),
    "sm_90": GpuModel("H100 / H200 (SXM)", "sm_90", 132, 2048, 32, 65536, 255, 228 * 1024, 227 * 1024, 1024),
}


def gpu_model(arch: str) -> GpuModel:
    """The model for `sm_XY` (sm_90a counts as sm_90); an unknown one names those known."""
    key = arch.lower().rstrip("a")
    if key not in GPU_MODELS:
        raise UnknownName(f"no GPU model for {arch!r}; known: {', '.join(GPU_MODELS)}")
    return GPU_MODELS[key]


@dataclass(frozen=True)
class Occupancy:
    """Theoretical occupancy of one kernel on one GPU model, and what limits it."""

    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str  # "threads", "blocks", "registers", "shared memory" (ties joined by "and"); "does not fit" when 0
    by_limit: dict[str, int]  # blocks per SM each limit allows

    @property
    def fraction(self) -> float:
        return self.warps_per_sm / self.max_warps_per_sm


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(model: GpuModel, threads_per_block: int, registers_per_thread: int, smem_per_block: int) -> Occupancy:
    """Blocks and warps per SM the limits allow (the occupancy calculator's rules)."""
    warps_per_block = -(-threads_per_block // 32)
    limits: dict[str, int] = {
        "threads": model.max_warps_per_sm // warps_per_block,
        "blocks": model.max_blocks_per_sm,
    }
    if registers_per_thread > 0:
        if registers_per_thread > model.max_registers_per_thread:
            limits["registers"] = 0
        else:
            per_warp = _round_up(registers_per_thread * 32, model.register_unit)
            warps_per_partition = (model.registers_per_sm // model.sub_partitions) // per_warp
            limits["registers"] = (warps_per_partition * model.sub_partitions) // warps_per_block
    if smem_per_block > model.smem_per_block_optin:
        limits["shared memory"] = 0
    elif smem_per_block > 0:
        allocated = _round_up(smem_per_block + model.smem_reserved_per_block, model.smem_unit)
        limits["shared memory"] = model.smem_per_sm // allocated
    blocks = min(limits.values())
    order = ["shared memory", "registers", "threads", "blocks"]
    limiter = "does not fit" if blocks == 0 else " and ".join(k for k in order if limits.get(k) == blocks)
    return Occupancy(blocks, blocks * warps_per_block, model.max_warps_per_sm, limiter, limits)


def chunk_shape(variant: Variant, shape: Shape) -> Shape:
    """The largest batch chunk one launch takes (the runner may take fewer items when workspaces are large)."""
    return Shape(min(shape.B, variant.max_chunk, MAX_GRID_YZ), shape.N, shape.d)


@dataclass(frozen=True)
class LaunchGeometry:
    """One kernel launch of a pass, for one chunk of the batch."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_smem: int
    launches_per_pass: int  # this kernel's launches over the whole batch (chunks x host steps)

    @property
    def blocks(self) -> int:
        return math.prod(self.grid)

    @property
    def threads_per_block(self) -> int:
        return math.prod(self.block)

    def waves(self, model: GpuModel, blocks_per_sm: int) -> float | None:
        """Grid blocks over the blocks all SMs hold at once; None when a block does not fit."""
        if blocks_per_sm == 0:
            return None
        return self.blocks / (blocks_per_sm * model.sm_count)


def launch_geometry(variant: Variant, shape: Shape) -> list[LaunchGeometry]:
    """Each launch's grid, block and dynamic shared memory for the first chunk of `shape` (the launches
    that apply to it)."""
    chunk = chunk_shape(variant, shape)
    chunks = -(-shape.B // chunk.B)
    steps = variant.steps(chunk)

    def one(launch: Launch) -> LaunchGeometry:
        return LaunchGeometry(launch.kernel, tuple(launch.grid(chunk)), tuple(launch.block(chunk)),  # type: ignore[arg-type]
                              launch.smem(chunk), chunks * steps)

    return [one(launch) for launch in variant.launches_for(chunk)]


@dataclass(frozen=True)
class KernelReport:
    """What `attnbench info` says about one kernel of a variant on one shape and GPU model."""

    geometry: LaunchGeometry
    registers: int | None  # from ptxas; None when nvcc could not say
    static_smem: int | None
    spills: int | None
    occupancy: Occupancy

    @property
    def smem_per_block(self) -> int:
        return (self.static_smem or 0) + self.geometry.dynamic_smem

    def misfit(self, model: GpuModel) -> str | None:
        """Why not one block of this kernel fits on an SM of `model` (it cannot launch there); None when it fits."""
        if self.occupancy.blocks_per_sm > 0:
            return None
        limits = self.occupancy.by_limit
        if limits.get("shared memory") == 0:
            static = f"static {self.static_smem:,} + " if self.static_smem else ""
            return (f"{self.geometry.kernel}: {self.smem_per_block:,} bytes of shared memory per block ({static}dynamic "
                    f"{self.geometry.dynamic_smem:,}), more than the {model.smem_per_block_optin:,} a block may have "
                    f"on {model.arch}: it cannot launch there")
        if limits.get("registers") == 0:
            return (f"{self.geometry.kernel}: {self.registers} registers per thread, more than the "
                    f"{model.max_registers_per_thread} of {model.arch}: it cannot launch there")
        return (f"{self.geometry.kernel}: a block of {self.geometry.threads_per_block} threads does not fit on an SM of "
                f"{model.arch} ({model.max_threads_per_sm} threads): it cannot launch there")


def kernel_reports(variant: Variant, shape: Shape, model: GpuModel, resources: dict,
                   static_only: bool = False) -> list[KernelReport]:
    """Geometry and theoretical occupancy per kernel; `resources` is ptxas's report (kernel -> KernelResources).
    `static_only`: the report is another architecture's, so only its static shared memory (the source's arrays)
    holds here; its registers and spills are not this architecture's and are left unknown."""
    reports = []
    for geometry in launch_geometry(variant, shape):
        found = resources.get(geometry.kernel)
        registers = found.registers if found and not static_only else None
        spills = found.spills if found and not static_only else None
        static = found.static_smem if found else None
        occ = occupancy(model, geometry.threads_per_block, registers or 0, (static or 0) + geometry.dynamic_smem)
        reports.append(KernelReport(geometry, registers, static, spills, occ))
    return reports
