"""A class's scoreboard saved: JSON (its schema), CSV, Markdown and a one-file HTML page, each an `Exporter`."""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path
from typing import Callable

from attnbench.analysis.class_history import HistoryRow, history, load_boards
from attnbench.output.export.csv_export import as_text
from attnbench.output.export.exporter import Exporter, save_formats
from attnbench.output.render.markdown import md_strangers
from attnbench.output.render.markdown import render as render_markdown
from attnbench.output.tables.scoreboard_table import (
    ScoreCell,
    history_rows,
    scoreboard_lines,
    scoreboard_model,
    scoreboard_rows,
)
from attnbench.output.tables.table_model import BAD, DIM, GOOD
from attnbench.results.resultset import slug, unique_stem
from attnbench.results.scoreboard import Scoreboard


class ScoreboardJson(Exporter[Scoreboard]):
    """The scoreboard's own schema (`results.scoreboard.load_scoreboard` reads it back)."""

    suffix = ".json"

    def render(self, saved: Scoreboard) -> str:
        return saved.to_json()


class ScoreboardCsv(Exporter[Scoreboard]):
    """The table's rows as text, one line each."""

    suffix = ".csv"

    def render(self, saved: Scoreboard) -> str:
        header, rows = scoreboard_rows(saved)
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        writer.writerows([[as_text(cell.text) for cell in row] for row in rows])
        return buffer.getvalue()


class ScoreboardMarkdown(Exporter[Scoreboard]):
    """The table, then the rule and the notes."""

    suffix = ".md"

    def render(self, saved: Scoreboard) -> str:
        lines = ["# Scoreboard", "", render_markdown(scoreboard_model(saved), escape=md_strangers), ""]
        lines += [f"- {md_strangers(line)}" for line in scoreboard_lines(saved)]
        return "\n".join(lines) + "\n"


_HTML_TONES = {GOOD: "good", BAD: "bad", DIM: "dim"}
_HTML_STYLE = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
               "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:nth-child(2){text-align:left}"
               ".good{color:#176b2c}.bad{color:#a31515}.dim{color:#888}")


def _html_table(header: list[str], rows: list[list[ScoreCell]]) -> str:
    head = "".join(f"<th>{html.escape(name)}</th>" for name in header)
    body = "".join("<tr>" + "".join(f'<td class="{_HTML_TONES.get(c.tone, "")}">{html.escape(c.text)}</td>'
                                    for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


class ScoreboardHtml(Exporter[Scoreboard]):
    """One self-contained page: the table and the rule, and the class's history when given (every run saved
    in the results folder: per submission its best and latest), no scripts, no outside files."""

    suffix = ".html"

    def __init__(self, past: list[HistoryRow] | None = None) -> None:
        self.past = past

    def render(self, saved: Scoreboard) -> str:
        notes = "".join(f"<li>{html.escape(line)}</li>" for line in scoreboard_lines(saved))
        past = (f"<h2>History: best and latest of every run saved</h2>{_html_table(*history_rows(self.past))}"
                if self.past else "")
        return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>Scoreboard</title><style>{_HTML_STYLE}"
                f"</style></head><body><h1>Scoreboard</h1>{_html_table(*scoreboard_rows(saved))}<ul>{notes}</ul>"
                f"{past}</body></html>\n")


# JSON first: its file is the scoreboard's own (`board.path`). HTML only on request.
SCOREBOARD_EXPORTERS: tuple[Exporter[Scoreboard], ...] = (ScoreboardJson(), ScoreboardCsv(), ScoreboardMarkdown())


def save_scoreboard(board: Scoreboard, folder: str | Path, stem: str, with_html: bool = False) -> list[Path]:
    """Write the scoreboard's JSON, CSV and Markdown (and HTML) side by side, never over an existing one: each
    run adds to the folder's history. The HTML page shows that history too (this run included)."""
    suffixes = [e.suffix for e in SCOREBOARD_EXPORTERS] + [ScoreboardHtml.suffix]
    Path(folder).mkdir(parents=True, exist_ok=True)
    paths = save_formats(board, SCOREBOARD_EXPORTERS, folder, unique_stem(Path(folder), slug(stem, 120), suffixes))
    if with_html:
        past = history(load_boards(folder), board.cases)
        page = paths[0].with_suffix(".html")
        ScoreboardHtml(past).write(board, page)
        paths.append(page)
    return paths


class RowByRow:
    """A class's scoreboard saved while it is judged: after each row (or case) as `interrupted`, so a judge
    killed anyway (the OOM killer, a reboot) leaves the rows done so far; then whole, over the same files,
    when it finishes. Call it with the board as it grows; `finish` saves the end."""

    def __init__(self, folder: str | Path, stem: Callable[[Scoreboard], str], with_html: bool = False) -> None:
        self.folder, self.stem, self.with_html = folder, stem, with_html
        self.paths: list[Path] = []

    def __call__(self, board: Scoreboard) -> None:
        was = board.interrupted
        board.interrupted = True  # until the judge finishes, the file says it did not
        # The fresh inputs' seeds stay out of the files until the class ends: a program judged later could
        # read them there wherever the sandbox is off, and draw its own inputs from them.
        seeds = board.settings.pop("seeds", None)
        if seeds is not None:
            board.settings["seeds"] = "saved when the class ends (a later program must not read them)"
        try:
            self._save(board, with_html=False)
        finally:
            board.interrupted = was
            if seeds is not None:
                board.settings["seeds"] = seeds

    def finish(self, board: Scoreboard) -> list[Path]:
        """Save the finished board (over this run's own files); the paths, the HTML page last if asked."""
        return self._save(board, self.with_html)

    def _save(self, board: Scoreboard, with_html: bool) -> list[Path]:
        if not self.paths:
            self.paths = save_scoreboard(board, self.folder, self.stem(board), False)
        else:
            board.path = self.paths[0]
            for exporter, path in zip(SCOREBOARD_EXPORTERS, self.paths):
                exporter.write(board, path)
        if not with_html:
            return list(self.paths)
        past = history(load_boards(self.folder), board.cases)
        page = self.paths[0].with_suffix(".html")
        ScoreboardHtml(past).write(board, page)
        return [*self.paths, page]
