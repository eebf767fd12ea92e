"""matplotlib, imported only when a plot is drawn (the optional `plot` extra)."""

from __future__ import annotations

import warnings
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

    # A label with a character no font draws (ESC in a saved variant's name, a script the font lacks) made
    # matplotlib warn with the character raw and a source line of ours: the escape reached the terminal, and
    # nobody could act on it. The figure draws a box in its place either way.
    warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)

    return plt


def plots_available() -> bool:
    try:
        pyplot()
    except PlotsUnavailable:
        return False
    return True
