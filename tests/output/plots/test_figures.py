"""matplotlib as the plots get it."""

import warnings

import pytest

from attnbench.output.plots.figures import pyplot


def test_a_label_no_font_draws_warns_nothing_raw(tmp_path):
    """A saved run's variant named with ESC drew a roofline whose matplotlib warning printed the ESC raw."""
    pytest.importorskip("matplotlib")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plt = pyplot()
        fig, ax = plt.subplots()
        ax.set_title("roofline \x1b[2J\x07")
        fig.savefig(tmp_path / "plot.png")
        plt.close(fig)
    assert (tmp_path / "plot.png").stat().st_size > 0
    assert not [w for w in caught if "\x1b" in str(w.message) or "Glyph" in str(w.message)]
