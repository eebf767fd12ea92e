"""The sum of what one run may write: its case folder is a size-capped tmpfs of its own, where the judge
(root) may mount one.

RLIMIT_FSIZE caps each file, not their number: a run could fill the host's disk with many files under the
cap. As root, the judge mounts a fresh tmpfs on each case folder (`mount -t tmpfs -o size=...,nr_inodes=...`)
sized for the case's input, four times its output and a margin, and unmounts it after the run, which also
discards whatever the run left. Without root (or where mounting fails) the folder is a plain one and the
run's header says the total is not capped. The tmpfs lives in memory, so its cap also bounds the memory it
can take.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from attnbench.cases.testcase import read_shape
from attnbench.errors import AttnbenchError

MARGIN_BYTES = 16 << 20
BUILD_BYTES = 2 << 30  # a build's objects and fat binaries
PLAIN_BYTES = 64 << 20  # a folder with neither an input nor files (a probe)
INODES = 10000


@functools.lru_cache(maxsize=1)
def can_cap() -> bool:
    """Whether the judge can mount a tmpfs on its case folders: root, mount on PATH, and a trial mount that
    works (a container may forbid it); tried once per process."""
    if os.geteuid() != 0 or shutil.which("mount") is None or shutil.which("umount") is None:
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


def case_bytes(input_path: Path | None, building: bool, file_factor: int, file_floor: int) -> int:
    """The cap of one case folder: the input, file_factor times the output (at least file_floor), a margin;
    a build's allowance for a build."""
    if building:
        return BUILD_BYTES
    if input_path is None:
        return PLAIN_BYTES
    try:
        output = read_shape(input_path).output_bytes
    except (OSError, AttnbenchError):
        output = 0
    return input_path.stat().st_size + max(file_factor * output, file_floor) + MARGIN_BYTES


def cap(folder: Path, size: int) -> bool:
    """Mount a fresh tmpfs of `size` bytes on the empty folder; False where it cannot be done."""
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},nr_inodes={INODES},mode=0700",
                               "attnbench-case", str(folder)], capture_output=True, timeout=30)
        return done.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def uncap(folder: Path) -> None:
    """Unmount the folder's tmpfs (everything the run left in it goes with it); lazily if it is busy."""
    for argv in (["umount", str(folder)], ["umount", "-l", str(folder)]):
        try:
            if subprocess.run(argv, capture_output=True, timeout=30).returncode == 0:
                return
        except (OSError, subprocess.SubprocessError):
            continue


def uncap_all_below(root: Path) -> None:
    """Unmount every case tmpfs under root (folders whose run was never finished)."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return
    prefix = f"{root}/"
    for line in lines:
        words = line.split()
        if len(words) > 1 and words[0] == "attnbench-case" and words[1].startswith(prefix):
            uncap(Path(words[1]))
