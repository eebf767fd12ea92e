"""Strict JSON out, the one place every JSON we print or save goes through.

JSON has no NaN or Infinity, and strict parsers (`JSON.parse`, `jq`) refuse Python's default
`NaN` / `Infinity` tokens. A non-finite float is written as the string "NaN", "Infinity" or
"-Infinity" (a string, not null, so a reader can tell "not measured" from "measured, not finite");
`restore` turns those strings back into floats when attnbench reads its own files.
"""

from __future__ import annotations

import json
import math
from typing import Any

SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def finite(value: Any) -> Any:
    """`value` with every non-finite float replaced by its string (dicts, lists and tuples walked)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def restore(value: Any) -> Any:
    """The inverse of `finite`: "NaN", "Infinity" and "-Infinity" strings become floats again."""
    if isinstance(value, str) and value in SPECIAL:
        return SPECIAL[value]
    if isinstance(value, dict):
        return {k: restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [restore(v) for v in value]
    return value


def dumps(value: Any, indent: int | None = 1) -> str:
    """Strict JSON text of `value`: never NaN or Infinity tokens (allow_nan=False holds us to it)."""
    return json.dumps(finite(value), indent=indent, allow_nan=False)
