"""The verified passes' input change on the device, in place: a few milliseconds even for the biggest cases.

The input never comes back to the host: the batch items move by device-to-device copies (cycle by cycle,
through one item of scratch) unless the scratch holds the whole input, and the rows move (and V's sign
flips) by our gather kernel, `cuda/permute_inputs.cu`, into the scratch, copied back over the input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnbench.backends.device import GpuDevice
from attnbench.backends.input_transform import InputTransform, batch_cycles
from attnbench.errors import DeviceMemoryError, KernelLaunchError

SCRATCH_CAP_BYTES = 4 << 30  # at most this much scratch (a quarter of the free memory at most); a smaller scratch
# moves the items cycle by cycle, one copy per item: thousands of copies, tens of ms a change, for a case like t11
MAX_GRID_Y = 65535
THREADS = 256


@dataclass(frozen=True)
class InputLayout:
    """Where each batch item's Q, K and V start (bytes), and the stride between items (floats)."""

    q: int
    k: int
    v: int
    stride: int


def input_layout(pointers: dict[str, int], N: int, d: int) -> InputLayout:
    """The layout of an execution's input buffers: interleaved `qkv`, or separate `q`, `k`, `v`."""
    if "qkv" in pointers:
        base = pointers["qkv"]
        return InputLayout(base, base + 4 * N * d, base + 8 * N * d, 3 * N * d)
    return InputLayout(pointers["q"], pointers["k"], pointers["v"], N * d)


def _scratch_layout(scratch: int, source: InputLayout, items: int, N: int, d: int) -> InputLayout:
    """The scratch laid out like the input, for `items` items (so a copy back is one copy per tensor buffer)."""
    if source.stride == 3 * N * d:
        return InputLayout(scratch, scratch + 4 * N * d, scratch + 8 * N * d, 3 * N * d)
    section = 4 * items * N * d
    return InputLayout(scratch, scratch + section, scratch + 2 * section, N * d)


def _buffers(layout: InputLayout, N: int, d: int) -> list[tuple[int, int]]:
    """(address, bytes per item) of each separately stored buffer: one for interleaved, three for separate."""
    if layout.stride == 3 * N * d:
        return [(layout.q, 12 * N * d)]
    return [(layout.q, 4 * N * d), (layout.k, 4 * N * d), (layout.v, 4 * N * d)]


class DevicePermuter:
    """Applies InputTransforms to one execution's device input in place."""

    def __init__(self, gpu: GpuDevice, pointers: dict[str, int], B: int, N: int, d: int) -> None:
        self.gpu, self.driver = gpu, gpu.driver
        self.B, self.N, self.d = B, N, d
        self.layout = input_layout(pointers, N, d)
        item_bytes = 12 * N * d
        budget = min(SCRATCH_CAP_BYTES, gpu.free_memory() // 4)
        self.items = max(1, min(B, budget // item_bytes))
        self._allocations: list[Any] = []

    def _device_array(self, values: np.ndarray) -> int:
        array = np.ascontiguousarray(values, dtype=np.int32)
        allocation = self._alloc(array.nbytes)
        self.driver.memcpy_htod(allocation, array)
        return int(allocation)

    def _alloc(self, nbytes: int) -> Any:
        try:
            allocation = self.driver.mem_alloc(max(4, nbytes))
        except self.driver.MemoryError:
            raise DeviceMemoryError(f"the verified pass could not allocate {nbytes / 2**20:.1f} MiB of scratch on "
                                    f"{self.gpu.name} to change the input") from None
        self._allocations.append(allocation)
        return allocation

    def apply(self, transform: InputTransform) -> None:
        """Change the device input by `transform` (queued on the legacy default stream)."""
        try:
            scratch = self._scratch()
            rows = (self._device_array(transform.q_rows), self._device_array(transform.kv_rows))
            sign = np.float32(-1.0 if transform.negate_v else 1.0)
            if self.items == self.B:  # the scratch holds it all: items and rows in one gather
                self._gather_all(scratch, transform.batch, rows, sign)
            else:
                self._move_items(scratch, transform.batch)
                step = min(self.items, MAX_GRID_Y)
                for b0 in range(0, self.B, step):
                    b1 = min(self.B, b0 + step)
                    self._gather(scratch, b0, np.arange(b0, b1), rows, sign)
                    self._copy_back(scratch, b0, b1 - b0)
        except self.driver.Error as exc:
            raise KernelLaunchError(f"changing the input for the verified pass failed: {exc}") from None
        finally:
            self.driver.Context.synchronize()  # the scratch is free to go once the copies back are done
            self.release()

    def _scratch(self) -> int:
        """Scratch for `self.items` items, or for one item when that much is not free (more, smaller steps)."""
        try:
            return int(self._alloc(12 * self.items * self.N * self.d))
        except DeviceMemoryError:
            if self.items == 1:
                raise
            self.items = 1
            return int(self._alloc(12 * self.N * self.d))

    def _gather_all(self, scratch: int, batch: np.ndarray, rows: tuple[int, int], sign: np.float32) -> None:
        for b0 in range(0, self.B, MAX_GRID_Y):
            self._gather(scratch, b0, batch[b0 : b0 + MAX_GRID_Y], rows, sign, scratch_first=b0)
        self._copy_back(scratch, 0, self.B)

    def _gather(self, scratch: int, b0: int, items: np.ndarray, rows: tuple[int, int], sign: np.float32,
                scratch_first: int = 0) -> None:
        """Gather input items `items` (rows moved, V's sign applied) into scratch items scratch_first...;
        the destination's layout is that of a scratch of `self.items` items."""
        N, d = self.N, self.d
        dst = _scratch_layout(scratch, self.layout, self.items, N, d)
        offset = 4 * scratch_first * dst.stride
        grid = ((N * d + THREADS - 1) // THREADS, len(items), 3)
        self.gpu.permute_function().prepared_call(
            grid, (THREADS, 1, 1), self.layout.q, self.layout.k, self.layout.v, np.int64(self.layout.stride),
            dst.q + offset, dst.k + offset, dst.v + offset, np.int64(dst.stride), self._device_array(items),
            rows[0], rows[1], np.int32(N), np.int32(d), sign)

    def _copy_back(self, scratch: int, b0: int, count: int) -> None:
        """Scratch items [0, count) over input items [b0, b0 + count), one copy per input buffer."""
        dst = _scratch_layout(scratch, self.layout, self.items, self.N, self.d)
        for (target, item_bytes), (source, _) in zip(_buffers(self.layout, self.N, self.d),
                                                      _buffers(dst, self.N, self.d)):
            self.driver.memcpy_dtod(target + b0 * item_bytes, source, count * item_bytes)

    def _move_items(self, scratch: int, batch: np.ndarray) -> None:
        """New item b takes old item batch[b], cycle by cycle, the cycle's first item parked in the scratch."""
        for cycle in batch_cycles(batch):
            for address, item_bytes in _buffers(self.layout, self.N, self.d):
                def at(b: int) -> int:
                    return address + b * item_bytes

                self.driver.memcpy_dtod(scratch, at(cycle[0]), item_bytes)
                for here, there in zip(cycle, cycle[1:]):
                    self.driver.memcpy_dtod(at(here), at(there), item_bytes)
                self.driver.memcpy_dtod(at(cycle[-1]), scratch, item_bytes)

    def release(self) -> None:
        for allocation in self._allocations:
            try:
                allocation.free()
            except Exception:
                pass
        self._allocations = []
