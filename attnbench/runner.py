"""The runner: joins a testcase and a variant, executes it, times it, and returns a Measurement.

An Execution owns one variant's resources for one testcase (device buffers, compiled kernels, the
launch plan) and offers the same four steps whatever the backend: upload, one pass, download, free.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

from attnbench.errors import DeviceMemoryError, KernelLaunchError
from attnbench.testcase import Shape, Testcase
from attnbench.timing import KernelStats, TimingPolicy, measure
from attnbench.variants import SCALAR_ARGS, Variant
from attnbench.verify import VerifyReport

LOG2E = 1.4426950408889634
POISON_BITS = 0x7FC00000  # a quiet NaN: any element a kernel leaves unwritten shows up in verify
WORKSPACE_CAP_BYTES = 4 << 30
MEMORY_MARGIN_BYTES = 256 << 20
MAX_GRID_YZ = 65535
MAX_GRID_X = 2**31 - 1


@dataclass
class Measurement:
    """One variant on one testcase: phase times, kernel statistics, throughput, verdict."""

    variant: str
    case: str
    shape: Shape
    device: str
    compute_s: float
    kernel: KernelStats
    compile_s: float = 0.0
    input_s: float | None = None
    output_s: float | None = None
    peak_flops: float | None = None
    verification: VerifyReport | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def flops(self) -> int:
        return self.shape.flops

    @property
    def tflops(self) -> float:
        return self.flops / (self.kernel.median * 1e-3) / 1e12

    @property
    def peak_fraction(self) -> float | None:
        return self.tflops * 1e12 / self.peak_flops if self.peak_flops else None

    @property
    def total_s(self) -> float:
        return (self.input_s or 0.0) + self.compute_s + (self.output_s or 0.0)

    def to_dict(self) -> dict:
        return {
            "variant": self.variant,
            "case": self.case,
            "shape": {"B": self.shape.B, "N": self.shape.N, "d": self.shape.d},
            "device": self.device,
            "input_s": self.input_s,
            "compute_s": self.compute_s,
            "output_s": self.output_s,
            "total_s": self.total_s,
            "compile_s": self.compile_s,
            "kernel": self.kernel.to_dict(),
            "flops": self.flops,
            "tflops": self.tflops,
            "peak_flops": self.peak_flops,
            "peak_fraction": self.peak_fraction,
            "verification": self.verification.to_dict() if self.verification else None,
            "warnings": self.warnings + self.kernel.warnings,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Measurement":
        """Rebuild a saved measurement (its verification is kept separately by saved results)."""
        kernel = KernelStats.from_dict(data["kernel"])
        shape = data["shape"]
        return cls(
            variant=data["variant"],
            case=data["case"],
            shape=Shape(shape["B"], shape["N"], shape["d"]),
            device=data["device"],
            compute_s=data["compute_s"],
            kernel=kernel,
            compile_s=data.get("compile_s", 0.0),
            input_s=data.get("input_s"),
            output_s=data.get("output_s"),
            peak_flops=data.get("peak_flops"),
            warnings=[w for w in data.get("warnings", []) if w not in kernel.warnings],
        )


class Execution(Protocol):
    """What the runner needs from a backend."""

    device_name: str
    peak_flops: float | None
    compile_s: float

    def upload(self) -> None: ...

    def run_pass(self) -> None: ...

    def download(self) -> np.ndarray: ...

    def sample_ms(self, flush_l2: bool) -> float: ...

    def batch_ms(self, passes: int) -> float: ...

    def free(self) -> None: ...


class CpuExecution:
    """The numpy variant: a pass computes the output on the host."""

    peak_flops = None
    compile_s = 0.0

    def __init__(self, testcase: Testcase) -> None:
        import platform

        self.testcase = testcase
        self.device_name = f"CPU ({platform.processor() or platform.machine()})"
        self.output: np.ndarray | None = None

    def upload(self) -> None:
        pass

    def run_pass(self) -> None:
        from attnbench.cpu_flash import flash_attention_cpu

        self.output = flash_attention_cpu(self.testcase)

    def download(self) -> np.ndarray:
        assert self.output is not None
        return self.output

    def sample_ms(self, flush_l2: bool) -> float:
        start = time.perf_counter()
        self.run_pass()
        return (time.perf_counter() - start) * 1e3

    def batch_ms(self, passes: int) -> float:
        """Milliseconds for `passes` passes in a row (the square-attention lab's timing)."""
        start = time.perf_counter()
        for _ in range(passes):
            self.run_pass()
        return (time.perf_counter() - start) * 1e3

    def free(self) -> None:
        self.output = None


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
    """A compiled variant bound to device buffers for one testcase."""

    def __init__(self, gpu: Any, variant: Variant, testcase: Testcase, flush_l2: bool = True) -> None:
        variant.require(testcase.shape)
        self.gpu = gpu
        self.driver = gpu.driver
        self.variant = variant
        self.testcase = testcase
        self.shape = shape = testcase.shape
        self.device_name = gpu.name
        self.peak_flops = gpu.fp32_peak_flops
        self.compiled = gpu.compile(variant, shape)
        self.compile_s = self.compiled.compile_seconds
        self.flush_bytes = 2 * gpu.l2_bytes if flush_l2 else 0
        self.chunk = self._choose_chunk()
        self._buffers: dict[str, Any] = {}
        self._records: list[_LaunchRecord] = []
        self._prepared: set[str] = set()
        # Layout "separate": Q, K and V de-interleaved on the host here, before anything is timed, so
        # the timed upload copies the same bytes as the interleaved layout, in three contiguous copies.
        self._host_inputs: dict[str, np.ndarray] = (
            {name: np.ascontiguousarray(testcase.qkv[:, i]) for i, name in enumerate(("q", "k", "v"))}
            if variant.layout == "separate" else {"qkv": testcase.qkv}
        )

    # -- memory ------------------------------------------------------------------------------
    def _choose_chunk(self) -> int:
        shape, variant = self.shape, self.variant
        per_item = variant.workspace_bytes(Shape(1, shape.N, shape.d))
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

    def upload(self) -> None:
        """Allocate device buffers, copy the input over and poison the output."""
        shape = self.shape
        inputs = {name: self._alloc(name, array.nbytes) for name, array in self._host_inputs.items()}
        out = self._alloc("out", shape.output_bytes)
        chunk_shape = Shape(self.chunk, shape.N, shape.d)
        workspace = {name: self._alloc(name, size(chunk_shape)) for name, size in self.variant.workspace.items()}
        if self.flush_bytes:
            self._alloc("l2_flush", self.flush_bytes)
        for name, array in self._host_inputs.items():
            self.driver.memcpy_htod(inputs[name], array)
        self.driver.memset_d32(out, POISON_BITS, shape.elements)
        self._records = self._plan({k: int(v) for k, v in inputs.items()}, int(out),
                                   {k: int(v) for k, v in workspace.items()})

    def _plan(self, inputs: dict[str, int], out: int, workspace: dict[str, int]) -> list[_LaunchRecord]:
        shape = self.shape
        N, d = shape.N, shape.d
        scalars: dict[str, Any] = {
            "N": np.int32(N),
            "d": np.int32(d),
            "scale": np.float32(1.0 / math.sqrt(d)),
            "scale_log2": np.float32(LOG2E / math.sqrt(d)),
        }
        records = []
        for b0 in range(0, shape.B, self.chunk):
            count = min(self.chunk, shape.B - b0)
            chunk = Shape(count, N, d)
            # qkv: 3*N*d floats per batch item; q, k, v: N*d each
            per_item = {name: (3 if name == "qkv" else 1) * N * d for name in inputs}
            values = {
                **scalars,
                **workspace,
                **{name: pointer + 4 * b0 * per_item[name] for name, pointer in inputs.items()},
                "B": np.int32(count),
                "out": out + 4 * b0 * N * d,
                "o": out + 4 * b0 * N * d,
            }
            geometry = []
            for launch in self.variant.launches:
                function = self.compiled.functions[launch.kernel]
                if launch.kernel not in self._prepared:
                    function.prepare("".join(_arg_type(a) for a in launch.args))
                    self._prepared.add(launch.kernel)
                grid, block, smem = launch.grid(chunk), launch.block(chunk), launch.smem(chunk)
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
        if min(grid) < 1 or grid[0] > MAX_GRID_X or any(g > MAX_GRID_YZ for g in grid[1:]):
            raise KernelLaunchError(f"{self.variant.name}: kernel {kernel} asks for grid {grid}, beyond CUDA's limits")
        if min(block) < 1 or math.prod(block) > 1024:
            raise KernelLaunchError(f"{self.variant.name}: kernel {kernel} asks for block {block}, beyond 1024 threads")

    # -- execution ---------------------------------------------------------------------------
    def run_pass(self) -> None:
        record = None
        try:
            for record in self._records:
                record.function.prepared_async_call(
                    record.grid, record.block, None, *record.args, shared_size=record.smem
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

    def sample_ms(self, flush_l2: bool) -> float:
        if flush_l2 and "l2_flush" in self._buffers:
            self.driver.memset_d32(self._buffers["l2_flush"], 0, self.flush_bytes // 4)
        return self._timed_ms(1)

    def batch_ms(self, passes: int) -> float:
        """Milliseconds for `passes` passes back to back, no L2 flush (the square-attention lab's timing)."""
        return self._timed_ms(passes)

    def _timed_ms(self, passes: int) -> float:
        """CUDA events around `passes` passes (the flush, if any, happened before the start event)."""
        start, end = self.driver.Event(), self.driver.Event()
        start.record()
        for _ in range(passes):
            self.run_pass()
        end.record()
        try:
            end.synchronize()
        except self.driver.Error as exc:
            raise KernelLaunchError(f"{self.variant.name}: a kernel failed on {self.shape}: {exc}") from None
        return start.time_till(end)

    def free(self) -> None:
        for buffer in self._buffers.values():
            try:
                buffer.free()
            except Exception:
                pass
        self._buffers.clear()
        self._records = []
        self._host_inputs = {}


def make_execution(variant: Variant, testcase: Testcase, gpu: Any | None, flush_l2: bool = True) -> Execution:
    """The backend object for a variant (GPU variants need an open Gpu)."""
    variant.require(testcase.shape)
    if variant.backend == "cpu":
        return CpuExecution(testcase)
    if variant.backend == "torch":
        from attnbench.torch_peer import TorchExecution

        return TorchExecution(gpu, testcase)
    assert gpu is not None, "a GPU variant needs an open GPU"
    return GpuExecution(gpu, variant, testcase, flush_l2)


Timer = Callable[[Execution, TimingPolicy], KernelStats]


def engine_timer(execution: Execution, policy: TimingPolicy) -> KernelStats:
    """The default timing: warm-up, then samples until the policy's noise target or limits."""
    return measure(lambda: execution.sample_ms(policy.flush_l2), policy)


def _time(execution: Execution, policy: TimingPolicy, compute_s: float, timer: Timer | None = None) -> KernelStats:
    """Kernel statistics after the first pass; a host pass already timed counts as the first sample."""
    if timer is not None:
        return timer(execution, policy)
    if isinstance(execution, CpuExecution):
        return measure(lambda: execution.sample_ms(policy.flush_l2), policy, first_samples=[compute_s * 1e3])
    return engine_timer(execution, policy)


@dataclass
class CheckedRun:
    """A gated execution: the check of the first pass, and the measurement only if it passed."""

    check: Any  # anything with a boolean `passed` (a VerifyReport, or a workload's own rule)
    measurement: Measurement | None  # None for a wrong output: a wrong answer gets no speed


def _first_pass(execution: Execution) -> tuple[np.ndarray, float]:
    """Upload, one pass and download, timed as the course times 'computing'."""
    start = time.perf_counter()
    execution.upload()
    execution.run_pass()
    output = execution.download()
    return output, time.perf_counter() - start


def _measurement(variant: Variant, case_label: str, testcase: Testcase, gpu: Any | None, execution: Execution,
                 compute_s: float, stats: KernelStats) -> Measurement:
    measurement = Measurement(
        variant=variant.name,
        case=case_label,
        shape=testcase.shape,
        device=execution.device_name,
        compute_s=compute_s,
        kernel=stats,
        compile_s=execution.compile_s,
        peak_flops=execution.peak_flops,
    )
    if gpu is not None and variant.backend != "cpu":
        reasons = gpu.throttle_reasons()
        if reasons:
            measurement.warnings.append(
                f"the GPU reports clock throttling ({', '.join(reasons)}): let it cool or lower its load, then rerun"
            )
    return measurement


def execute(
    variant: Variant,
    testcase: Testcase,
    case_label: str,
    gpu: Any | None,
    policy: TimingPolicy,
) -> tuple[np.ndarray, Measurement]:
    """Compute the output once (timed as the course times 'computing'), then time repeated passes."""
    execution = make_execution(variant, testcase, gpu, policy.flush_l2)
    try:
        output, compute_s = _first_pass(execution)
        stats = _time(execution, policy, compute_s)
    except KernelLaunchError as exc:  # name the case too: the user may have run several
        raise KernelLaunchError(f"{exc} (case {case_label})") from None
    finally:
        execution.free()
    return output, _measurement(variant, case_label, testcase, gpu, execution, compute_s, stats)


def execute_checked(
    variant: Variant,
    testcase: Testcase,
    case_label: str,
    gpu: Any | None,
    policy: TimingPolicy,
    check: Callable[[np.ndarray], Any],
    timer: Timer | None = None,
) -> CheckedRun:
    """Correctness gates speed: check the first pass's output, and time the variant only if it passed.

    `check` receives the output and returns an object with `passed`; `timer` replaces the default
    timing engine (the square-attention lab's doubling rule is one).
    """
    execution = make_execution(variant, testcase, gpu, policy.flush_l2)
    try:
        output, compute_s = _first_pass(execution)
        result = check(output)
        del output
        if not result.passed:
            return CheckedRun(result, None)
        stats = _time(execution, policy, compute_s, timer)
    finally:
        execution.free()
    return CheckedRun(result, _measurement(variant, case_label, testcase, gpu, execution, compute_s, stats))


__all__ = ["CheckedRun", "Measurement", "Timer", "execute", "execute_checked", "make_execution", "SCALAR_ARGS"]
