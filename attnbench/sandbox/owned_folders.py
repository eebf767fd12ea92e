"""Temporary folders a judge holds for its whole life, and the stale ones a killed judge left.

A judge killed by SIGKILL runs no exit handler, so its folder of fresh inputs (gigabytes for the course)
stays in the temporary folder. Each such folder therefore holds a lock file, `.owner`, locked (flock) by
the process that made it for as long as it lives (the kernel drops the lock when the last process holding
the descriptor ends, whatever killed it); the file also says the owner's pid and start time, for people.
At its start the next judge removes every folder of the same prefix whose lock it can take: its owner is
gone. A folder without a lock file, of another user, or a link is never touched: attnbench did not make it
this way.

The lock file is locked before it takes its name (a rename of the locked file), so no sweeper can find a
named but unlocked lock of a live judge.
"""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Callable

from attnbench.sandbox.staging import remove_tree

LOCK_NAME = ".owner"
_held: dict[Path, int] = {}  # the lock descriptors of this process's folders: open until released or the end


def make_owned(prefix: str, where: Path | None = None) -> Path:
    """A fresh folder (mode 0700) under `where` (the system's temporary folder by default) named
    prefix + random, locked by this process until it ends."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=where))
    os.chmod(folder, 0o700)
    unnamed = folder / f"{LOCK_NAME}-making"
    fd = os.open(unnamed, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"pid {os.getpid()}, started {time.time():.0f}\n".encode())
    os.rename(unnamed, folder / LOCK_NAME)
    _held[folder] = fd
    return folder


def remove_owned(folder: Path) -> None:
    """Remove an owned folder: everything in it, then its lock file and itself only once nothing else is left. A
    folder that cannot be emptied (a mount in it that would not go) keeps its lock file, so the next judge's
    sweep (`remove_stale`) tries again: 24 rooms whose lock file went with the rest kept 96 tmpfs mounts (0.7 GB
    of memory) that no later judge would touch."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name != LOCK_NAME:
            remove_tree(folder / name)
    try:
        if os.listdir(folder) == [LOCK_NAME]:
            os.unlink(folder / LOCK_NAME)
            os.rmdir(folder)
    except OSError:
        pass


def release(folder: Path) -> None:
    """Drop this process's lock on a folder it made (once the folder is removed)."""
    fd = _held.pop(folder, None)
    if fd is not None:
        os.close(fd)


def remove_stale(prefix: str, where: Path | None = None,
                 before: Callable[[Path], None] | None = None) -> list[Path]:
    """Remove each folder under `where` named prefix + something, made by make_owned, of this user, whose
    owner is gone (its lock can be taken), calling `before` on it first (to unmount what is mounted in it);
    returns those removed."""
    base = Path(where if where is not None else tempfile.gettempdir())
    removed: list[Path] = []
    try:
        names = [n for n in os.listdir(base) if n.startswith(prefix) and len(n) > len(prefix)]
    except OSError:
        return removed
    for name in names:
        folder = base / name
        try:
            info = os.lstat(folder)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            continue
        try:
            # never waits: a FIFO planted as the lock file (the fallback's programs run as the judge's user
            # without root) made every later judge wait for a writer at its start (red team)
            fd = os.open(folder / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:  # no lock file: not made by make_owned (or still being made): kept
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # its owner lives
                continue
            if before is not None:
                before(folder)
            remove_owned(folder)  # removed with the lock held, so no other sweeper races it
            removed.append(folder)
        finally:
            os.close(fd)
    return removed
