"""Inputs staged once and bound read-only into every run's box, instead of copied into each run's case folder.

A run's copy of its input cost the copy's time in every run (about 0.2 s a run for t21-t30's 1.3 GB on an H200,
the most of what a run cost beside the program). As root, the judge stages an input once in a tmpfs of its own
(`stage`), and bubblewrap binds that file read-only at /judge/case/<label>.in (attnbench.sandbox.room). What the
program can see of it is what a copy showed, or less:
- it cannot write it: the bind is read-only (EROFS), a mount point cannot be removed or renamed (EBUSY), and the
  file is root's, mode 0440, on a tmpfs only the judge writes; the next run gets the same bytes;
- no other user of the host reads it: its path is in the host's mount table, so the file's group is the judge's
  and is lent to the run's own (`lend`, right before the run; `take_back` after it): a staged input 0444 was read
  by any uid on the host, a fallback run of another judge's among them, the later cases' inputs while the first
  one ran, and every one a judge killed outright left mounted (red team);
- no host path: the bind's source is the tmpfs's only file, named `input` (its line in /proc/self/mountinfo reads
  `/input ... tmpfs attnbench-case`, like the case folder's own), and statvfs reports that tmpfs, sized to the
  input;
- no clock: atime and mtime are the epoch, and the tmpfs is mounted noatime (a bind keeps the flag), so a read
  moves nothing; the ctime is set anew right before each run (`touch`), as a copy's was; a fresh tmpfs per input
  gives its file the same inode number every time (a ramfs's come from the kernel's one counter, which pipes
  read too); its birth time, which no utime can set, is hidden by the runs' system-call filter (statx answers
  ENOSYS; no filter, no staging);
- no count: one staged input per slot (a case's label); a new one of the same size (a fresh input of the label's
  shape) is written in place of the old, in the same tmpfs, so every round's shows the same device and inode
  number (a fresh tmpfs took the lowest device number free at its staging, which the round's other mounts
  decided: the first round's, staged right after the builds, had numbers no rerun round's had; red team); a class
  stages a round's inputs before the round's runs and keeps the last one of a label no later round needs, so
  every run of the class, first runs and reruns, sees the same number of the judge's mounts.

A fresh input can be written straight into its slot (`stage_written`): no file of it on the disk, no copy.

Without root (no tmpfs of the judge's own), or for an input no one staged, the run gets its copy as before.
"""

from __future__ import annotations

import atexit
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

from attnbench.sandbox import case_disk, syscall_filter
from attnbench.sandbox.owned_folders import make_owned, release, remove_owned, remove_stale

STAGED_PREFIX = "attnbench-staged-"
STAGED_NAME = "input"
STAGED_MODE = 0o440  # the judge's, and the group's it is lent to for a run (`lend`): nobody else's
_MS_NOATIME = 1024  # mount(2)'s flag: a read moves no access time


@dataclass(frozen=True)
class _Staged:
    source: tuple[int, int, int, int]  # the staged file's identity: device, inode, size, mtime (ns)
    folder: Path  # the tmpfs holding it
    path: Path  # folder / STAGED_NAME


_root: list[Path] = []
_slots: dict[str, _Staged] = {}
_by_path: dict[str, str] = {}  # a source's path -> its slot


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _staging_root() -> Path:
    """This process's folder of staged inputs (0711: a run's user passes through to the one bwrap binds, lists
    none); what a judge killed outright left is unmounted and removed first (owned_folders)."""
    if not _root:
        remove_staged_of_the_gone()
        folder = make_owned(STAGED_PREFIX)
        os.chmod(folder, 0o711)
        _root.append(folder)
        atexit.register(unstage_all)
    return _root[0]


def remove_staged_of_the_gone() -> None:
    """Every staging folder whose judge is gone (killed outright: its lock free), its tmpfs mounts unmounted
    first. Every judge's sandbox sweeps them (attnbench.sandbox.room), not only one that stages: a one-program
    judge killed mid-run left its batch's inputs mounted in memory through any number of later judges."""
    remove_stale(STAGED_PREFIX, before=case_disk.unmount_all_below)


def can_stage() -> bool:
    """Whether inputs can be staged here: the judge may mount a tmpfs (root), and the runs' system-call filter
    hides birth times (a tmpfs keeps each file's, which dates the staging: where a row ran in its round)."""
    return case_disk.can_cap() and syscall_filter.supported()


def stage(slot: str, source: Path) -> bool:
    """Stage `source` for `slot` (a case's label), replacing what the slot held; False where it cannot be (no
    root, or the mount failed), and the runs copy their input as before."""
    if not can_stage():
        return False
    identity = _identity(source)
    if identity is None:
        return False
    held = _slots.get(slot)
    if held is not None and held.source == identity:
        return True
    _forget(slot)  # first: a rewrite cut short leaves no source naming the file
    if held is not None and held.source[2] == identity[2] and _rewrite(held.path, source):
        _slots[slot] = _Staged(identity, held.folder, held.path)
        _by_path[os.fspath(source)] = slot
        return True
    if held is not None:
        _unmount(held)
    folder = _mounted_slot(slot, identity[2])
    if folder is None:
        return False
    try:
        path = folder / STAGED_NAME
        shutil.copyfile(source, path)
        _seal(path)
    except OSError:
        case_disk.uncap(folder)
        shutil.rmtree(folder, ignore_errors=True)
        return False
    _slots[slot] = _Staged(identity, folder, path)
    _by_path[os.fspath(source)] = slot
    return True


def _mounted_slot(slot: str, size: int) -> Path | None:
    """A slot's own tmpfs, sized to hold `size` bytes, mounted empty; None where the mount failed."""
    folder = _staging_root() / slot.replace("/", "_")
    folder.mkdir(mode=0o700)
    if not case_disk.cap(folder, size + (64 << 10), inodes=2, flags=_MS_NOATIME, mode=0o711):
        folder.rmdir()
        return None
    return folder


def stage_written(slot: str, size: int, write: Callable[[BinaryIO], None]) -> Path | None:
    """Stage for `slot` a file of `size` bytes that `write` makes in place: a fresh input written once, straight
    into the tmpfs its runs bind, instead of to the disk and then copied (1.2 GB for t21, t22 and t29: about
    1 s of a one-program judge on an H200's host). It replaces what the slot held as `stage` does (in place when
    the size is the same). None where nothing can be staged here, or the write failed: the caller writes its file
    as before. The staged file is its own source (`staged(path)` names it)."""
    if not can_stage():
        return None
    held = _forget(slot)
    if held is not None and os.path.getsize(held.path) != size:
        _unmount(held)
        held = None
    if held is None:
        folder = _mounted_slot(slot, size)
        if folder is None:
            return None
        held = _Staged((0, 0, 0, 0), folder, folder / STAGED_NAME)
    try:
        with open(held.path, "w+b") as f:  # readable too: a large array is written through a mapping (bulk_io)
            write(f)
        _seal(held.path)
    except OSError:
        _unmount(held)
        return None
    identity = _identity(held.path)
    if identity is None or identity[2] != size:
        _unmount(held)
        return None
    _slots[slot] = _Staged(identity, held.folder, held.path)
    _by_path[os.fspath(held.path)] = slot
    return held.path


def unstage(path: Path) -> None:
    """The staged input `path` names (by its source or as staged by `stage_written`) unmounted and removed: a
    one-program judge's case, once judged."""
    slot = _by_path.get(os.fspath(path))
    held = _forget(slot) if slot is not None else None
    if held is not None:
        _unmount(held)


def _rewrite(path: Path, source: Path) -> bool:
    """The staged file given `source`'s bytes in place (the same size: a fresh input of the label's shape), its
    times the epoch again; False where it could not be, and the slot is staged anew."""
    try:
        shutil.copyfile(source, path)
        _seal(path)
        return True
    except OSError:
        return False


def staged(source: Path) -> Path | None:
    """The staged file of `source`, if one was staged and the source is still the file it was (not replaced,
    not rewritten); None: copy it."""
    slot = _by_path.get(os.fspath(source))
    held = _slots.get(slot) if slot is not None else None
    if held is None or _identity(source) != held.source:
        return None
    return held.path


def _seal(path: Path) -> None:
    """The staged file as every run finds it: the judge's alone (STAGED_MODE, its group the judge's), the epoch's
    times."""
    os.chown(path, -1, os.getegid())
    os.chmod(path, STAGED_MODE)
    os.utime(path, (0, 0))


def lend(path: Path, group: int | None) -> None:
    """Right before a run: the file's group the run's (`group`, the box's user; None: the judge's own), so that it
    and the judge alone read it, and its ctime now, as a copy made for the run had (its times stay the epoch)."""
    os.chown(path, -1, os.getegid() if group is None else group)
    os.utime(path, (0, 0))


def take_back(path: Path) -> None:
    """Once the run has ended: the file the judge's alone again (its group lent to no one)."""
    try:
        os.chown(path, -1, os.getegid())
    except FileNotFoundError:  # unstaged meanwhile
        pass


def _forget(slot: str) -> _Staged | None:
    """The slot's staged input, no longer staged for any source (still mounted)."""
    held = _slots.pop(slot, None)
    for path, named in list(_by_path.items()):
        if named == slot:
            del _by_path[path]
    return held


def _unmount(held: _Staged) -> None:
    case_disk.uncap(held.folder)
    shutil.rmtree(held.folder, ignore_errors=True)


def unstage_all() -> None:
    """Every staged input unmounted and removed (a class's end: fresh inputs are secrets)."""
    for slot in list(_slots):
        held = _forget(slot)
        if held is not None:
            _unmount(held)
    if _root:
        case_disk.unmount_all_below(_root[0])
        remove_owned(_root[0])
        release(_root[0])
        _root.clear()
