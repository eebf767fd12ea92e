"""The sum of what one run may write: its case folder is a size-capped tmpfs of its own, where the judge
(root) may mount one.

RLIMIT_FSIZE caps each file, not their number: a run could fill the host's disk with many files under the
cap. As root, the judge mounts a fresh tmpfs on each case folder (`mount -t tmpfs -o size=...,nr_inodes=...`)
sized for the case's input, four times its output and a margin, and unmounts it after the run, which also
discards whatever the run left. The mounts are mount(2) and umount2(2) called through ctypes (Python has no
binding, and no maintained library wraps them): a run makes four and the `mount` and `umount` programs cost
2.5-9 ms a call to start, against tens of microseconds for the system call. Without root (or where mounting fails) the folder is a plain one and the
run's header says the total is not capped. The tmpfs lives in memory, so its cap also bounds the memory it
can take.
"""

from __future__ import annotations

import ctypes
import functools
import os
import tempfile
from pathlib import Path

from attnbench.cases.shape import Shape, read_shape
from attnbench.errors import AttnbenchError

MARGIN_BYTES = 16 << 20
BUILD_BYTES = 2 << 30  # a build's objects and fat binaries
PLAIN_BYTES = 64 << 20  # a folder with neither an input nor files (a probe)
INODES = 10000
_MNT_DETACH, _UMOUNT_NOFOLLOW = 2, 8  # umount2: detach now, free when unused (a busy folder); never follow a link
_SOURCE = b"attnbench-case"  # the mounts' name in /proc/self/mounts (uncap_all_below finds them by it)


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@functools.lru_cache(maxsize=1)
def can_cap() -> bool:
    """Whether the judge can mount a tmpfs on its case folders: root, mount on PATH, and a trial mount that
    works (a container may forbid it); tried once per process."""
    if os.geteuid() != 0:
        return False
    trial = Path(tempfile.mkdtemp(prefix="attnbench-mount-trial-"))
    try:
        if not cap(trial, 1 << 20):
            return False
        uncap(trial)
        return True
    finally:
        try:
            trial.rmdir()
        except OSError:
            pass


def case_bytes(input_path: Path | None, building: bool, file_factor: int, file_floor: int,
               written: Shape | None = None) -> int:
    """The cap of one case folder: the input, file_factor times the output (at least file_floor), a margin;
    a build's allowance for a build. `written`: the shape of an input the room writes into the folder itself."""
    if building:
        return BUILD_BYTES
    if written is not None:
        size, output = written.input_bytes, written.output_bytes
    elif input_path is None:
        return PLAIN_BYTES
    else:
        try:
            output = read_shape(input_path).output_bytes
        except (OSError, AttnbenchError):
            output = 0
        size = input_path.stat().st_size
    return size + max(file_factor * output, file_floor) + MARGIN_BYTES


def cap(folder: Path, size: int, inodes: int = INODES, flags: int = 0, mode: int = 0o700) -> bool:
    """Mount a fresh tmpfs of `size` bytes and `inodes` files on the empty folder (`flags`: mount(2)'s, such as
    noatime; `mode`: its root folder's); False where it cannot be done."""
    options = f"size={size},nr_inodes={inodes},mode={mode:04o}".encode()
    try:
        return _libc().mount(_SOURCE, os.fsencode(folder), b"tmpfs", ctypes.c_ulong(flags), options) == 0
    except (OSError, AttributeError):
        return False


def mount_now(source: bytes, target: bytes, kind: bytes, flags: int, options: bytes) -> int:
    """mount(2) itself: 0, or -1 (errno set). For a caller that has checked it may mount (a forked child, say)."""
    return _libc().mount(source, target, kind, ctypes.c_ulong(flags), options)


def uncap(folder: Path) -> None:
    """Unmount the folder's tmpfs (everything the run left in it goes with it); lazily if it is busy."""
    try:
        libc = _libc()
        if libc.umount2(os.fsencode(folder), _UMOUNT_NOFOLLOW) != 0:
            libc.umount2(os.fsencode(folder), _MNT_DETACH | _UMOUNT_NOFOLLOW)
    except (OSError, AttributeError):
        pass


def unmount_all_below(root: Path) -> None:
    """Unmount, deepest first and lazily, every mount below root whatever it is (a killed judge's room: its
    case tmpfs mounts and its view's overlays). Root only; nothing to do without mounts."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return
    prefix = f"{root}/"
    points = [words[1] for words in (line.split() for line in lines) if len(words) > 1 and words[1].startswith(prefix)]
    for point in sorted(points, key=len, reverse=True):
        uncap(Path(point))


def uncap_all_below(root: Path) -> None:
    """Unmount every case tmpfs under root (folders whose run was never finished)."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return
    prefix = f"{root}/"
    for line in lines:
        words = line.split()
        if len(words) > 1 and words[0] == _SOURCE.decode() and words[1].startswith(prefix):
            uncap(Path(words[1]))
