"""How many threads this process may give its host-side numpy work (the float64 reference, the check).

A process alone takes up to MAX_HOST_THREADS of the host's cores. Workers that share a host (one per
GPU) each take their share instead, set with `claim_share`: on a two-GPU H200 host (32 cores), two
workers that each ran every core's worth of threads (OpenBLAS's own, which spin while they wait, on
top of ours) made a compare 1.4x slower than one GPU alone (358,000 involuntary context switches
against 5,000), the opposite of what a second GPU is for.

Where our threads call BLAS, BLAS itself runs one thread each (`blas_single_threaded`): the
parallelism is ours, over blocks, and never multiplied by BLAS's.

The C allocator keeps one arena for all of them (`one_allocator_arena`): see there why.
"""

from __future__ import annotations

import os
import ctypes
from contextlib import contextmanager
from typing import Iterator

from threadpoolctl import threadpool_limits

from attnbench.errors import UsageError

HOST_THREADS_ENV = "ATTNBENCH_HOST_THREADS"
_M_ARENA_MAX = -8  # glibc's mallopt parameter
MAX_HOST_THREADS = 8  # the reference and the check are bound by memory bandwidth beyond this


def host_cores() -> int:
    """The cores this process may run on (its affinity where the OS tells it, else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not every OS has affinity
        return os.cpu_count() or 1


def refuse_a_bad_share() -> None:
    """ATTNBENCH_HOST_THREADS set to anything but a whole number >= 1 is bad usage, said before any work (the
    library's `host_threads` ignores it: 'abc' was taken as unset without a word)."""
    claimed = os.environ.get(HOST_THREADS_ENV)
    if claimed is not None and claimed.strip() and not (claimed.strip().isdigit() and int(claimed) >= 1):
        raise UsageError(f"{HOST_THREADS_ENV}={claimed!r}: give a number of threads, 1 or more (or leave it unset)")


def host_threads() -> int:
    """Threads for this process's host work: its claimed share, else up to MAX_HOST_THREADS cores."""
    claimed = os.environ.get(HOST_THREADS_ENV, "").strip()
    if claimed.isdigit() and int(claimed) >= 1:
        return int(claimed)
    return max(1, min(MAX_HOST_THREADS, host_cores()))


def share_of(processes: int) -> int:
    """Each process's share when `processes` of them share this host's cores."""
    return max(1, min(MAX_HOST_THREADS, host_cores() // max(1, processes)))


def claim_share(processes: int) -> int:
    """Make this process (a worker) keep to its share of the host, BLAS included; returns the share."""
    share = share_of(processes)
    os.environ[HOST_THREADS_ENV] = str(share)
    threadpool_limits(limits=share, user_api="blas")
    return share


@contextmanager
def blas_single_threaded() -> Iterator[None]:
    """BLAS runs one thread per call while our own threads share out the work."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def one_allocator_arena() -> bool:
    """glibc's malloc set to one arena for every thread of this process, before its threads start; whether it
    was set (False: not glibc). glibc gives each thread that allocates an arena of its own (up to eight a core),
    and memory freed in one stays mapped there. A judge starts every run, and every kill pass after it, with a
    fork, and a fork copies the page tables of all that is mapped: a class's inputs and references drawn and
    checked on several threads left the judge at 270 MB at each run's start instead of 180 MB, and each of a
    run's two forks took 19-20 ms instead of 12-14 (four C programs on t01-t05 on 2 cores: 1.15-1.17x their
    runs, 1.14x with one arena). Our threads allocate big buffers rarely, so sharing one arena costs nothing
    seen."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):  # musl, macOS: no mallopt, nothing to set
        return False
    return bool(mallopt(_M_ARENA_MAX, 1))
