"""The GPU through pycuda: opening a device, its facts, and compiling variants at run time.

Everything that imports pycuda lives here, so a machine without it (or without a GPU) gets one clear
sentence from `open_gpu` and the rest of attnbench keeps working.
"""

from __future__ import annotations

import atexit
import time
from dataclasses import dataclass, field
from typing import Any

from attnbench.backends.base import event_ms
from attnbench.cases.testcase import Shape
from attnbench.errors import GpuUnavailable, KernelCompileError, KernelLaunchError
from attnbench.kernels.nvcc import compile_options, compile_source, include_dirs, source_file, source_label
from attnbench.kernels.variant import Launch, Variant
from attnbench.results.ceilings import cached_for
from attnbench.results.datasheet import DeviceFacts, fp32_peak_flops
from attnbench.results.limits import DeviceLimits
from attnbench.locations import extra_install_command, kernel_dir

# attnbench's own kernels that check what variants do (cuda/<name>.cu): fresh inputs, the samples' checks.
SUPPORT_SOURCES = ("fresh_samples",)

def _import_pycuda() -> Any:
    try:
        import pycuda.driver as driver
    except ImportError:
        raise GpuUnavailable(
            "pycuda is not installed, so no GPU variant can run: install the gpu extra with "
            f"{extra_install_command('gpu')} (it needs the CUDA toolkit)", remedy="or use --variant cpu"
        ) from None
    except Exception as exc:  # pycuda present but its native part cannot load (no driver library)
        raise GpuUnavailable(f"pycuda cannot load ({exc}); is the NVIDIA driver installed?") from None
    return driver


def device_capability(index: int = 0) -> tuple[int, int] | None:
    """The compute capability of a device, or None when it cannot be read."""
    try:
        driver = _import_pycuda()
        driver.init()
        return driver.Device(index).compute_capability()
    except Exception:
        return None


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


class EventClock:
    """CUDA events around a region of device work on the legacy default stream, in milliseconds."""

    def __init__(self, driver: Any, what: str) -> None:
        self.driver = driver
        self.what = what
        self._start: Any = None
        self._end: Any = None

    def start(self) -> None:
        self._start, self._end = self.driver.Event(), self.driver.Event()
        self._start.record()

    def stop(self) -> float:
        self._end.record()
        try:
            self._end.synchronize()
        except self.driver.Error as exc:
            raise KernelLaunchError(f"{self.what}: a kernel failed: {exc}") from None
        return event_ms(self._start.time_till(self._end))


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
            raise GpuUnavailable("no CUDA GPU is present", remedy="or use --variant cpu")
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
        self.memory_bus_bits: int = self.device.get_attribute(attr.GLOBAL_MEMORY_BUS_WIDTH)
        self.total_memory: int = self.device.total_memory()
        self._modules: dict[tuple, CompiledVariant] = {}
        self._l2_flush_buffer: Any = None
        self._nvml: Any = None  # (pynvml, handle) once opened; False when NVML cannot be had
        self._support_functions: dict[tuple[str, str], Any] = {}
        self._support_modules: dict[str, Any] = {}
        self._limits: DeviceLimits | None = None

    @property
    def l2_flush_bytes(self) -> int:
        """Bytes written to evict the L2 cache before a timed pass: twice its size."""
        return 2 * self.l2_bytes

    def l2_flush_pending_bytes(self) -> int:
        """Device memory the flush buffer will still take (0 once it is allocated)."""
        return 0 if self._l2_flush_buffer is not None else self.l2_flush_bytes

    def flush_l2(self) -> None:
        """Overwrite the L2 cache with a buffer twice its size, so the next pass starts cold."""
        if self._l2_flush_buffer is None:
            self._l2_flush_buffer = self.driver.mem_alloc(self.l2_flush_bytes)
        self.driver.memset_d32(self._l2_flush_buffer, 0, self.l2_flush_bytes // 4)

    def load_support_modules(self) -> None:
        """attnbench's own kernels (`SUPPORT_SOURCES`), read and compiled now: `compile` calls this before it
        builds any variant, so nothing a variant's build did can change what they are."""
        for source in SUPPORT_SOURCES:
            self._support_module(source)

    def _support_module(self, source: str) -> Any:
        module = self._support_modules.get(source)
        if module is None:
            from pycuda.compiler import SourceModule

            path = kernel_dir() / f"{source}.cu"
            try:
                # cache_dir=False: pycuda's compiler cache is a folder any process of this user can write, and
                # pycuda loads whatever cubin lies there under our source's key: a planted one would make inputs
                # that never change, or checks that pass anything. A cache of our own (keyed by the source's
                # sha256) would be as writable and could only be verified by compiling; this costs ~1 s a process.
                module = SourceModule(path.read_text(encoding="utf-8"), options=["-O3"], arch=self.arch, no_extern_c=True,
                                      cache_dir=False)
            except (self.driver.CompileError, self.driver.Error) as exc:
                raise KernelCompileError(f"nvcc could not compile {path}: {exc}") from None
            self._support_modules[source] = module
        return module

    def support_function(self, source: str, name: str, signature: str) -> Any:
        """attnbench's own kernel `name` from cuda/`source`.cu (not a variant), compiled once per process
        (`load_support_modules`) and prepared with `signature`."""
        if (source, name) not in self._support_functions:
            function = self._support_module(source).get_function(name)
            function.prepare(signature)
            self._support_functions[(source, name)] = function
        return self._support_functions[(source, name)]

    def clock(self, what: str) -> EventClock:
        return EventClock(self.driver, what)

    @property
    def arch(self) -> str:
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    def device_facts(self) -> DeviceFacts:
        """What the datasheet peaks and the physical floor are computed from."""
        return DeviceFacts(self.name, self.compute_capability, self.sm_count, self.clock_khz, self.l2_bytes,
                           self.memory_clock_khz, self.memory_bus_bits)

    @property
    def limits(self) -> DeviceLimits:
        """Its floor and peaks: the datasheet's facts and the ceilings cached for it, read once."""
        if self._limits is None:
            self._limits = DeviceLimits(self.device_facts(), cached_for(self))
        return self._limits

    @property
    def fp32_peak_flops(self) -> float:
        return fp32_peak_flops(self.device_facts())

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
            "memory_bus_bits": self.memory_bus_bits,
            "total_memory_bytes": self.total_memory,
            "fp32_peak_tflops": self.fp32_peak_flops / 1e12,
            "driver_version": self.driver.get_driver_version(),
            "cuda_version": ".".join(map(str, self.driver.get_version())),
            "pycuda_version": ".".join(map(str, pycuda.VERSION)),
        }

    def compile(self, variant: Variant, shape: Shape) -> CompiledVariant:
        """Compile (or reuse) the variant's module for the defines this shape needs, with the kernels of
        the launches that apply to the shape."""
        options = compile_options(variant, shape)
        key = (variant.name, str(source_file(variant)), tuple(options))
        compiled = self._modules.get(key)
        if compiled is None:
            self.load_support_modules()
            compiled = self._build(variant, options)
            self._modules[key] = compiled
        self._bind_kernels(compiled, variant.launches_for(shape))
        return compiled

    def _build(self, variant: Variant, options: list[str]) -> CompiledVariant:
        from pycuda.compiler import SourceModule

        where = source_label(variant)
        start = time.perf_counter()
        try:
            module = SourceModule(
                compile_source(variant),
                options=options,
                arch=variant.arch or self.arch,
                include_dirs=[str(folder) for folder in include_dirs(variant)],
                no_extern_c=True,
            )
        except self.driver.CompileError as exc:
            message = (getattr(exc, "stderr", "") or getattr(exc, "msg", "") or str(exc)).strip()
            raise KernelCompileError(f"nvcc could not compile {where}:\n{message}") from None
        except self.driver.Error as exc:
            raise KernelCompileError(f"{where} compiled but could not be loaded: {exc}") from None
        return CompiledVariant(variant, module, {}, time.perf_counter() - start, options)

    def _bind_kernels(self, compiled: CompiledVariant, launches: tuple[Launch, ...]) -> None:
        """Look up the kernels these launches name (a module serves several shapes, and a launch that does
        not apply to one shape may name a kernel its defines leave out)."""
        fattr = self.driver.function_attribute
        for launch in launches:
            if launch.kernel in compiled.functions:
                continue
            try:
                function = compiled.module.get_function(launch.kernel)
            except self.driver.LogicError:
                raise KernelCompileError(
                    f"{source_label(compiled.variant)} has no kernel named {launch.kernel!r} (is it extern \"C\"?)"
                ) from None
            compiled.functions[launch.kernel] = function
            compiled.registers[launch.kernel] = function.get_attribute(fattr.NUM_REGS)
            compiled.static_smem[launch.kernel] = function.get_attribute(fattr.SHARED_SIZE_BYTES)
            compiled.local_bytes[launch.kernel] = function.get_attribute(fattr.LOCAL_SIZE_BYTES)

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

    def _nvml_handle(self) -> tuple[Any, Any] | None:
        """pynvml and this device's handle, opened once; None without NVML (no pynvml, no libnvidia-ml).

        NVML numbers devices by PCI order and CUDA by speed unless CUDA_DEVICE_ORDER=PCI_BUS_ID: the
        handle is looked up by the device's PCI bus id, so the clock read is this device's."""
        if self._nvml is None:
            self._nvml = False
            try:
                import pynvml

                pynvml.nvmlInit()
                self._nvml = (pynvml, self._nvml_device(pynvml))
            except Exception:  # no pynvml, no driver library, or a device NVML does not manage
                pass
        return self._nvml or None

    def _nvml_device(self, pynvml: Any) -> Any:
        """This device's NVML handle by PCI bus id (nvidia-ml-py versions differ on str or bytes), else by
        index (right unless CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER renumber the devices)."""
        bus_id = self.device.pci_bus_id()
        for form in (bus_id, bus_id.encode()):
            try:
                return pynvml.nvmlDeviceGetHandleByPciBusId(form)
            except Exception:
                continue
        return pynvml.nvmlDeviceGetHandleByIndex(self.index)

    def sm_clock_mhz(self) -> float | None:
        """The SM clock now (NVML, MHz); None when NVML cannot say."""
        found = self._nvml_handle()
        if found is None:
            return None
        pynvml, handle = found
        try:
            return float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
        except Exception:
            return None

    def throttle_reasons(self) -> list[str]:
        """Active clock-throttle reasons from NVML (empty when NVML is unavailable)."""
        found = self._nvml_handle()
        if found is None:
            return []
        pynvml, handle = found
        try:
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
        if self._l2_flush_buffer is not None:
            try:
                self._l2_flush_buffer.free()
            except Exception:
                pass
            self._l2_flush_buffer = None
        try:
            self.context.pop()
        except Exception:
            pass
