"""The Triton peer: attnbench's own Triton flash-attention forward on the same float32 data, in the same process.

Triton launches on PyTorch's tensors and its current stream, in the device's primary context that pycuda's
`Gpu` has made current (as for the torch peer, `torch_peer`): one context, and the sampler's L2 flush and
CUDA events time it like every other variant. The flavour's unit names the precision of `tl.dot`: tf32x3
(`triton`, float32-accurate), ieee (`triton:ieee`, FFMA) or tf32 (`triton:tf32`, which fails the course
rule), or bf16x3 / bf16x6 (`triton:bf16x3`, `triton:bf16x6`) where the installed Triton offers them: asked of
its CUDA backend's options, not read from its version, and refused in one sentence where absent. The tiles
come from a small autotune, cached per shape bucket, GPU, Triton version and precision
(`triton_tune`); tuning and compiling happen before the first pass and count as compile time.

The input stays on the device as one (B, 3, N, d) tensor, as the file interleaves it: `q`, `k` and `v` are
views of it, so the inputs can be changed in place between passes.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

import numpy as np

from attnbench.backends import torch_fresh
from attnbench.backends.device import GpuDevice
from attnbench.backends.triton_tune import TileChoice, TileConfig, TuneKey, choose_tiles
from attnbench.cases.fresh_values import InputRange
from attnbench.cases.testcase import Testcase
from attnbench.errors import (DeviceMemoryError, KernelCompileError, KernelLaunchError, PeerUnavailable,
                              VariantUnsupported)
from attnbench.kernels.variant import Variant
from attnbench.locations import extra_install_command
from attnbench.results.timed_check import SampleErrors

LOG2E = 1.4426950408889634
TUNE_SAMPLES = 3  # timed launches per candidate, after the one that compiles it; the median decides
# The precision of tl.dot for each unit a flavour declares (the unit also picks the ceiling it is measured against).
PRECISION_OF_UNIT = {"tf32x3": "tf32x3", "ffma": "ieee", "tensor": "tf32", "bf16x3": "bf16x3", "bf16x6": "bf16x6"}
def _install() -> str:
    return f"install the triton extra ({extra_install_command('gpu,triton')}, with a CUDA build of torch)"


def import_triton() -> tuple[Any, Any]:
    """PyTorch with a usable CUDA device and Triton, or PeerUnavailable in one sentence."""
    try:
        import torch
    except ImportError:
        raise PeerUnavailable(
            f"the triton peer needs PyTorch (Triton launches on its tensors), which is not installed here: {_install()}, "
            "or leave triton out of --variants"
        ) from None
    try:
        import triton
    except ImportError:
        raise PeerUnavailable(
            f"the triton peer needs Triton, which is not installed here: {_install()}, or leave triton out of --variants"
        ) from None
    except Exception as exc:  # installed, but its native part cannot load
        raise PeerUnavailable(f"Triton is installed but cannot load ({' '.join(str(exc).split())[:160]}), "
                              "so the triton peer cannot run") from None
    if not torch.cuda.is_available():
        raise PeerUnavailable(
            f"PyTorch {torch.__version__} is installed but sees no CUDA device (a CPU-only build, or no driver), "
            "so the triton peer cannot run"
        )
    return torch, triton


def precision_of(variant: Variant) -> str:
    """The `input_precision` of tl.dot that the variant's unit stands for."""
    return PRECISION_OF_UNIT[variant.unit]


def offered_precisions() -> tuple[str, ...] | None:
    """The `input_precision` values the installed Triton's CUDA backend accepts for tl.dot; None where it does
    not say (an older layout of the package: then the compile itself is the judge)."""
    try:
        from triton.backends.nvidia.compiler import CUDAOptions
    except ImportError:  # Triton itself loads (import_triton): only this layout is missing
        return None
    offered = getattr(CUDAOptions, "allowed_dot_input_precisions", None)
    return tuple(offered) if offered else None


def precision_refusal(variant: Variant, precision: str, offered: tuple[str, ...] | None, version: str) -> str | None:
    """The one sentence for a precision the installed Triton does not offer, or None."""
    if offered is None or precision in offered:
        return None
    return (f"{variant.name} needs tl.dot's input_precision {precision!r}, which the installed Triton {version} does "
            f"not offer (it offers {', '.join(offered)})")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


class TritonExecution:
    """One testcase on the GPU that pycuda holds open, computed by the Triton kernel with tuned tiles."""

    def __init__(self, gpu: GpuDevice, variant: Variant, testcase: Testcase) -> None:
        if gpu is None:
            raise PeerUnavailable("the triton peer needs an open GPU")
        refusal = variant.gpu_refusal(getattr(gpu, "compute_capability", None))
        if refusal is not None:
            raise VariantUnsupported(refusal.sentence())
        self.torch, self.triton = import_triton()
        self.precision = precision_of(variant)
        refused = precision_refusal(variant, self.precision, offered_precisions(), str(self.triton.__version__))
        if refused is not None:
            raise PeerUnavailable(refused)
        from attnbench.backends import triton_kernel  # imports Triton, known to load by now

        self._kernel = triton_kernel
        self.gpu = gpu
        self.variant = variant
        self.testcase = testcase
        self.shape = testcase.shape
        self.device_name = gpu.name
        self.peak_flops = gpu.fp32_peak_flops
        self.limits = gpu.limits
        self.scale_log2 = float(np.float32(LOG2E / math.sqrt(self.shape.d)))
        self.qkv: Any = None
        self.out: Any = None
        self.clock: Any = gpu.clock(f"{variant.name} on {self.shape}")
        self._allocate()
        start = time.perf_counter()
        self.choice = self._choose()
        self.compile_s = time.perf_counter() - start  # tuning (when not cached) and compiling: not a timed pass

    # -- the inputs on the device: views of the interleaved tensor, for changing them in place ----------
    @property
    def q(self) -> Any:
        return self.qkv[:, 0]

    @property
    def k(self) -> Any:
        return self.qkv[:, 1]

    @property
    def v(self) -> Any:
        return self.qkv[:, 2]

    @property
    def config(self) -> TileConfig:
        return self.choice.config

    def _allocate(self) -> None:
        torch, s = self.torch, self.shape
        device = self._device()
        try:
            self.qkv = torch.empty((s.B, 3, s.N, s.d), dtype=torch.float32, device=device)
            self.out = torch.empty((s.B, s.N, s.d), dtype=torch.float32, device=device)
        except torch.cuda.OutOfMemoryError:
            self.free()
            raise DeviceMemoryError(
                f"{self.variant.name}: the inputs and output of {s} ({4 * s.elements * 4 / 2**30:.2f} GiB) "
                f"do not fit in {self.gpu.name}'s free memory"
            ) from None
        self._share_context(device)

    def _device(self) -> Any:
        """PyTorch's device for the GPU pycuda opened, made current."""
        from attnbench.backends.torch_peer import torch_device_index

        index = torch_device_index(self.torch, self.gpu)
        self.torch.cuda.set_device(index)
        return self.torch.device("cuda", index)

    def _share_context(self, device: Any) -> None:
        """Refuse a context other than pycuda's; time with PyTorch's events if it launches off the legacy stream."""
        from attnbench.backends.torch_peer import TorchEventClock

        current = self.gpu.driver.Context.get_current()
        if current is not None and getattr(current, "handle", None) != getattr(self.gpu.context, "handle", None):
            self.free()
            raise PeerUnavailable("PyTorch made a CUDA context current other than the device's primary context")
        # Triton launches on PyTorch's current stream; pycuda's events record on the legacy default stream.
        if self.torch.cuda.current_stream(device).cuda_stream != 0:
            self.clock = TorchEventClock(self.torch)

    def _synchronize(self) -> None:
        self.torch.cuda.synchronize()

    # -- tiles: tuned once per bucket, then read from the cache -------------------------------------
    def _choose(self) -> TileChoice:
        key = TuneKey.of(self.gpu.name, str(self.triton.__version__), self.precision, self.shape)
        try:
            choice = choose_tiles(key, self.shape, self._time_tiles, before_tuning=self._stage_input)
            if not choice.tuned:
                try:
                    self._warm(choice.config)
                except Exception:  # a cached choice that no longer builds here: tune again
                    choice = choose_tiles(key, self.shape, self._time_tiles, refresh=True,
                                          before_tuning=self._stage_input)
            return choice
        except Exception as exc:
            self.free()
            raise KernelCompileError(f"{self.variant.name}: no tile configuration compiles and runs on {self.shape}: "
                                     f"{_one_line(exc)}") from None

    def _stage_input(self) -> None:
        """The case's own input on the device, so the tuner times the kernel on the data it will run."""
        self.qkv.copy_(self.torch.from_numpy(np.ascontiguousarray(self.testcase.qkv)))

    def _warm(self, config: TileConfig) -> None:
        """Compile (or load) the kernel for `config` by launching it once, and wait for it."""
        self._launch(config)
        self._synchronize()

    def _time_tiles(self, config: TileConfig) -> float:
        """Milliseconds of one pass with `config` (the median of a few, each after an L2 flush)."""
        self._warm(config)
        samples = []
        for _ in range(TUNE_SAMPLES):
            self.gpu.flush_l2()
            self.clock.start()
            self._launch(config)
            samples.append(self.clock.stop())
        return statistics.median(samples)

    def _launch(self, config: TileConfig) -> None:
        s = self.shape
        self._kernel.launch(self.qkv, self.out, s.N, s.d, s.B, self.scale_log2, config.block_m, config.block_n,
                            config.num_warps, config.num_stages, self.precision)

    # -- the Execution steps ------------------------------------------------------------------
    def upload(self) -> None:
        """Copy the input over and poison the output with NaN (an element left unwritten fails the check)."""
        self._stage_input()
        self.out.fill_(float("nan"))

    def run_pass(self) -> None:
        try:
            self._launch(self.choice.config)
        except Exception as exc:
            raise KernelLaunchError(f"{self.variant.name}: launching the kernel failed on {self.shape}: {_one_line(exc)}") from None

    def download(self) -> np.ndarray:
        try:
            return self.out.cpu().numpy()
        except RuntimeError as exc:
            raise KernelLaunchError(f"{self.variant.name}: the kernel failed on {self.shape}: {_one_line(exc)}") from None

    def flush_l2(self) -> None:
        self.gpu.flush_l2()

    def poison_output(self, value: float = float("nan")) -> None:
        self.out.fill_(value)

    def refresh_inputs(self, seed: int, ranges: InputRange) -> None:
        """Q, K and V filled in place on the device from `seed` (`backends.torch_fresh`)."""
        torch_fresh.refresh(self.torch, (self.q, self.k, self.v), seed, ranges)

    def check_sample(self, seed: int, ranges: InputRange, rows: np.ndarray, atol: float,
                     rtol: float) -> SampleErrors:
        return torch_fresh.check(self.torch, self.q, self.k, self.v, self.out, rows, atol, rtol)

    def output_digest(self) -> np.ndarray:
        return torch_fresh.digest(self.torch, self.out)

    def synchronize(self) -> None:
        self._synchronize()

    def free(self) -> None:
        self.qkv = self.out = None
        try:
            self.torch.cuda.empty_cache()  # give the memory back for the next cell's own allocations
        except Exception:
            pass
