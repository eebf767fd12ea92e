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
