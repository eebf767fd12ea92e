"""matplotlib, imported only when a plot is drawn (the optional `plot` extra)."""

from __future__ import annotations

from typing import Any

from attnbench.errors import PlotsUnavailable


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend, or one sentence saying how to get it."""
    try:
        import matplotlib
    except ImportError:
        raise PlotsUnavailable("plots need matplotlib, which is not installed: pip install 'attnbench[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plots_available() -> bool:
    try:
        pyplot()
    except PlotsUnavailable:
        return False
    return True
