"""CUDA's JIT cache between a submission's runs: written by its warm-up run, then sealed.

A program built as PTX compiles its kernels at its first launch; CUDA keeps the result in its cache
(CUDA_CACHE_PATH). One warm-up run, neither timed nor judged, is the only run that writes a submission's
cache; `seal_cache` then makes it the judge's (no write bit for anyone, no link, no special file, no hard
link), and each judged run gets a copy of its own (attnbench.sandbox.room), thrown away after it.

The warm-up is untimed, so a program could fill its cache there (18 x 20 MB once made every judged run
copy 360 MB, untimed too): a sealed cache over CACHE_BYTES or CACHE_ENTRIES is dropped whole (its row
says so) and the judged runs get an empty cache. A run's copy hard-links the sealed entries larger than
LINK_FROM (CUDA writes an entry once, under a new name) when the run is another user than the cache's
owner, so it can read them but never write them; small files (CUDA's index, which it rewrites) are copied.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from attnbench.sandbox.staging import StagingRefused, copy_submission, remove_tree

CACHE_BYTES = 256 << 20  # hw4's kernels take a few hundred KiB; a real program's cache stays far below
CACHE_ENTRIES = 2000
LINK_FROM = 64 << 10
# What each run copies (the entries up to LINK_FROM): 1,990 files of 64 KiB once made every judged run copy
# 124 MiB, untimed, under both caps above; an index and a few small kernels take far less.
COPIED_BYTES = 8 << 20
# What a judged run may add to its copy, where the copy is capped (as root): CUDA writes a kernel it had
# to compile again, a few MiB at most; past this its writes fail, which CUDA takes as a cache it cannot use.
CACHE_SLACK_BYTES = 64 << 20


def tree_bytes(folder: Path) -> int:
    """The bytes of the plain files under a (sealed) folder, links not followed."""
    total = 0
    for current, _, files in os.walk(folder):
        for name in files:
            info = os.lstat(os.path.join(current, name))
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def seal_cache(folder: Path, first: bool = True) -> str:
    """Make a JIT cache read-only to every program: owned by the judge, no write bit for anyone else, no
    link or special file kept (the warm-up run wrote it). `first`: the seal right after the warm-up (later
    seals leave alone the hard links that runs' copies make). Over CACHE_BYTES or CACHE_ENTRIES the cache
    is emptied: returns why ('' when it was kept)."""
    total, entries, copied = 0, 0, 0
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            info = os.lstat(current)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode) or not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)) or (
                first and stat.S_ISREG(info.st_mode) and info.st_nlink > 1):
            remove_tree(current)
            continue
        try:
            if os.geteuid() == 0:
                os.chown(current, 0, 0, follow_symlinks=False)
            os.chmod(current, 0o755 if stat.S_ISDIR(info.st_mode) else 0o644)
        except OSError:
            remove_tree(current)
            continue
        if stat.S_ISDIR(info.st_mode) and len(current.relative_to(folder).parts) < 16:
            stack.extend(current / name for name in os.listdir(current))
        elif stat.S_ISDIR(info.st_mode):
            remove_tree(current)
        entries += 1
        total += info.st_size if stat.S_ISREG(info.st_mode) else 0
        copied += info.st_size if stat.S_ISREG(info.st_mode) and info.st_size <= LINK_FROM else 0
    if total <= CACHE_BYTES and entries <= CACHE_ENTRIES + 1 and copied <= COPIED_BYTES:  # the folder is one entry
        return ""
    for name in os.listdir(folder):
        remove_tree(folder / name)
    return (f"its CUDA cache after the warm-up ({total / 2**20:.0f} MiB in {entries - 1} entries, "
            f"{copied / 2**20:.0f} MiB of them small files each run would copy) was over {CACHE_BYTES >> 20} MiB, "
            f"{CACHE_ENTRIES} entries or {COPIED_BYTES >> 20} MiB of small files: dropped, its runs started with "
            "an empty one")




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
    """The sealed tree (checked by seal_cache: folders and plain files only, 16 deep at most) into the new
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
