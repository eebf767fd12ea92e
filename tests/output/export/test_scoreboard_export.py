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
from attnbench.output.tables.scoreboard_table import scoreboard_model
from attnbench.results.scoreboard import load_scoreboard
from tests.output.tables.test_scoreboard_table import board


def test_the_csv_and_page_share_the_tables_rows():
    model = scoreboard_model(board())
    rows = list(csv.reader(io.StringIO(ScoreboardCsv().render(board()))))
    assert rows[1] == [cell.text for cell in model.rows[0]]
    page = ScoreboardHtml().render(board())
    assert "a&lt;b&gt;" in page and "<script" not in page and "http" not in page
    assert "| 1= | a&lt;b&gt; |" in ScoreboardMarkdown().render(board())


def _hostile_board():
    from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow

    fake_pass = "x\x1b[2K\r\x1b[32m  1  mallory  PASS\x1b[0m\x1b]0;title\x07\x1b]8;;http://evil\x1b\\link"
    rows = [SubmissionRow("<script>alert(1)</script>", "/s/a", True, gpu="H200", rank=1, reruns=1,
                          entries={"t01": CaseEntry("PASS", runs_s=[0.25])}),
            SubmissionRow("=HYPERLINK(\"http://evil\",\"x\")", "/s/b", False, fake_pass),
            SubmissionRow("[click](javascript:alert(1)) <img src=x onerror=alert(1)>", "/s/c", False, "@SUM(1)"),
            SubmissionRow("+cmd|' /C calc'!A0", "/s/d", False, "-2+3")]
    return Scoreboard(["t01"], rows, settings={"ranking": "r", "reruns": "t"})


def test_nothing_a_submission_wrote_is_rendered_raw():
    hostile = _hostile_board()
    table = scoreboard_model(hostile)
    assert not any("\x1b" in cell.text or "\x07" in cell.text or "\r" in cell.text
                   for row in table.rows for cell in row)
    assert "\\x1b[32m" in table.rows[1][-1].text  # shown as an escape, not obeyed
    markdown = ScoreboardMarkdown().render(hostile)
    assert "<script" not in markdown and "<img" not in markdown and "](" not in markdown.replace("\\](", "")
    assert "&lt;script&gt;" in markdown and "\\[click\\]" in markdown and "\x1b" not in markdown
    cells = [cell for row in csv.reader(io.StringIO(ScoreboardCsv().render(hostile))) for cell in row]
    assert not any(cell[:1] in ("=", "+", "@") or (cell.startswith("-") and cell != "-") for cell in cells), cells
    assert "'=HYPERLINK(\"http://evil\",\"x\")" in cells and "'@SUM(1)" in cells and "'-2+3" in cells
    page = ScoreboardHtml().render(hostile)
    assert "<script" not in page and "<img" not in page and "\x1b" not in page and "&lt;script&gt;" in page


def test_saving_writes_each_exporter_once_and_never_over_an_older_board(tmp_path):
    first = save_scoreboard(board(), tmp_path, "class")
    assert [p.suffix for p in first] == [e.suffix for e in SCOREBOARD_EXPORTERS]
    second = save_scoreboard(board(), tmp_path, "class", with_html=True)
    assert not set(first) & set(second) and second[-1].suffix == ".html"
    assert [r.name for r in load_scoreboard(second[0]).rows] == ["a<b>", "b", "c"]


EVIL_ERROR = ("error: see https://grades.evil.example/login?next=staff :white_check_mark: **PASS 10/10 rank 1** "
              "~~build failed~~ _x_ # head <b>")


def _evil_board():
    from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow

    trophy = SubmissionRow(":trophy: **rank 1**", "/s/t", True, gpu="H200", entries={"t01": CaseEntry("PASS", runs_s=[1.0])})
    www = SubmissionRow("www.attnbench-grades.example", "/s/w", False, EVIL_ERROR)
    return Scoreboard(["t01"], [trophy, www], settings={"ranking": "the rule", "reruns": "top 3"})


def test_the_markdown_renders_no_link_emphasis_strike_or_emoji_a_submission_wrote():
    from markdown_it import MarkdownIt

    from attnbench.output.export.scoreboard_export import ScoreboardMarkdown

    text = ScoreboardMarkdown().render(_evil_board())
    parser = MarkdownIt("gfm-like", {"linkify": False}).enable("strikethrough")
    kinds = {t.type for token in parser.parse(text) for t in [token, *(token.children or [])]}
    assert not kinds & {"link_open", "strong_open", "em_open", "s_open", "html_inline", "html_block"}, kinds
    assert not any(h.type == "heading_open" for h in parser.parse(text)[1:])  # only the page's own heading
    # what GitHub would also turn into links or emoji: a scheme's colon, www., a :shortcode:
    assert "https://" not in text and "www." not in text and ":trophy:" not in text and ":white_check_mark:" not in text
    rendered = parser.render(text)
    assert "trophy" in rendered and "grades.evil.example" in rendered  # still there, as text


def test_the_terminal_prints_no_emoji_for_a_name():
    from attnbench.output.render.terminal import console, print_table
    from attnbench.output.tables.scoreboard_table import scoreboard_model

    with console.capture() as captured:
        print_table(scoreboard_model(_evil_board()))
    out = captured.get()
    assert "\N{TROPHY}" not in out and "\N{WHITE HEAVY CHECK MARK}" not in out and ":trophy:" in out
