"""matplotlib, imported only when a plot is drawn (the optional `plot` extra)."""

from __future__ import annotations

import warnings
from typing import Any

from attnbench.errors import PlotsUnavailable
from attnbench.files import atomic_write
from attnbench.locations import extra_install_command


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend, or one sentence saying how to get it."""
    try:
        import matplotlib
    except ImportError:
        raise PlotsUnavailable("plots need matplotlib, which is not installed: install the plot extra "
                               f"({extra_install_command('plot')})") from None
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


def save_figure(fig: Any, path: Any, **options: Any) -> None:
    """The figure as a PNG at `path`, written whole or not at all: a Ctrl-C in savefig left a cut PNG beside the
    report ("no partial output was left behind", it said)."""
    atomic_write(path, lambda file: fig.savefig(file, format="png", **options))
