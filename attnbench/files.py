"""Writing files safely: through a temporary file in the same folder, then a rename.

An error or Ctrl-C never leaves a partial file behind, and an existing file is replaced only once
the new one is complete.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Callable


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Write `path` through a hidden temporary file beside it, then rename it into place."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with open(tmp, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write a text file atomically."""
    atomic_write(path, lambda f: f.write(text.encode()))
