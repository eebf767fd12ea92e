"""The CSV format: one row per cell, every number at full precision; its columns are `CSV_COLUMNS`."""

from __future__ import annotations

import csv
import io
from typing import Any, Iterator

from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN
from attnbench.output.export.csv_columns import CSV_COLUMNS, cell_rows
from attnbench.output.export.exporter import Exporter
from attnbench.printable import printable
from attnbench.results.resultset import ResultSet


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def as_text(cell: str) -> str:
    """A CSV cell a spreadsheet reads as text, never as a formula: one that begins with = + - @ (or a tab
    or CR) gets a leading apostrophe, as OWASP advises; a lone "-" (no value) and plain numbers stay."""
    if cell.startswith(_FORMULA_STARTS) and cell != "-":
        try:
            float(cell)
            return cell
        except ValueError:
            return "'" + cell
    return cell


def _csv_value(value: Any) -> str:
    """Full precision: repr of a float round-trips exactly."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    # printable: a commit named by ATTNBENCH_GIT_COMMIT, a message quoting a user's path, reached `cat r.csv` raw
    return as_text(printable(value)) if isinstance(value, str) else str(value)


class CsvExporter(Exporter[ResultSet]):
    """One row per cell, every number at full precision."""

    suffix = ".csv"

    def rows(self, result: ResultSet, same_within: float = DEFAULT_SAME_WITHIN) -> Iterator[dict[str, Any]]:
        """Each cell's values by column name (None where the cell has none)."""
        for row in cell_rows(result, same_within):
            yield {column.name: column.read(row) for column in CSV_COLUMNS}

    def render(self, result: ResultSet) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([column.name for column in CSV_COLUMNS])
        for row in self.rows(result):
            writer.writerow([_csv_value(value) for value in row.values()])
        return buffer.getvalue()
