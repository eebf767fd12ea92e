"""Reading a course input file in chunks of whole batch items, straight into the caller's buffers.

The pipelined host path never holds the whole input in host memory: it reads batch items [b0, b1)
into one pinned buffer of a small ring at a time. Item b's Q, K, V are contiguous in the file
(12*N*d bytes at 12 + 12*b*N*d), so a chunk is one contiguous range. A large chunk is read by a few
threads at once (`os.preadv` releases the GIL): copying from the page cache is bound by one core's
memory bandwidth, and two to four cores copy faster than one.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from attnbench.cases.testcase import HEADER, Shape, Testcase, read_checked_shape
from attnbench.errors import TestcaseError

MIN_PIECE_BYTES = 2 << 20  # a thread reads at least this much, or the hand-off costs more than it saves
MAX_READ_THREADS = 4


def default_read_threads() -> int:
    """Threads that read one chunk: ATTNBENCH_READ_THREADS when set (for tuning), else up to 4 cores."""
    try:
        return max(1, int(os.environ["ATTNBENCH_READ_THREADS"]))
    except (KeyError, ValueError):
        return max(1, min(MAX_READ_THREADS, os.cpu_count() or 1))


class TestcaseFile:
    """An open course input file, checked against its header, read by whole batch items."""

    __test__ = False  # not a pytest test class

    def __init__(self, path: str | os.PathLike, threads: int | None = None) -> None:
        self.path = Path(path)
        self.shape: Shape = read_checked_shape(self.path)
        self.item_bytes = 3 * self.shape.output_bytes // self.shape.B
        self.threads = threads or default_read_threads()
        self._fd = os.open(self.path, os.O_RDONLY)
        self._pool = ThreadPoolExecutor(self.threads, "attnbench-read") if self.threads > 1 else None

    def read_items(self, b0: int, b1: int, into: memoryview) -> None:
        """Fill `into` (at least (b1 - b0) items of bytes) with batch items [b0, b1)."""
        nbytes = (b1 - b0) * self.item_bytes
        view = into.cast("B")[:nbytes] if into.format != "B" else into[:nbytes]
        if len(view) < nbytes:
            raise ValueError(f"a buffer of {len(view)} bytes cannot hold {b1 - b0} items of {self.item_bytes} bytes")
        offset = HEADER.size + b0 * self.item_bytes
        pieces = min(self.threads, max(1, nbytes // MIN_PIECE_BYTES))
        if pieces <= 1 or self._pool is None:
            self._read_exact(view, offset)
            return
        step = -(-nbytes // pieces)
        jobs = [self._pool.submit(self._read_exact, view[start : start + step], offset + start)
                for start in range(0, nbytes, step)]
        for job in jobs:
            job.result()

    def _read_exact(self, view: memoryview, offset: int) -> None:
        done = 0
        while done < len(view):
            got = os.preadv(self._fd, [view[done:]], offset + done)
            if got <= 0:
                raise TestcaseError(f"{self.path}: file ended after {offset + done} bytes while reading")
            done += got

    def read_all(self) -> Testcase:
        """The whole testcase in one array (what `read_testcase` gives), through the same reads."""
        qkv = np.empty((self.shape.B, 3, self.shape.N, self.shape.d), dtype="<f4")
        self.read_items(0, self.shape.B, memoryview(qkv.reshape(-1)).cast("B"))
        return Testcase(qkv, self.path)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "TestcaseFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
