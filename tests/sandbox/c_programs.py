"""C programs the sandbox's tests run in the box: built here with cc, or the test skipped without it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def built(source: str, folder: Path, name: str = "probe") -> Path:
    """`source` compiled to folder/name (the test skips where this machine has no cc)."""
    if shutil.which("cc") is None:
        pytest.skip("no cc")
    (folder / f"{name}.c").write_text(source)
    subprocess.run(["cc", "-O1", "-o", str(folder / name), str(folder / f"{name}.c")], check=True)
    return folder / name
