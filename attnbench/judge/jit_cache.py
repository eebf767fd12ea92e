"""CUDA's JIT cache between a submission's runs: written by its warm-up run, then sealed.

A program built as PTX compiles its kernels at its first launch; CUDA keeps the result in its cache
(CUDA_CACHE_PATH). One warm-up run, neither timed nor judged, is the only run that writes a submission's
cache; `seal_cache` then makes it the judge's (no write bit for anyone, no link, no special file, no hard
link), and each judged run gets a copy of its own (attnbench.judge.sandbox), thrown away after it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attnbench.judge.staging import StagingRefused, copy_submission, remove_tree


def seal_cache(folder: Path) -> None:
    """Make a JIT cache read-only to every program: owned by the judge, no write bit for anyone else, no
    link or special file kept (the warm-up run wrote it)."""
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            info = os.lstat(current)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode) or not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)) or (
                stat.S_ISREG(info.st_mode) and info.st_nlink > 1):
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




def cache_copy(sealed: Path, folder: Path, user: int | None) -> Path:
    """A judged run's own copy of the sealed cache in the new empty folder (CUDA may want to write to its
    cache; what it writes goes nowhere), owned by the run's user; an empty cache where it cannot be copied."""
    os.rmdir(folder)
    try:
        copy_submission(sealed, folder)
    except (OSError, StagingRefused):
        remove_tree(folder)
        folder.mkdir(mode=0o755)  # an empty cache rather than none: the program still runs
    if user is not None:
        for path in (folder, *folder.rglob("*")):
            os.chown(path, user, user, follow_symlinks=False)
    return folder
