"""A class's scoreboard, drawn: one table model (terminal, Markdown), CSV, HTML, and saving all four.

The rows are built once (`scoreboard_rows`); the table, the CSV and the HTML page are renderings of
them, so the four never disagree.
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass
from pathlib import Path

from attnbench.files import write_text
from attnbench.output.markdown import render as render_markdown
from attnbench.output.table_model import BAD, DIM, GOOD, Column, TableModel, Text
from attnbench.results.resultset import slug, unique_stem
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow


@dataclass(frozen=True)
class ScoreCell:
    text: str
    tone: str = ""


def _rank(row: SubmissionRow) -> str:
    if row.rank is None:
        return "-"
    return f"{row.rank}=" if row.tied else str(row.rank)


def _entry(entry: CaseEntry | None) -> ScoreCell:
    if entry is None:
        return ScoreCell("not run", DIM)
    if entry.passed and entry.time_s is not None:
        return ScoreCell(f"{entry.time_s:.3f} s", GOOD)
    return ScoreCell(entry.verdict, BAD)


def scoreboard_rows(board: Scoreboard) -> tuple[list[str], list[list[ScoreCell]]]:
    """The header and the rows every rendering shares."""
    header = ["rank", "submission", "passed", "total (passed)", *board.cases, "GPU", "note"]
    rows = []
    for row in board.rows:
        note = row.build_message if not row.built else (f"median of {row.reruns} runs" if row.reruns > 1 else "")
        rows.append([ScoreCell(_rank(row)), ScoreCell(row.name),
                     ScoreCell(f"{row.passed}/{len(board.cases)}", GOOD if row.passed == len(board.cases) else ""),
                     ScoreCell(f"{row.total_s:.3f} s" if row.passed else "-"),
                     *[_entry(row.entries.get(case)) if row.built else ScoreCell("-", DIM) for case in board.cases],
                     ScoreCell(row.gpu or "-"), ScoreCell(note, "" if row.built else BAD)])
    return header, rows


def scoreboard_model(board: Scoreboard, title: str = "scoreboard") -> TableModel:
    header, rows = scoreboard_rows(board)
    numeric = {0, 2, 3, *range(4, 4 + len(board.cases))}
    model = TableModel(title, [Column(name, right=i in numeric, wide=name == "note") for i, name in enumerate(header)])
    for row in rows:
        model.add_row(*[Text(cell.text, cell.tone) for cell in row])
    return model


def scoreboard_lines(board: Scoreboard) -> list[str]:
    """The lines printed and saved under the table: the rule, mixed GPUs, an interruption."""
    lines = [f"ranks: {board.settings.get('ranking', '')}", f"reruns: {board.settings.get('reruns', '')}",
             f"limits: {board.settings.get('time_limits', '')}"]
    kinds = board.gpu_kinds
    if len(kinds) > 1:
        lines.append(f"these rows ran on {len(kinds)} kinds of GPU ({', '.join(kinds)}): each kind is ranked "
                     "on its own, and times are not comparable between kinds")
    if board.interrupted:
        lines.append("interrupted: the submissions and cases after the interruption were not judged")
    return lines


def scoreboard_csv(board: Scoreboard) -> str:
    header, rows = scoreboard_rows(board)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([[cell.text for cell in row] for row in rows])
    return buffer.getvalue()


def scoreboard_markdown(board: Scoreboard) -> str:
    lines = ["# Scoreboard", "", render_markdown(scoreboard_model(board)), ""]
    lines += [f"- {line}" for line in scoreboard_lines(board)]
    return "\n".join(lines) + "\n"


_HTML_TONES = {GOOD: "good", BAD: "bad", DIM: "dim"}
_HTML_STYLE = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
               "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:nth-child(2){text-align:left}"
               ".good{color:#176b2c}.bad{color:#a31515}.dim{color:#888}")


def scoreboard_html(board: Scoreboard) -> str:
    """One self-contained page: the table and the rule, no scripts, no outside files."""
    header, rows = scoreboard_rows(board)
    head = "".join(f"<th>{html.escape(name)}</th>" for name in header)
    body = "".join("<tr>" + "".join(f'<td class="{_HTML_TONES.get(c.tone, "")}">{html.escape(c.text)}</td>'
                                    for c in row) + "</tr>" for row in rows)
    notes = "".join(f"<li>{html.escape(line)}</li>" for line in scoreboard_lines(board))
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>Scoreboard</title><style>{_HTML_STYLE}"
            f"</style></head><body><h1>Scoreboard</h1><table><tr>{head}</tr>{body}</table><ul>{notes}</ul>"
            "</body></html>\n")


def class_stem(board: Scoreboard, selector: str) -> str:
    """The stem a class's saved files take: its date and its cases (a range for a list or files)."""
    date = str(board.metadata.get("date") or "")[:10] or "undated"
    what = selector if "," not in selector and "/" not in selector else f"{board.cases[0]}-{board.cases[-1]}"
    return f"{date}_class_{what}"


def save_scoreboard(board: Scoreboard, folder: str | Path, stem: str, with_html: bool = False) -> list[Path]:
    """Write the scoreboard's JSON, CSV and Markdown (and HTML) side by side, never over an existing one."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    renderings = {".json": board.to_json, ".csv": lambda: scoreboard_csv(board),
                  ".md": lambda: scoreboard_markdown(board)}
    if with_html:
        renderings[".html"] = lambda: scoreboard_html(board)
    stem = unique_stem(folder, slug(stem, 120), list(renderings))
    paths = []
    for suffix, render in renderings.items():
        path = folder / f"{stem}{suffix}"
        write_text(path, render())
        paths.append(path)
    board.path = paths[0]
    return paths
