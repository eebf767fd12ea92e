"""A class's scoreboard, drawn: its rows and one table model (terminal, Markdown), and the lines under it.

The rows are built once (`scoreboard_rows`); the table here and the saved CSV and HTML
(`output.export.scoreboard_export`) are renderings of them, so they never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnbench.analysis.class_history import HistoryRow, RunOf
from attnbench.output.tables.table_model import BAD, DIM, GOOD, Column, TableModel, Text
from attnbench.printable import printable
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow


@dataclass(frozen=True)
class ScoreCell:
    """One cell's text (control characters escaped: names and notes are the submissions' words) and tone."""

    text: str
    tone: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", printable(self.text))


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
        if row.built and row.gpu_note:
            note = f"{note}; {row.gpu_note}" if note else row.gpu_note
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
    confined = board.settings.get("confinement") or {}
    lines += [f"limit not applied: {note}" for note in confined.get("limits_not_applied", [])]
    if board.settings.get("cpu_pinning"):
        lines.append(f"each worker's runs are kept on its cores by {board.settings['cpu_pinning']}")
    lines = [printable(line) for line in lines]
    kinds = board.gpu_kinds
    if len(kinds) > 1:
        lines.append(f"these rows ran on {len(kinds)} kinds of GPU ({', '.join(kinds)}): each kind is ranked "
                     "on its own, and times are not comparable between kinds")
    if board.interrupted:
        lines.append("interrupted: the submissions and cases after the interruption were not judged")
    return lines


def class_stem(board: Scoreboard, selector: str) -> str:
    """The stem a class's saved files take: its date and its cases (a range for a list or files)."""
    date = str(board.metadata.get("date") or "")[:10] or "undated"
    what = selector if "," not in selector and "/" not in selector else f"{board.cases[0]}-{board.cases[-1]}"
    return f"{date}_class_{what}"


def _run_text(run: RunOf) -> str:
    if not run.built:
        return f"build failed ({run.date or 'undated'})"
    rank = "-" if run.rank is None else f"{run.rank}=" if run.tied else str(run.rank)
    total = f"{run.total_s:.3f} s" if run.passed else "-"
    return f"{run.passed}/{run.cases} {total} (rank {rank}, {run.date or 'undated'})"


def history_rows(rows: list[HistoryRow]) -> tuple[list[str], list[list[ScoreCell]]]:
    """A class's history (analysis.class_history) as the rows every rendering shares."""
    header = ["submission", "runs", "best", "latest"]
    return header, [[ScoreCell(h.name), ScoreCell(str(h.runs)), ScoreCell(_run_text(h.best), GOOD),
                     ScoreCell(_run_text(h.latest))] for h in rows]


def history_model(rows: list[HistoryRow], title: str = "history") -> TableModel:
    header, cells = history_rows(rows)
    model = TableModel(title, [Column(name, right=i == 1) for i, name in enumerate(header)])
    for row in cells:
        model.add_row(*[Text(cell.text, cell.tone) for cell in row])
    return model
