"""The float64 reference kernel's cubin kept between judges, only where no program can have written it.

pycuda's own compiler cache is a folder every process of the judge's user can write (a program judged
without the sandbox), so the reference is compiled with it off, and that build (1.5 s on an H200's host)
stood on the path to a one-program judge's first reference every time. A judge running as root runs
every program as a uid of its own, in a box or out of one, so a folder root owns and alone can write
holds only cubins root wrote: the cubin is kept there, named by what built it (source, architecture,
options, the nvcc that pycuda runs), and read back only while the file, its folder and every folder on the
way from / are root's and no other user can change them (root's judge also writes folders of chosen bytes:
its staged copy of each submission, so a path another user can redirect could lead to one). A judge running
as any other user keeps nothing and reads nothing.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import Callable

from attnbench.locations import cache_dir

FOLDER_NAME = "reference-kernels"
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def root_cubin(source: str, arch: str, options: list[str], build: Callable[[], bytes]) -> bytes:
    """The cubin `build` makes, kept as root between processes (read back instead of built where it is kept)."""
    if os.geteuid() != 0:
        return build()
    folder = _folder()
    if folder is None:
        return build()
    try:
        name = f"{_key(source, arch, options)}.cubin"
        kept = _read_root_only(folder, name)
        if kept is not None:
            return kept
        cubin = build()
        _keep(folder, name, cubin)
        return cubin
    finally:
        os.close(folder)


def _folder() -> int | None:
    """A descriptor of the kept cubins' folder, made root's 0700 where missing; None where it, or any folder
    on the way to it from /, is not root's, or could be changed by another user: each step opened below the
    one before (O_NOFOLLOW: a link on the way keeps nothing; it costs a build). Checking only the last folder
    let a user who owns one above it (ATTNBENCH_CACHE there, or ~/.cache under sudo -E) swap what is below
    for a link to a folder root made and alone writes, holding bytes the user chose: root's staged copy of a
    submission (red team)."""
    parts = Path(os.path.abspath(cache_dir() / FOLDER_NAME)).parts
    try:
        folder = os.open("/", _FOLDER)
    except OSError:
        return None
    for depth, part in enumerate(parts[1:], start=2):
        last = depth == len(parts)
        try:
            if not _root_only(os.fstat(folder), sticky_allowed=True):
                raise OSError("a folder on the way another user can change")
            try:
                below = os.open(part, _FOLDER, dir_fd=folder)
            except FileNotFoundError:
                os.mkdir(part, 0o700 if last else 0o755, dir_fd=folder)
                below = os.open(part, _FOLDER, dir_fd=folder)
        except OSError:
            os.close(folder)
            return None
        os.close(folder)
        folder = below
    if not _root_only(os.fstat(folder), sticky_allowed=False):
        os.close(folder)
        return None
    return folder


def _root_only(facts: os.stat_result, sticky_allowed: bool) -> bool:
    """A folder root owns that no other user can change (one all may write with the sticky bit, as /tmp, lets
    no other user rename or remove root's entries in it: allowed on the way)."""
    if not stat.S_ISDIR(facts.st_mode) or facts.st_uid != 0:
        return False
    return not facts.st_mode & _OTHERS_WRITE or (sticky_allowed and bool(facts.st_mode & stat.S_ISVTX))


def _key(source: str, arch: str, options: list[str]) -> str:
    digest = hashlib.sha256()
    for part in (source, arch, *options, _nvcc_identity()):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:40]


def _nvcc_identity() -> str:
    """The nvcc pycuda runs (the first on PATH): its real path, size and time, as a stat tells them (an nvcc
    upgraded in place makes another key; asking it its version would cost a process a judge)."""
    found = shutil.which("nvcc")
    if found is None:
        return "no nvcc"
    real = os.path.realpath(found)
    try:
        facts = os.stat(real)
    except OSError:
        return real
    return f"{real}:{facts.st_size}:{facts.st_mtime_ns}"


def _read_root_only(folder: int, name: str) -> bytes | None:
    """The file's bytes where it is a plain file of one link that root owns and alone can write; else None."""
    try:
        descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as kept:
        facts = os.fstat(kept.fileno())
        if (not stat.S_ISREG(facts.st_mode) or facts.st_uid != 0 or facts.st_mode & _OTHERS_WRITE
                or facts.st_nlink != 1 or facts.st_size == 0):
            return None
        return kept.read()


def _keep(folder: int, name: str, cubin: bytes) -> None:
    """Written whole beside, then renamed into place (a reader sees the old file or the new one); a failure
    to keep it costs the next judge a build, nothing more."""
    temporary = f".kept-{secrets.token_hex(8)}"
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600, dir_fd=folder)
    except OSError:
        return
    try:
        with os.fdopen(descriptor, "wb") as kept:
            kept.write(cubin)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:
        try:
            os.unlink(temporary, dir_fd=folder)
        except OSError:
            pass
