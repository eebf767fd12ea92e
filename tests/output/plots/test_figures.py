"""matplotlib as the plots get it."""

import warnings

import pytest

from attnbench.output.plots.figures import pyplot


def test_without_matplotlib_one_sentence_names_the_plot_extra_as_the_docs_install_it(monkeypatch):
    """The sentence said `pip install 'attnbench[plot]'`, asking a registry for a package the docs never install
    from one; every other extra is named as the README installs it (`pip install -e '.[plot]'`)."""
    import sys

    from attnbench.errors import PlotsUnavailable

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotsUnavailable) as info:
        pyplot()
    assert "pip install -e '.[plot]'" in str(info.value) and "\n" not in str(info.value)
    assert info.value.exit_code == 3


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


def test_a_plot_cut_short_by_ctrl_c_leaves_no_partial_png(tmp_path, monkeypatch):
    """A Ctrl-C while matplotlib wrote a PNG left a cut file beside the report, which said no partial output was left."""
    matplotlib_figure = pytest.importorskip("matplotlib.figure", reason="matplotlib (the plot extra) is not installed")
    from attnbench.cases.testcase import Shape
    from attnbench.output.plots import result_plots
    from tests.synthetic import result_set

    def cut_short(self, target, **options):
        data = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
        if hasattr(target, "write"):
            target.write(data)
        else:
            with open(target, "wb") as f:
                f.write(data)
        raise KeyboardInterrupt

    monkeypatch.setattr(matplotlib_figure.Figure, "savefig", cut_short)
    shapes = {f"N{n}": Shape(1, n, 16) for n in (16, 32)}
    r = result_set({"cpu": {k: 0.01 * s.N for k, s in shapes.items()}}, shapes, kind="sweep", settings={"sweep": "N"})
    with pytest.raises(KeyboardInterrupt):
        result_plots.throughput_vs_size(r, tmp_path / "t.png")
    assert list(tmp_path.iterdir()) == []
