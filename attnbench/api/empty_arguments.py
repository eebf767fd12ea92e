"""Refusing an empty path or name given from Python, as the command line refuses an empty word.

`Path("")` is the current folder, so an empty argument reached the file checks as "." and was reported as
".: is a directory" (or, for a class, judged the working folder): the caller's mistake was never named.
"""

from __future__ import annotations

import os

from attnbench.errors import UsageError


def refuse_empty(name: str, given: str | os.PathLike | None, wanted: str) -> None:
    """Raise UsageError naming the argument when `given` is an empty (or blank) path or name; None is left
    to the caller (it means the default)."""
    if given is not None and not os.fspath(given).strip():
        raise UsageError(f"{name} is empty ({os.fspath(given)!r}): give {wanted}")
