"""The verified passes' check on the device, for the pycuda backend: no output read back, no host pass over it.

Right after the first pass's output is read back (so: the bytes the host checks), the device copies it
once, device to device (`DeviceOutputCheck.keep`); after each verified pass, our kernel
`cuda/check_moved_output.cu` compares the output with that copy moved by the pass's transform and
returns four numbers. Reading back and checking two outputs on the host cost as much as a cell's
samples on the biggest cases; this costs a copy on the device and a fraction of a millisecond a pass.

The kernel under test runs between the copy and the checks (the samples, the verified passes), on the
same device, so it could in principle write into the kept copy. The check kernel sums the bits of every
kept element it reads (each exactly once: the transforms are permutations); a sum that is not the one
taken right after the copy, before anything else ran, means the copy changed, and the caller checks
that pass on the host instead, against the host's copy. The index arrays and the totals are allocated
after the pass, so no kernel under test has seen them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnbench.backends.device import GpuDevice
from attnbench.backends.input_transform import InputTransform
from attnbench.errors import KernelLaunchError

THREADS = 256
MAX_GRID_Y = 65535
BLOCKS_PER_ITEM_CAP = 4096  # enough blocks to fill a GPU for a few long items; each block strides the rest


class DeviceOutputCheck:
    """The first pass's output kept on the device, and the check of a later output against it."""

    def __init__(self, gpu: GpuDevice, output: int, shape: Any, kept: Any) -> None:
        self.gpu, self.driver = gpu, gpu.driver
        self.output, self.shape = output, shape
        self._kept = kept
        self._checksum = 0

    @classmethod
    def keep(cls, gpu: GpuDevice, output: int, shape: Any) -> "DeviceOutputCheck | None":
        """Copy the output at `output` as it is now; None when the device has no room (the host checks instead)."""
        driver = gpu.driver
        nbytes = 4 * shape.elements
        try:
            kept = driver.mem_alloc(max(4, nbytes))
        except driver.MemoryError:
            return None
        check = cls(gpu, output, shape, kept)
        try:
            driver.memcpy_dtod(kept, output, nbytes)
            identity = InputTransform.identity(shape)
            totals = check._run(int(kept), identity, 0.0, 0.0)  # nothing else has run since the copy
        except driver.Error:
            check.free()
            return None
        check._checksum = int(totals[3])
        return check

    def errors(self, transform: InputTransform, atol: float, rtol: float) -> tuple[int, int, float] | None:
        try:
            totals = self._run(self.output, transform, atol, rtol)
        except self.driver.Error as exc:
            raise KernelLaunchError(f"the verified pass's check on the device failed: {exc}") from None
        if int(totals[3]) != self._checksum:
            return None
        largest = np.array([totals[2]], dtype=np.uint64).astype(np.uint32).view(np.float32)[0]
        return int(totals[0]), int(totals[1]), float(largest)

    def _run(self, output: int, transform: InputTransform, atol: float, rtol: float) -> np.ndarray:
        """One launch of the check kernel over `output`; its four totals."""
        B, N, d = self.shape.B, self.shape.N, self.shape.d
        driver = self.driver
        allocations = []

        def device(values: np.ndarray) -> int:
            array = np.ascontiguousarray(values)
            allocation = driver.mem_alloc(max(4, array.nbytes))
            allocations.append(allocation)
            driver.memcpy_htod(allocation, array)
            return int(allocation)

        try:
            items, rows = device(transform.batch.astype(np.int32)), device(transform.q_rows.astype(np.int32))
            totals = np.zeros(4, dtype=np.uint64)
            totals_at = device(totals)
            blocks = max(1, min(BLOCKS_PER_ITEM_CAP, -(-N * d // THREADS)))
            sign = np.float32(-1.0 if transform.negate_v else 1.0)
            self.gpu.check_function().prepared_call(
                (blocks, min(B, MAX_GRID_Y), 1), (THREADS, 1, 1), output, int(self._kept), items, rows,
                np.int32(B), np.int32(N), np.int32(d), sign, np.float32(atol), np.float32(rtol), totals_at)
            driver.memcpy_dtoh(totals, totals_at)
            return totals
        finally:
            for allocation in allocations:
                allocation.free()

    def free(self) -> None:
        if self._kept is not None:
            self._kept.free()
            self._kept = None
