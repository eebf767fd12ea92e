"""A compiled GPU variant bound to device buffers for one testcase: the pycuda backend's execution."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnbench.backends.device import GpuDevice
from attnbench.backends.gpu_fresh import DeviceFreshSamples
from attnbench.cases.fresh_values import InputRange
from attnbench.cases.testcase import Shape, Testcase
from attnbench.errors import DeviceMemoryError, KernelLaunchError, VariantUnsupported
from attnbench.kernels.variant import MAX_GRID_YZ, Variant, launch_beyond_limits
from attnbench.results.timed_check import SampleErrors

LOG2E = 1.4426950408889634
POISON_BITS = 0x7FC00000  # a quiet NaN: any element a kernel leaves unwritten shows up in verify
WORKSPACE_CAP_BYTES = 4 << 30
MEMORY_MARGIN_BYTES = 256 << 20


@dataclass(frozen=True)
class _LaunchRecord:
    kernel: str
    function: Any
    grid: tuple[int, ...]
    block: tuple[int, ...]
    smem: int
    args: tuple


def _arg_type(name: str) -> str:
    if name in ("B", "N", "d", "step"):
        return "i"
    if name in ("scale", "scale_log2"):
        return "f"
    return "P"


class GpuExecution:
    """A compiled variant bound to device buffers for one testcase.

    Given a Testcase, `upload` copies it over in one piece. Given only a Shape (the pipelined path),
    `allocate` makes the buffers and the caller fills `device_input` chunk by chunk, launching each
    chunk's kernels from `launch_records(b0, b1)` on its own stream.
    """

    def __init__(self, gpu: GpuDevice, variant: Variant, testcase: Testcase | Shape, flush_l2: bool = True) -> None:
        shape = testcase if isinstance(testcase, Shape) else testcase.shape
        variant.require(shape)
        refusal = variant.gpu_refusal(getattr(gpu, "compute_capability", None))
        if refusal is not None:
            raise VariantUnsupported(refusal.sentence())
        self.gpu = gpu
        self.driver = gpu.driver
        self.variant = variant
        self.testcase = None if isinstance(testcase, Shape) else testcase
        self.shape = shape
        self.device_name = gpu.name
        self.peak_flops = gpu.fp32_peak_flops
        self.limits = gpu.limits
        self.compiled = gpu.compile(variant, shape)
        self.compile_s = self.compiled.compile_seconds
        self.clock = gpu.clock(f"{variant.name} on {shape}")
        self.flush_bytes = gpu.l2_flush_pending_bytes() if flush_l2 else 0
        self.chunk = self._choose_chunk()
        self._buffers: dict[str, Any] = {}
        self._records: list[_LaunchRecord] = []
        self._prepared: set[str] = set()
        self._pointers: tuple[dict[str, int], int, dict[str, int]] = ({}, 0, {})
        self._fresh: DeviceFreshSamples | None = None
        # Layout "separate": Q, K and V de-interleaved on the host here, before anything is timed, so the
        # timed upload copies the same bytes as the interleaved layout, in three contiguous copies.
        self._host_inputs: dict[str, np.ndarray] = {}
        if self.testcase is not None:
            qkv = self.testcase.qkv
            self._host_inputs = ({name: np.ascontiguousarray(qkv[:, i]) for i, name in enumerate(("q", "k", "v"))}
                                 if variant.layout == "separate" else {"qkv": qkv})

    # -- memory ------------------------------------------------------------------------------
    def _choose_chunk(self) -> int:
        shape, variant = self.shape, self.variant
        # The whole batch's workspace per item: a variant may size it by the grid, not only by the items
        # (wgmma3x's key split is chosen for the whole batch's blocks).
        per_item = -(-variant.workspace_bytes(shape) // shape.B)
        fixed = 4 * shape.elements * 4 + self.flush_bytes  # Q, K, V and O, plus the L2 flush buffer
        free = self.gpu.free_memory()
        available = free - fixed - MEMORY_MARGIN_BYTES
        if available < per_item:
            need = fixed + per_item
            raise DeviceMemoryError(
                f"{variant.name} on {shape} needs {need / 2**30:.2f} GiB of device memory "
                f"(input {3 * shape.elements * 4 / 2**30:.2f}, output {shape.elements * 4 / 2**30:.2f}, "
                f"workspace {per_item / 2**30:.2f} for one batch item, L2 flush {self.flush_bytes / 2**30:.2f}) "
                f"but {self.gpu.name} has {free / 2**30:.2f} GiB free"
            )
        chunk = min(shape.B, variant.max_chunk, MAX_GRID_YZ)
        if per_item:
            chunk = min(chunk, max(1, min(available, max(per_item, WORKSPACE_CAP_BYTES)) // per_item))
        return max(1, chunk)

    def _alloc(self, name: str, nbytes: int) -> Any:
        try:
            buffer = self.driver.mem_alloc(max(nbytes, 4))
        except self.driver.MemoryError:
            self.free()
            raise DeviceMemoryError(
                f"{self.variant.name}: allocating {nbytes / 2**30:.2f} GiB for {name} failed on {self.gpu.name} "
                f"({self.gpu.free_memory() / 2**30:.2f} GiB free)"
            ) from None
        self._buffers[name] = buffer
        return buffer

    def allocate(self) -> None:
        """Allocate device buffers, poison the output and plan the launches (no input copied yet)."""
        shape = self.shape
        names = ("q", "k", "v") if self.variant.layout == "separate" else ("qkv",)
        inputs = {name: self._alloc(name, (1 if len(names) == 3 else 3) * shape.output_bytes) for name in names}
        out = self._alloc("out", shape.output_bytes)
        chunk_shape = Shape(self.chunk, shape.N, shape.d)
        sizes = {name: size(chunk_shape) for name, size in self.variant.workspace.items()}
        workspace = {name: self._alloc(name, nbytes) for name, nbytes in sizes.items()}
        for name, nbytes in sizes.items():  # zeroed once, not before each pass (Variant.workspace)
            self.driver.memset_d32(workspace[name], 0, max(nbytes, 4) // 4)
        self.driver.memset_d32(out, POISON_BITS, shape.elements)
        self._pointers = ({k: int(v) for k, v in inputs.items()}, int(out), {k: int(v) for k, v in workspace.items()})
        self._records = self.launch_records(0, shape.B)

    def upload(self) -> None:
        """Allocate device buffers, copy the input over and poison the output."""
        assert self.testcase is not None, "upload needs the testcase in host memory"
        self.allocate()
        for name, array in self._host_inputs.items():
            self.driver.memcpy_htod(self._buffers[name], array)

    @property
    def device_input(self) -> int:
        """Address of the device copy of Q, K, V (item b at + 12*b*N*d bytes); the interleaved layout only."""
        return self._pointers[0]["qkv"]

    @property
    def device_output(self) -> int:
        """Address of the device output O (item b at + 4*b*N*d bytes)."""
        return self._pointers[1]

    def launch_records(self, b0: int, b1: int) -> list[_LaunchRecord]:
        """The launches that compute batch items [b0, b1), in launch chunks of at most `chunk` items.

        An item's result may depend on how many items its launch holds (wgmma3x splits the key range of
        few-item launches), never on which launch computes it: launches of the same counts give the same
        bits, and every variant's workspace, sized for `chunk` items, holds any launch of fewer."""
        inputs, out, workspace = self._pointers
        return self._plan(inputs, out, workspace, b0, b1)

    def _plan(self, inputs: dict[str, int], out: int, workspace: dict[str, int], first: int,
              end: int) -> list[_LaunchRecord]:
        shape = self.shape
        N, d = shape.N, shape.d
        scalars: dict[str, Any] = {
            "N": np.int32(N),
            "d": np.int32(d),
            "scale": np.float32(1.0 / math.sqrt(d)),
            "scale_log2": np.float32(LOG2E / math.sqrt(d)),
        }
        records = []
        for b0 in range(first, end, self.chunk):
            count = min(self.chunk, end - b0)
            chunk = Shape(count, N, d)
            values = {
                **scalars,
                **workspace,
                # qkv holds 3*N*d floats per batch item; q, k and v N*d each
                **{name: pointer + 4 * b0 * (3 if name == "qkv" else 1) * N * d for name, pointer in inputs.items()},
                "B": np.int32(count),
                "out": out + 4 * b0 * N * d,
                "o": out + 4 * b0 * N * d,
            }
            geometry = []
            for launch in self.variant.launches_for(chunk):
                function = self.compiled.functions[launch.kernel]
                if launch.kernel not in self._prepared:
                    function.prepare("".join(_arg_type(a) for a in launch.args))
                    self._prepared.add(launch.kernel)
                grid = launch.grid_for(chunk, self.gpu.sm_count)
                block, smem = launch.block(chunk), launch.smem(chunk)
                self._check_geometry(launch.kernel, grid, block)
                self.gpu.allow_dynamic_smem(function, launch.kernel, smem)
                geometry.append((launch, function, grid, block, smem))
            for step in range(self.variant.steps(chunk)):
                values["step"] = np.int32(step)
                for launch, function, grid, block, smem in geometry:
                    args = tuple(values[a] for a in launch.args)
                    records.append(_LaunchRecord(launch.kernel, function, grid, block, smem, args))
        return records

    def _check_geometry(self, kernel: str, grid: tuple[int, ...], block: tuple[int, ...]) -> None:
        beyond = launch_beyond_limits(self.variant.name, kernel, grid, block)
        if beyond is not None:
            raise KernelLaunchError(beyond)

    # -- execution ---------------------------------------------------------------------------
    def run_pass(self) -> None:
        self.launch(self._records)

    def launch(self, records: list[_LaunchRecord], stream: Any = None) -> None:
        """Queue `records` on `stream` (the legacy default stream when None)."""
        record = None
        try:
            for record in records:
                record.function.prepared_async_call(
                    record.grid, record.block, stream, *record.args, shared_size=record.smem
                )
        except self.driver.Error as exc:
            kernel = record.kernel if record else "?"
            raise KernelLaunchError(f"{self.variant.name}: launching kernel {kernel} failed: {exc}") from None

    def _synchronize(self) -> None:
        try:
            self.driver.Context.synchronize()
        except self.driver.Error as exc:
            raise KernelLaunchError(f"{self.variant.name}: a kernel failed on {self.shape}: {exc}") from None

    def download(self) -> np.ndarray:
        self._synchronize()
        out = np.empty((self.shape.B, self.shape.N, self.shape.d), dtype=np.float32)
        try:
            self.driver.memcpy_dtoh(out, self._buffers["out"])
        except self.driver.Error as exc:
            raise KernelLaunchError(f"{self.variant.name}: reading the output back failed: {exc}") from None
        return out

    def flush_l2(self) -> None:
        self.gpu.flush_l2()

    # -- the fresh samples (bench.fresh_samples) -------------------------------------------------
    def poison_output(self, value: float = float("nan")) -> None:
        """Fill the output with NaN again, as before the first pass (or with another value)."""
        bits = POISON_BITS if math.isnan(value) else int(np.float32(value).view(np.uint32))
        self.driver.memset_d32(self._buffers["out"], bits, self.shape.elements)

    @property
    def fresh(self) -> DeviceFreshSamples:
        if self._fresh is None:
            s = self.shape
            self._fresh = DeviceFreshSamples(self.gpu, self._pointers[0], self._pointers[1], s.B, s.N, s.d)
        return self._fresh

    def refresh_inputs(self, seed: int, ranges: InputRange) -> None:
        """Fill the device input with `seed`'s values (device work only: a pass over the input's bytes)."""
        self.fresh.refresh(seed, ranges)

    def check_sample(self, seed: int, ranges: InputRange, rows: np.ndarray, atol: float,
                     rtol: float) -> SampleErrors:
        self._synchronize()
        return self.fresh.check(seed, ranges, rows, atol, rtol)

    def output_digest(self) -> np.ndarray:
        self._synchronize()
        return self.fresh.digest()

    def synchronize(self) -> None:
        """Wait for all work in the context, on every stream."""
        self._synchronize()

    def free(self) -> None:
        if self._fresh is not None:
            self._fresh.free()
            self._fresh = None
        for buffer in self._buffers.values():
            try:
                buffer.free()
            except Exception:
                pass
        self._buffers.clear()
        self._records = []
        self._host_inputs = {}
