"""CUDA's JIT cache between a submission's runs: written by its warm-up run, then sealed.

A program built as PTX compiles its kernels at its first launch; CUDA keeps the result in its cache
(CUDA_CACHE_PATH). One warm-up run, neither timed nor judged, is the only run that writes a submission's
cache, in a folder of the warm-up's own (as root a capped tmpfs: attnbench.sandbox.room). `seal_cache` then
builds the sealed cache by construction: it walks what the warm-up wrote by folder descriptors (never a path,
so no depth or name length stops it) and copies each plain file into a fresh file the judge creates, its mode
0644, in folders of its own; anything it cannot inspect or will not keep (a link, a special file, a hard link,
a folder deeper than MAX_DEPTH, an entry it cannot open) drops the whole cache, with a note. Each judged run
gets a copy of the sealed cache of its own (attnbench.sandbox.room), thrown away after it.

The warm-up is untimed, so a program could fill its cache there (18 x 20 MB once made every judged run
copy 360 MB, untimed too; 683 MiB in 3,202 entries once hid below folders deeper than PATH_MAX): a cache
over CACHE_BYTES (counted in the blocks a file holds as well as its size: fallocate reserves blocks past
the size) or CACHE_ENTRIES is dropped whole (its row says so) and the judged runs get an empty cache. A
run's copy hard-links the sealed entries larger than LINK_FROM (CUDA writes an entry once, under a new
name) when the run is another user than the cache's owner, so it can read them but never write them;
small files (CUDA's index, which it rewrites) are copied. Where a run's copy is a file system of its own (as
root), nothing can be linked, and the whole cache is capped at what a run may copy (UNLINKED_BYTES).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from attnbench.sandbox.staging import StagingRefused, copy_submission, remove_tree, shown

CACHE_BYTES = 256 << 20  # hw4's kernels take a few hundred KiB; a real program's cache stays far below
CACHE_ENTRIES = 2000
LINK_FROM = 64 << 10
# What each run copies (the entries up to LINK_FROM): 1,990 files of 64 KiB once made every judged run copy
# 124 MiB, untimed, under both caps above; an index and a few small kernels take far less.
COPIED_BYTES = 8 << 20
# As root a run's copy sits in a capped tmpfs of its own (attnbench.sandbox.room), another file system, where
# nothing can be linked: every entry is copied into every run, in memory. A warm-up that sealed 200 files of
# 1 MB (each under its file-size limit and LINK_FROM's "linked" promise) made every judged run copy 192 MB
# (red team); sealed for such rooms (`linked=False`), the whole cache is what each run copies, capped here.
UNLINKED_BYTES = 32 << 20
# What a judged run may add to its copy, where the copy is capped (as root): CUDA writes a kernel it had
# to compile again, a few MiB at most; past this its writes fail, which CUDA takes as a cache it cannot use.
CACHE_SLACK_BYTES = 64 << 20
# CUDA's cache is three folders deep; 8 names of 255 bytes stay within PATH_MAX below any judge's folder,
# so every later walk of the sealed cache (a run's copy, its removal) may use paths.
MAX_DEPTH = 8
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)


class _Dropped(Exception):
    """Why the warm-up's cache is not kept."""


def tree_bytes(folder: Path) -> int:
    """The bytes of the plain files under a sealed folder (made by seal_cache: MAX_DEPTH deep at most)."""
    total = 0
    for current, _, files in os.walk(folder):
        for name in files:
            info = os.lstat(os.path.join(current, name))
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def held_bytes(info: os.stat_result) -> int:
    """What a file takes: its size, or the blocks it holds where they are more (fallocate's reservations)."""
    return max(info.st_size, getattr(info, "st_blocks", 0) * 512)


def seal_cache(written: Path, sealed: Path, linked: bool = True) -> str:
    """The sealed cache in `sealed` (replaced, made anew), built from what the warm-up wrote in `written`
    (read by descriptors, never followed or changed). `linked`: whether runs may hard-link its large entries
    (False where each run's copy is a file system of its own: then every byte counts as copied, UNLINKED_BYTES).
    Returns '' when it was kept, else why it was dropped (then `sealed` is an empty folder)."""
    remove_tree(sealed)
    os.mkdir(sealed, 0o755)
    try:
        _copy_sealed(written, sealed, linked)
        return ""
    except _Dropped as why:
        remove_tree(sealed)
        os.mkdir(sealed, 0o755)
        return f"its CUDA cache after the warm-up {why}: dropped, its runs started with an empty one"


def _copy_sealed(written: Path, sealed: Path, linked: bool) -> None:
    try:
        top = os.open(written, _FOLDER)
    except FileNotFoundError:
        return  # the warm-up never ran: an empty cache
    except OSError as exc:
        raise _Dropped(f"could not be opened ({exc.strerror})") from None
    counts = {"entries": 0, "bytes": 0, "copied": 0, "linked": int(linked)}
    target = os.open(sealed, _FOLDER)
    try:  # a pair of descriptors open per level walked: MAX_DEPTH pairs at most
        _copy_level(top, target, 1, "", counts)
    finally:
        os.close(top)
        os.close(target)


def _copy_level(source: int, target: int, depth: int, where: str, counts: dict[str, int]) -> None:
    try:
        names = sorted(os.listdir(source))
    except OSError as exc:
        raise _Dropped(f"held a folder it could not list ({exc.strerror})") from None
    for name in names:
        path = f"{where}{name}"
        counts["entries"] += 1
        if counts["entries"] > CACHE_ENTRIES:
            raise _Dropped(f"held more than {CACHE_ENTRIES} entries")
        try:
            info = os.lstat(name, dir_fd=source)
        except OSError as exc:
            raise _Dropped(f"held an entry it could not inspect ({shown(path)[:80]}: {exc.strerror})") from None
        if stat.S_ISDIR(info.st_mode):
            if depth >= MAX_DEPTH:
                raise _Dropped(f"held folders nested deeper than {MAX_DEPTH}")
            try:
                below = os.open(name, _FOLDER, dir_fd=source)
            except OSError as exc:
                raise _Dropped(f"held a folder it could not open ({shown(path)[:80]}: {exc.strerror})") from None
            try:
                os.mkdir(name, 0o755, dir_fd=target)
                made = os.open(name, _FOLDER, dir_fd=target)
                try:
                    _copy_level(below, made, depth + 1, f"{path}/", counts)
                finally:
                    os.close(made)
            finally:
                os.close(below)
        elif stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
            counts["bytes"] += held_bytes(info)
            counts["copied"] += held_bytes(info) if info.st_size <= LINK_FROM or not counts["linked"] else 0
            if counts["bytes"] > CACHE_BYTES:
                raise _Dropped(f"held more than {CACHE_BYTES >> 20} MiB")
            if counts["linked"] and counts["copied"] > COPIED_BYTES:
                raise _Dropped(f"held more than {COPIED_BYTES >> 20} MiB of small files each run would copy")
            if not counts["linked"] and counts["copied"] > UNLINKED_BYTES:
                raise _Dropped(f"held more than {UNLINKED_BYTES >> 20} MiB, which each run would copy (its copy is a "
                               "tmpfs of its own, where nothing can be linked)")
            _copy_file(source, name, target, info, path)
        else:
            kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else (
                "a hard link" if stat.S_ISREG(info.st_mode) else "a special file")
            raise _Dropped(f"held {kind} ({shown(path)[:80]})")


def _copy_file(source: int, name: str, target: int, info: os.stat_result, path: str) -> None:
    try:
        fd = os.open(name, _READ, dir_fd=source)
    except OSError as exc:
        raise _Dropped(f"held a file it could not read ({shown(path)[:80]}: {exc.strerror})") from None
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(now.st_mode):
            raise _Dropped(f"changed while it was sealed ({shown(path)[:80]})")
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                      dir_fd=target)
        try:
            left = info.st_size  # never more than lstat saw: the cap was counted on it
            while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                os.write(out, chunk)
                left -= len(chunk)
            os.fchmod(out, 0o644)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def cache_copy(sealed: Path, folder: Path, user: int | None) -> Path:
    """A judged run's own copy of the sealed cache in the new empty folder (CUDA may want to write to its
    cache; what it writes goes nowhere), owned by the run's user; an empty cache where it cannot be copied.
    For a run of another user than the sealed files' owner, large entries are hard links (read-only to it,
    never chowned); everything else is a copy of its own."""
    os.rmdir(folder)
    try:
        owner = os.lstat(sealed).st_uid
        linkable = user is not None and user != owner
        copy_submission(sealed, folder) if not linkable else _link_or_copy(sealed, folder)
    except (OSError, StagingRefused):
        remove_tree(folder)
        folder.mkdir(mode=0o755)  # an empty cache rather than none: the program still runs
        linkable = False
    if user is not None:
        for path in (folder, *folder.rglob("*")):
            info = os.lstat(path)
            if not (stat.S_ISREG(info.st_mode) and info.st_nlink > 1):  # a link's inode is the sealed file's
                os.chown(path, user, user, follow_symlinks=False)
    return folder


def _link_or_copy(sealed: Path, folder: Path) -> None:
    """The sealed tree (built by seal_cache: folders and plain files only, MAX_DEPTH deep at most) into the new
    folder: entries over LINK_FROM hard-linked, the rest copied; a link that fails (another file system)
    is a copy."""
    stack = [(sealed, folder)]
    while stack:
        source, target = stack.pop()
        os.mkdir(target, 0o755)
        for name in os.listdir(source):
            here, there = source / name, target / name
            info = os.lstat(here)
            if stat.S_ISDIR(info.st_mode):
                stack.append((here, there))
            elif stat.S_ISREG(info.st_mode):
                if info.st_size > LINK_FROM:
                    try:
                        os.link(here, there, follow_symlinks=False)
                        continue
                    except OSError:
                        pass
                shutil.copyfile(here, there, follow_symlinks=False)
                os.chmod(there, 0o644)
