"""The float64 reference kernel's cubin kept between judges, only where no program can have written it.

pycuda's own compiler cache is a folder every process of the judge's user can write (a program judged
without the sandbox), so the reference is compiled with it off, and that build (1.5 s on an H200's host)
stood on the path to a one-program judge's first reference every time. A judge running as root runs
every program as a uid of its own, in a box or out of one, so a folder root owns and alone can write
holds only cubins root wrote: the cubin is kept there, named by what built it (source, architecture,
options, the nvcc that pycuda runs), and read back only while the folder and the file are root's and
writable by root alone. A judge running as any other user keeps nothing and reads nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Callable

from attnbench.locations import cache_dir

FOLDER_NAME = "reference-kernels"
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def root_cubin(source: str, arch: str, options: list[str], build: Callable[[], bytes]) -> bytes:
    """The cubin `build` makes, kept as root between processes (read back instead of built where it is kept)."""
    if os.geteuid() != 0:
        return build()
    folder = _folder()
    path = folder / f"{_key(source, arch, options)}.cubin" if folder is not None else None
    kept = _read_root_only(path) if path is not None else None
    if kept is not None:
        return kept
    cubin = build()
    if path is not None:
        _keep(path, cubin)
    return cubin


def _folder() -> Path | None:
    """The kept cubins' folder, made root's 0700 where missing; None where it is not root's alone."""
    folder = cache_dir() / FOLDER_NAME
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        found = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != 0 or found.st_mode & _OTHERS_WRITE:
        return None
    return folder


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


def _read_root_only(path: Path) -> bytes | None:
    """The file's bytes where it is a plain file of one link that root owns and alone can write; else None."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as kept:
        facts = os.fstat(kept.fileno())
        if (not stat.S_ISREG(facts.st_mode) or facts.st_uid != 0 or facts.st_mode & _OTHERS_WRITE
                or facts.st_nlink != 1 or facts.st_size == 0):
            return None
        return kept.read()


def _keep(path: Path, cubin: bytes) -> None:
    """Written whole beside, then renamed into place (a reader sees the old file or the new one); a failure
    to keep it costs the next judge a build, nothing more."""
    try:
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".kept-")
    except OSError:
        return
    try:
        with os.fdopen(descriptor, "wb") as kept:
            kept.write(cubin)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
