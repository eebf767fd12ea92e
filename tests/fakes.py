"""Fakes shared by several test modules: the parts of pycuda's driver that are written the same everywhere."""

from __future__ import annotations

from typing import Callable

import numpy as np

from attnbench.backends.host_sample_check import row_results
from attnbench.cases.fresh_values import stream_values
from attnbench.cases.reference import attention_rows_float64


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
    of its execution asserts."""

    pass_ms = 1.0

    def start(self) -> None:
        pass

    def stop(self) -> float:
        return self.pass_ms


class FakeFreshKernels:
    """cuda/fresh_samples.cu in numpy, over a fake driver's memory: `memory(address, nbytes)` is a uint8 view of
    the bytes there. `support_function("fresh_samples", name, signature)` of a fake GPU returns one of these."""

    def __init__(self, memory: Callable[[int, int], np.ndarray], name: str) -> None:
        self.memory, self.name = memory, name
        self.calls = 0

    def prepare(self, signature: str) -> None:
        pass

    def _floats(self, address, count) -> np.ndarray:
        return self.memory(int(address), 4 * int(count)).view(np.float32)

    def _u64(self, address, count) -> np.ndarray:
        return self.memory(int(address), 8 * int(count)).view(np.uint64)

    def prepared_call(self, grid, block, *args, shared_size=0) -> None:
        self.calls += 1
        getattr(self, self.name)(grid, *args)

    def _items(self, first, stride, B, per_item) -> list[np.ndarray]:
        return [self._floats(int(first) + 4 * b * int(stride), per_item) for b in range(int(B))]

    def fill_fresh(self, grid, first, stride, B, per_item, seed, low, span) -> None:
        for b, item in enumerate(self._items(first, stride, B, per_item)):
            item[:] = stream_values(int(seed), b * int(per_item), int(per_item), float(low), float(span))

    def scan_nonfinite(self, grid, out, n, totals) -> None:
        values = self._floats(out, n)
        bad = np.flatnonzero(~np.isfinite(values))
        t = self._u64(totals, 2)
        if bad.size:
            t[0] += np.uint64(bad.size)
            t[1] = min(int(t[1]), int(bad[0]))

    def exact_rows(self, grid, q, k, v, stride, N, d, rows, out, scale, atol, rtol, results) -> None:
        N, d, count, stride = int(N), int(d), grid[0], int(stride)
        flat = self.memory(int(rows), 8 * count).view(np.int64)
        tensors = [np.stack(self._items(x, stride, int(flat.max()) // N + 1, N * d)).reshape(-1, N, d) for x in (q, k, v)]
        items, within = flat // N, flat % N
        want = attention_rows_float64(tensors[0][items, within][:, None, :], tensors[1][items], tensors[2][items])[:, 0]
        got = self._floats(out, (int(flat.max()) + 1) * d).reshape(-1, d)[flat]
        self.memory(int(results), 40 * count).view(np.float64)[:] = row_results(got, want, float(atol),
                                                                                float(rtol)).reshape(-1)

    def row_digest(self, grid, out, rows, d, digests) -> None:
        values = self._floats(out, int(rows) * int(d)).reshape(int(rows), int(d))
        weights = np.arange(1, 2 * int(d), 2, dtype=np.uint64)
        with np.errstate(over="ignore"):
            self._u64(digests, int(rows))[:] = (values.view(np.uint32).astype(np.uint64) * weights).sum(axis=1)


def stand_in_collector(folder, monkeypatch):
    """This machine as one with a GPU and the kernel-records collector built: a file in `folder` stands in for
    the library (the programs the tests judge write the records file themselves)."""
    from pathlib import Path

    from attnbench.backends import kernel_records

    library = folder / kernel_records.LIBRARY_NAME
    library.parent.mkdir()
    library.write_bytes(b"\x7fELF stand-in")
    monkeypatch.setattr(kernel_records, "unavailable", lambda: None)
    monkeypatch.setattr(kernel_records, "collector_library", lambda: library)
    monkeypatch.setattr(kernel_records, "find_cupti", lambda: (Path("/usr/include"), Path("/usr/lib")))
    return library


class FakeClock:
    """A monotonic clock a test moves by hand (`clock.now += 2`)."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
