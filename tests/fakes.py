"""Fakes shared by several test modules: the parts of pycuda's driver that are written the same everywhere."""

from __future__ import annotations


class FakeDriverVersion:
    """pycuda.driver as far as the driver's version (CUDA 13.0): what the metadata and the ceilings cache read."""

    @staticmethod
    def get_driver_version() -> int:
        return 13000


class FakeEvent:
    """A pycuda Event that records nothing and times every interval at `elapsed_ms`."""

    elapsed_ms = 1.0

    def record(self) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def time_till(self, other: FakeEvent) -> float:
        return self.elapsed_ms


class SteadyClock:
    """A sampler clock for fake kernels: every pass takes `pass_ms`. A fake kernel's host time is not what a test
    of its execution asserts, and on a loaded machine a host clock lets the verified passes' time rule call an
    honest fake's pass skipped work."""

    pass_ms = 1.0

    def start(self) -> None:
        pass

    def stop(self) -> float:
        return self.pass_ms
