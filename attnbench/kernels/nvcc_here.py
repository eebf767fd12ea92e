"""The nvcc on this host: where it is, which architectures it builds for, and the first lines of its errors.
Apart from the kernel catalogue (`nvcc`), so a class's build workers, each a fresh Python, import only this."""

from __future__ import annotations

import functools
import shutil
import subprocess


def nvcc_path() -> str | None:
    return shutil.which("nvcc")


@functools.cache
def nvcc_architectures() -> frozenset[str]:
    """The sm_XY this nvcc builds for (`nvcc --list-gpu-code`; CUDA 13 dropped sm_61, the course's GTX
    1080); empty without nvcc or when it cannot say."""
    try:
        found = subprocess.run([nvcc_path() or "nvcc", "--list-gpu-code"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(found.stdout.split()) if found.returncode == 0 else frozenset()


def first_error_lines(stderr: str, lines: int = 4) -> str:
    """A compiler's first error lines (the first lines at all when none says error), joined on one line."""
    text = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in text if "error" in line.lower() or "fatal" in line.lower()] or text
    return " | ".join(errors[:lines]) or "no message"
