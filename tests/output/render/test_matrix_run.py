"""A matrix run's saved files: --plot never draws over a file the user has under the plots' names."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnbench.output.render.matrix_run import save_run
from attnbench.results.resultset import load

SAVED = Path(__file__).resolve().parents[3] / "docs" / "results" / "2026-11-22_h200_ladder_steps_vs_report004.json"


def test_plots_of_a_named_run_never_replace_the_users_files(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    mine = {name: tmp_path / name for name in ("c2_roofline.png", "c2_ceilings.png", "c2_ladder.png")}
    for path in mine.values():
        path.write_text("my own notes\n")
    save_run(load(SAVED), tmp_path, "c2", None, plot=True)
    assert all(path.read_text() == "my own notes\n" for path in mine.values())
    assert (tmp_path / "c2_2.json").is_file() and (tmp_path / "c2_2_roofline.png").is_file()


def test_without_plots_the_name_is_kept_beside_plot_named_files(tmp_path: Path) -> None:
    (tmp_path / "c2_roofline.png").write_text("my own notes\n")
    save_run(load(SAVED), tmp_path, "c2", None, plot=False)
    assert (tmp_path / "c2.json").is_file()
