"""User variants: kernels kept in the user's own folder, with launch facts in attnbench.toml.

(Only the TOML reader so far; the variant loader follows.)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from attnbench.errors import AttnbenchError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def read_toml(path: Path, error: type[AttnbenchError]) -> dict[str, Any]:
    """A TOML file as a dict; a missing or malformed file is one line naming it."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML ({exc})") from None
