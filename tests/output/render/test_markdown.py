"""The Markdown of saved results: what a cell's message brings in is never written raw."""

from __future__ import annotations

from pathlib import Path

from attnbench.output.render.markdown import matrix_sections
from attnbench.results.resultset import load

SAVED = Path(__file__).resolve().parents[3] / "docs" / "results" / "2026-11-22_h200_ladder_steps_vs_report004.json"


def test_a_failed_cells_message_reaches_the_notes_escaped() -> None:
    result = load(SAVED)
    result.cells[0].status = "error"
    result.cells[0].message = "\x1b[2Jcleared the screen"  # a compiler's or a program's words
    text = matrix_sections(result)
    assert "\x1b" not in text
    assert "\\x1b[2Jcleared the screen" in text
