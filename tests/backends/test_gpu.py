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
