"""The GPU through pycuda: opening a device, its facts, and compiling variants at run time.

Everything that imports pycuda lives here, so a machine without it (or without a GPU) gets one clear
sentence from `open_gpu` and the rest of attnbench keeps working.
"""

from __future__ import annotations

import atexit
import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnbench.errors import GpuUnavailable, KernelCompileError, KernelLaunchError
from attnbench.testcase import Shape
from attnbench.variants import Variant

CUDA_DIR = Path(__file__).resolve().parent.parent / "cuda"
BASE_NVCC_OPTIONS = ("-O3", "-std=c++17")

# FP32 lanes per SM by compute capability, for the FP32 peak (2 FLOPs per lane per clock).
_FP32_LANES = {(6, 0): 64, (7, 0): 64, (7, 5): 64, (8, 0): 64}


def _import_pycuda() -> Any:
    try:
        import pycuda.driver as driver
    except ImportError:
        raise GpuUnavailable(
            "pycuda is not installed, so no GPU variant can run: install the gpu extra with "
            "`pip install -e '.[gpu]'` (it needs the CUDA toolkit), or use --variant cpu"
        ) from None
    except Exception as exc:  # pycuda present but its native part cannot load (no driver library)
        raise GpuUnavailable(f"pycuda cannot load ({exc}); is the NVIDIA driver installed?") from None
    return driver


def gpu_probe() -> str | None:
    """None when a GPU is usable, else the sentence that says why not (no side effects kept)."""
    try:
        driver = _import_pycuda()
        driver.init()
        if driver.Device.count() == 0:
            return "no CUDA GPU is present"
    except GpuUnavailable as exc:
        return str(exc)
    except Exception as exc:
        return f"the CUDA driver cannot start ({exc})"
    return None


@dataclass
class CompiledVariant:
    """A variant's module for one set of defines, its kernels, and their resource usage."""

    variant: Variant
    module: Any
    functions: dict[str, Any]
    compile_seconds: float
    options: list[str]
    registers: dict[str, int] = field(default_factory=dict)
    static_smem: dict[str, int] = field(default_factory=dict)
    local_bytes: dict[str, int] = field(default_factory=dict)


def source_path(variant: Variant) -> Path:
    """A built-in's file under cuda/, or a user variant's own (absolute) file."""
    assert variant.source is not None, f"{variant.name} has no CUDA source"
    return CUDA_DIR / variant.source  # an absolute source stays as it is


def source_label(variant: Variant) -> str:
    """The source as messages name it: cuda/naive.cu, or the user's path."""
    return str(variant.source) if Path(str(variant.source)).is_absolute() else f"cuda/{variant.source}"


def source_text(variant: Variant) -> str:
    text = source_path(variant).read_text()
    if Path(str(variant.source)).is_absolute():  # nvcc's messages then name the user's file and line
        text = f'#line 1 "{source_path(variant)}"\n' + text
    return text


def source_hash(variant: Variant) -> str | None:
    """sha256 of the variant's source and the shared header, for saved results."""
    if variant.source is None or variant.backend != "gpu":
        return None
    digest = hashlib.sha256(source_path(variant).read_text().encode())  # the file itself, wherever it lies
    digest.update((CUDA_DIR / "common.cuh").read_bytes())
    return digest.hexdigest()[:16]


class Gpu:
    """One CUDA device with its primary context made current."""

    def __init__(self, index: int = 0) -> None:
        self.driver = driver = _import_pycuda()
        try:
            driver.init()
            count = driver.Device.count()
        except Exception as exc:
            raise GpuUnavailable(f"the CUDA driver cannot start ({exc}); is a GPU present?") from None
        if count == 0:
            raise GpuUnavailable("no CUDA GPU is present; use --variant cpu")
        if not 0 <= index < count:
            raise GpuUnavailable(f"--device {index} does not exist: this machine has {count} GPU(s), 0..{count - 1}")
        self.index = index
        self.device = driver.Device(index)
        self.context = self.device.retain_primary_context()
        self.context.push()
        self._open = True
        # Pop the context before pycuda's own exit hook runs (atexit runs hooks last-in first-out);
        # a context left on the stack makes pycuda abort the process at exit.
        atexit.register(self.close)
        attr = driver.device_attribute
        self.name: str = self.device.name()
        self.compute_capability: tuple[int, int] = self.device.compute_capability()
        self.sm_count: int = self.device.get_attribute(attr.MULTIPROCESSOR_COUNT)
        self.clock_khz: int = self.device.get_attribute(attr.CLOCK_RATE)
        self.memory_clock_khz: int = self.device.get_attribute(attr.MEMORY_CLOCK_RATE)
        self.l2_bytes: int = self.device.get_attribute(attr.L2_CACHE_SIZE)
        self.total_memory: int = self.device.total_memory()
        self._modules: dict[tuple, CompiledVariant] = {}

    @property
    def arch(self) -> str:
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @property
    def fp32_peak_flops(self) -> float:
        lanes = _FP32_LANES.get(self.compute_capability, 128)
        return 2.0 * lanes * self.sm_count * self.clock_khz * 1e3

    def free_memory(self) -> int:
        return self.driver.mem_get_info()[0]

    def facts(self) -> dict[str, Any]:
        """The device metadata that saved results carry."""
        import pycuda

        return {
            "name": self.name,
            "index": self.index,
            "compute_capability": ".".join(map(str, self.compute_capability)),
            "sm_count": self.sm_count,
            "sm_clock_mhz": self.clock_khz / 1e3,
            "memory_clock_mhz": self.memory_clock_khz / 1e3,
            "l2_bytes": self.l2_bytes,
            "total_memory_bytes": self.total_memory,
            "fp32_peak_tflops": self.fp32_peak_flops / 1e12,
            "driver_version": self.driver.get_driver_version(),
            "cuda_version": ".".join(map(str, self.driver.get_version())),
            "pycuda_version": ".".join(map(str, pycuda.VERSION)),
        }

    def compile(self, variant: Variant, shape: Shape) -> CompiledVariant:
        """Compile (or reuse) the variant's module for the defines this shape needs."""
        from pycuda.compiler import SourceModule

        defines = variant.defines(shape)
        key = (variant.name, variant.source, tuple(sorted(defines.items())))
        if key in self._modules:
            return self._modules[key]
        options = [*BASE_NVCC_OPTIONS, *variant.options, *(f"-D{k}={v}" for k, v in sorted(defines.items()))]
        start = time.perf_counter()
        try:
            module = SourceModule(
                source_text(variant),
                options=options,
                arch=self.arch,
                include_dirs=[str(CUDA_DIR), str(source_path(variant).parent)],
                no_extern_c=True,
            )
        except self.driver.CompileError as exc:
            message = (getattr(exc, "stderr", "") or getattr(exc, "msg", "") or str(exc)).strip()
            raise KernelCompileError(f"nvcc could not compile {source_label(variant)}:\n{message}") from None
        except self.driver.Error as exc:
            raise KernelCompileError(f"{source_label(variant)} compiled but could not be loaded: {exc}") from None
        seconds = time.perf_counter() - start
        compiled = CompiledVariant(variant, module, {}, seconds, options)
        fattr = self.driver.function_attribute
        for launch in variant.launches:
            if launch.kernel in compiled.functions:
                continue
            try:
                function = module.get_function(launch.kernel)
            except self.driver.LogicError:
                raise KernelCompileError(
                    f"{source_label(variant)} has no kernel named {launch.kernel!r} (is it extern \"C\"?)"
                ) from None
            compiled.functions[launch.kernel] = function
            compiled.registers[launch.kernel] = function.get_attribute(fattr.NUM_REGS)
            compiled.static_smem[launch.kernel] = function.get_attribute(fattr.SHARED_SIZE_BYTES)
            compiled.local_bytes[launch.kernel] = function.get_attribute(fattr.LOCAL_SIZE_BYTES)
        self._modules[key] = compiled
        return compiled

    def allow_dynamic_smem(self, function: Any, kernel: str, nbytes: int) -> None:
        """Raise a kernel's dynamic shared memory limit above the 48 KB default when it asks for more."""
        if nbytes <= 48 * 1024:
            return
        limit = self.device.get_attribute(self.driver.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        if nbytes > limit:
            raise KernelLaunchError(
                f"kernel {kernel} needs {nbytes} bytes of shared memory; {self.name} allows {limit} per block"
            )
        function.set_attribute(self.driver.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)

    def context_error(self) -> str | None:
        """None while the context works; else the driver's words (a kernel fault ends a context for good)."""
        try:
            self.driver.Context.synchronize()
            self.driver.mem_get_info()
        except self.driver.Error as exc:
            return str(exc)
        return None

    def throttle_reasons(self) -> list[str]:
        """Active clock-throttle reasons from NVML (empty when NVML is unavailable)."""
        try:
            import pynvml
        except ImportError:
            return []
        try:
            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
            mask = pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle)
        except Exception:
            return []
        names = {
            "nvmlClocksThrottleReasonSwPowerCap": "software power cap",
            "nvmlClocksThrottleReasonHwSlowdown": "hardware slowdown",
            "nvmlClocksThrottleReasonSwThermalSlowdown": "software thermal slowdown",
            "nvmlClocksThrottleReasonHwThermalSlowdown": "hardware thermal slowdown",
            "nvmlClocksThrottleReasonHwPowerBrakeSlowdown": "power brake",
        }
        return [text for attr, text in names.items() if mask & getattr(pynvml, attr, 0)]

    def close(self) -> None:
        """Release the context (idempotent)."""
        if not self._open:
            return
        self._open = False
        try:
            self.context.pop()
        except Exception:
            pass
