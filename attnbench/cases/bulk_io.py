"""Large files read and written by several threads at once: a judge's inputs and outputs, hundreds of MB each.

One thread moves about 2 GB/s between a tmpfs and memory on an H200's host (t22's 786 MB input took 0.37 s to
write, its 262 MB output 0.16 s to read), most of it the kernel's zeroing and copying of pages, which run in
parallel when each thread faults or reads pages of its own. A read is a pread per thread into its share of the
buffer. A write reserves the file's pages first (posix_fallocate: a full tmpfs is an error here, never a SIGBUS
in a copy) and each thread copies its share into a shared mapping of the file: a write(2) to one file holds the
inode's lock, so writes from several threads run one after another. numpy's copies and preadv let go of the
GIL. Small buffers, and files that cannot be mapped (a pipe, /dev/stdout, a file opened write-only), take the
plain single-threaded path.
"""

from __future__ import annotations

import fcntl
import mmap
import os
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

import numpy as np

from attnbench.host_threads import host_threads

PARALLEL_BYTES = 32 << 20  # below this, one thread is as fast as several
_PIECE = 64 << 20  # the longest single read or copy


def _shares(total: int, threads: int) -> list[tuple[int, int]]:
    """[start, stop) ranges that cover [0, total) in about `threads` pieces, each page-aligned but the last."""
    step = -(-total // threads)
    step = -(-step // mmap.PAGESIZE) * mmap.PAGESIZE
    return [(start, min(total, start + step)) for start in range(0, total, step)]


def _threads(total: int) -> int:
    return max(1, min(host_threads(), total // (PARALLEL_BYTES // 2)))


def pread_into(fd: int, buffer: memoryview, offset: int) -> int:
    """Fill `buffer` from the file `fd` at byte `offset`, several threads at once where it is large; the bytes
    read (fewer than the buffer holds only where the file ended first)."""
    total = len(buffer)

    def share(bounds: tuple[int, int]) -> int:
        start, stop = bounds
        done = start
        while done < stop:
            got = os.preadv(fd, [buffer[done: min(stop, done + _PIECE)]], offset + done)
            if not got:
                break
            done += got
        return done - start

    shares = _shares(total, _threads(total))
    if len(shares) == 1:
        return share(shares[0])
    with ThreadPoolExecutor(len(shares)) as pool:
        counts = list(pool.map(share, shares))
    # the file ended inside the first share that came back short: only the bytes before that end count
    read = 0
    for (start, stop), count in zip(shares, counts):
        read += count
        if count < stop - start:
            break
    return read


def write_mapped(f: BinaryIO, data: np.ndarray) -> bool:
    """Write `data`'s bytes at `f`'s position through a shared mapping, several threads at once, and move the
    position past them; False (nothing written) where that cannot be done and the caller writes as usual: a
    small array, or a file that cannot be mapped or reserved."""
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return _through_mapping(f, raw.nbytes, lambda into, start, stop: np.copyto(into[start:stop], raw[start:stop]))


def write_repeated(f: BinaryIO, block: np.ndarray, total: int) -> None:
    """`total` bytes at `f`'s position: `block`'s bytes over and over (the last time cut short), never held whole;
    through a shared mapping by several threads where write_mapped's way can be taken, else by plain writes."""
    raw = np.ascontiguousarray(block).reshape(-1).view(np.uint8)
    if not raw.nbytes:
        raise ValueError("an empty block repeats to nothing")

    def fill(into: np.ndarray, start: int, stop: int) -> None:
        while start < stop:
            offset = start % raw.nbytes
            count = min(raw.nbytes - offset, stop - start)
            np.copyto(into[start:start + count], raw[offset:offset + count])
            start += count

    if _through_mapping(f, total, fill):
        return
    written = 0
    while written < total:
        piece = raw[written % raw.nbytes:][:total - written]
        f.write(memoryview(piece))
        written += piece.nbytes


def _through_mapping(f: BinaryIO, total: int, fill) -> bool:  # noqa: ANN001 - fill(into, start, stop)
    """`total` bytes at `f`'s position, reserved (posix_fallocate), mapped and filled by `fill(into, start, stop)`
    on several threads, each its share; the position moved past them. False (nothing written) where the bytes are
    few or the file cannot be mapped or reserved."""
    if total < PARALLEL_BYTES:
        return False
    try:
        f.flush()
        fd = f.fileno()
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDWR:  # a shared mapping needs both
            return False
        position = f.tell()
        os.posix_fallocate(fd, position, total)
        mapped = mmap.mmap(fd, position + total)
    except (OSError, ValueError, AttributeError):  # EACCES (write-only), ESPIPE, EOPNOTSUPP, no fileno
        return False
    try:
        _fill_shares(mapped, position, total, fill)
    finally:
        try:
            mapped.close()
        except BufferError:  # a view of it still held by a failed copy's traceback: closed when that goes
            pass
    f.seek(position + total)
    return True


def _fill_shares(mapped: mmap.mmap, position: int, total: int, fill) -> None:  # noqa: ANN001 - as _through_mapping's
    into = np.frombuffer(mapped, dtype=np.uint8, count=total, offset=position)  # gone when this returns: then
    shares = _shares(total, _threads(total))                                   # the mapping can be closed
    with ThreadPoolExecutor(len(shares)) as pool:
        list(pool.map(lambda bounds: fill(into, *bounds), shares))
