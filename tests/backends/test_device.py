"""attnbench.backends.device: the Gpu object has every member the GpuDevice protocol names."""

from __future__ import annotations

import inspect

from attnbench.backends.device import GpuDevice
from attnbench.backends.gpu import Gpu


def _members(protocol: type) -> tuple[set[str], set[str]]:
    """The protocol's data attributes (annotated) and its methods and properties."""
    data = set(protocol.__annotations__)
    callables = {name for name, value in vars(protocol).items()
                 if not name.startswith("_") and (callable(value) or isinstance(value, property))}
    return data, callables


def test_the_gpu_class_offers_what_the_protocol_asks_without_a_gpu():
    data, callables = _members(GpuDevice)
    assert {"index", "name", "compute_capability", "driver"} <= data and {"arch", "compile", "flush_l2"} <= callables
    assert all(hasattr(Gpu, name) for name in callables), sorted(n for n in callables if not hasattr(Gpu, n))
    opened = inspect.getsource(Gpu.__init__)  # data attributes are set when a device opens
    assert all(f"self.{name}" in opened for name in data), sorted(n for n in data if f"self.{n}" not in opened)
