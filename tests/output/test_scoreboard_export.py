"""attnbench.output.export.scoreboard_export: the scoreboard's saved formats share the table's rows."""

import csv
import io

from attnbench.output.export.scoreboard_export import (
    SCOREBOARD_EXPORTERS,
    ScoreboardCsv,
    ScoreboardHtml,
    ScoreboardMarkdown,
    save_scoreboard,
)
from attnbench.output.scoreboard import scoreboard_model
from attnbench.results.scoreboard import load_scoreboard
from tests.output.test_scoreboard import board


def test_the_csv_and_page_share_the_tables_rows():
    model = scoreboard_model(board())
    rows = list(csv.reader(io.StringIO(ScoreboardCsv().render(board()))))
    assert rows[1] == [cell.text for cell in model.rows[0]]
    page = ScoreboardHtml().render(board())
    assert "a&lt;b&gt;" in page and "<script" not in page and "http" not in page
    assert "| 1= | a<b> |" in ScoreboardMarkdown().render(board())


def test_saving_writes_each_exporter_once_and_never_over_an_older_board(tmp_path):
    first = save_scoreboard(board(), tmp_path, "class")
    assert [p.suffix for p in first] == [e.suffix for e in SCOREBOARD_EXPORTERS]
    second = save_scoreboard(board(), tmp_path, "class", with_html=True)
    assert not set(first) & set(second) and second[-1].suffix == ".html"
    assert [r.name for r in load_scoreboard(second[0]).rows] == ["a<b>", "b", "c"]
