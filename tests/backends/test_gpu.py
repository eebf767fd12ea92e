"""attnbench.backends.gpu without a GPU: the NVML clock and throttle reasons through a fake pynvml, the
clock unknown without NVML, and the device's facts as data."""

from __future__ import annotations

import sys
import types

import pytest

from attnbench.backends.gpu import Gpu
from attnbench.results.datasheet import DeviceFacts


class FakeDevice:
    def pci_bus_id(self) -> str:
        return "0000:19:00.0"


def bare_gpu() -> Gpu:
    """A Gpu with the attributes an open one has, without pycuda or a device."""
    gpu = object.__new__(Gpu)
    gpu.index, gpu.device, gpu._nvml = 3, FakeDevice(), None
    gpu.name, gpu.compute_capability, gpu.sm_count, gpu.clock_khz = "NVIDIA H200", (9, 0), 132, 1_980_000
    gpu.l2_bytes, gpu.memory_clock_khz, gpu.memory_bus_bits = 60 * 2**20, 3_201_000, 6144
    return gpu


def fake_pynvml(clock: float = 1755.0) -> types.ModuleType:
    calls: list[object] = []
    module = types.ModuleType("pynvml")
    module.NVML_CLOCK_SM = 1
    module.nvmlClocksThrottleReasonSwPowerCap = 0x4
    module.nvmlInit = lambda: None

    def by_bus(bus_id):  # this version wants bytes
        if not isinstance(bus_id, bytes):
            raise TypeError("bytes expected")
        calls.append(bus_id)
        return ("handle", bus_id)

    module.nvmlDeviceGetHandleByPciBusId = by_bus
    module.nvmlDeviceGetHandleByIndex = lambda index: pytest.fail("looked up by index")
    module.nvmlDeviceGetClockInfo = lambda handle, which: clock if which == 1 else 0
    module.nvmlDeviceGetCurrentClocksThrottleReasons = lambda handle: 0x4
    module.calls = calls
    return module


def test_the_sm_clock_and_throttle_reasons_come_from_this_devices_nvml_handle(monkeypatch):
    module = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    gpu = bare_gpu()
    assert gpu.sm_clock_mhz() == 1755.0 and gpu.sm_clock_mhz() == 1755.0
    assert gpu.throttle_reasons() == ["software power cap"]
    assert module.calls == [b"0000:19:00.0"]  # opened once, by PCI bus id


def test_without_nvml_the_clock_is_unknown(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    gpu = bare_gpu()
    assert gpu.sm_clock_mhz() is None and gpu.throttle_reasons() == []


def test_the_devices_facts_are_data():
    gpu = bare_gpu()
    assert gpu.device_facts() == DeviceFacts("NVIDIA H200", (9, 0), 132, 1_980_000, 60 * 2**20, 3_201_000, 6144)
    assert gpu.fp32_peak_flops == pytest.approx(2 * 128 * 132 * 1.98e9)


def test_our_support_kernels_are_compiled_past_pycudas_cache_before_any_variant(monkeypatch):
    """pycuda's compiler cache is a folder any process of the user can write: a cubin planted there under the key
    of cuda/fresh_samples.cu would be loaded as ours. So ours are built with the cache off (cache_dir=False), and
    read and built before the first variant is, so nothing a variant's build does can change them."""
    built: list[tuple[str, dict]] = []

    class FakeModule:
        def __init__(self, source: str, **options: object) -> None:
            built.append((source, options))

        def get_function(self, name: str) -> types.SimpleNamespace:
            return types.SimpleNamespace(prepare=lambda signature: None)

    compiler = types.ModuleType("pycuda.compiler")
    compiler.SourceModule = FakeModule
    monkeypatch.setitem(sys.modules, "pycuda", types.ModuleType("pycuda"))
    monkeypatch.setitem(sys.modules, "pycuda.compiler", compiler)
    gpu = bare_gpu()
    gpu.driver = types.SimpleNamespace(CompileError=RuntimeError, Error=RuntimeError)
    gpu._modules, gpu._support_modules, gpu._support_functions = {}, {}, {}
    order: list[str] = []
    monkeypatch.setattr(Gpu, "_build", lambda self, variant, options: order.append("variant") or object())
    monkeypatch.setattr(Gpu, "_bind_kernels", lambda self, compiled, launches: None)
    real_load = Gpu.load_support_modules
    monkeypatch.setattr(Gpu, "load_support_modules", lambda self: order.append("support") or real_load(self))

    from attnbench.cases.testcase import Shape
    from attnbench.kernels.catalogue import get_variant

    gpu.compile(get_variant("naive"), Shape(1, 64, 32))
    assert order == ["support", "variant"]
    assert [options["cache_dir"] for _, options in built] == [False]
    assert "fill_fresh" in built[0][0]
    gpu.support_function("fresh_samples", "fill_fresh", "PqiqQff")
    assert len(built) == 1  # once a process
