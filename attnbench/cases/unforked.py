"""Arrays no child process inherits: the large ones a judge holds while it starts programs.

Every run starts its box with a fork (subprocess with a preexec step: the limits, the cgroup, the user switch,
the system-call filter; with one, CPython cannot use vfork), and a fork copies the page tables of every page the
judge holds. A class round's references held in the judge (t21-t30, 1.3 GB) made each run's Popen take 28.5 ms
on an H200's host, and the kill pass's own fork about 8 ms, every run; the Popen's share falls inside the run's
wall clock. An array made here lives in an anonymous mapping marked MADV_DONTFORK, which a child does not get:
no child of the judge reads an array before it execs (a preexec step and the kill pass make system calls only).
Where the mapping or the advice is refused (an OS without MADV_DONTFORK), it is a plain numpy array.
"""

from __future__ import annotations

import math
import mmap

import numpy as np

MIN_BYTES = 1 << 20  # a smaller array's page tables cost a fork nothing worth a mapping of its own


def empty(shape: tuple[int, ...], dtype: np.dtype | type | str) -> np.ndarray:
    """An uninitialised array, as np.empty, whose pages no child process inherits where it is large."""
    kind = np.dtype(dtype)
    nbytes = math.prod(shape) * kind.itemsize
    advice = getattr(mmap, "MADV_DONTFORK", None)
    if nbytes < MIN_BYTES or advice is None:
        return np.empty(shape, kind)
    try:
        region = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)  # anonymous: fileno -1
        region.madvise(advice)
    except (OSError, ValueError):
        return np.empty(shape, kind)
    return np.frombuffer(region, dtype=kind).reshape(shape)
