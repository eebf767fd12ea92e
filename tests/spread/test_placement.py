"""spread/placement.py: where a compare's cells run, and what the parent reads of the first device."""

import sys
import types

from attnbench.spread.devices import Device
from attnbench.spread.placement import first_device_facts


def test_the_first_devices_facts_start_cuda_in_this_process_first(monkeypatch):
    """The parent never opened a context (its workers do): pycuda's Device() before init() fails with
    'cuDeviceGet failed: initialization error', which once stopped every `compare --gpus all`."""
    started = []

    class FakeDevice:
        def __init__(self, index):
            if not started:
                raise RuntimeError("cuDeviceGet failed: initialization error")
            self.index = index

        def name(self):
            return f"GPU {self.index}"

        def get_attribute(self, attribute):
            return 132

    driver = types.ModuleType("pycuda.driver")
    driver.init = lambda: started.append(True)
    driver.Device = FakeDevice
    driver.device_attribute = types.SimpleNamespace(MULTIPROCESSOR_COUNT="sm")
    package = types.ModuleType("pycuda")
    package.driver = driver
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    facts = first_device_facts([Device(1), Device(0)])
    assert (facts.name, facts.sm_count) == ("GPU 1", 132)
    assert first_device_facts([Device(0, stand_in=True)]) is None


def test_every_executor_runs_a_matrix_and_a_compare_here_goes_through_in_process(monkeypatch):
    """The one-device run is chosen where the others are (`choose_executor`), and runs its case groups
    through the seam (`InProcess`), not a loop of its own."""
    from attnbench import api
    from attnbench.spread import executor, placement

    assert set(placement._RUNNERS) == {kind.name for kind in executor.EXECUTORS}
    ran, real = [], executor.InProcess.run

    def recorded(self, jobs, listener):
        ran.append([bench_input.label for bench_input, _ in jobs])
        return real(self, jobs, listener)

    monkeypatch.setattr(executor.InProcess, "run", recorded)
    result = api.compare("cpu", "odd_17x48,odd_33x64", timing=api.TimingOptions(reps=1))
    assert ran == [["odd_17x48", "odd_33x64"]] and [c.status for c in result.cells] == ["ok", "ok"]
    assert result.settings.executor is None  # a run here records no executor, as before
