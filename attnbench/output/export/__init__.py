"""Saved-result formats, one module per format: JSON (the saved schema), CSV (full precision), Markdown.

Each implements the `Exporter` interface; `EXPORTERS` is the one list that saving (`save`) writes, so a
new format is one module and one entry here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from attnbench.output.export.csv_export import CsvExporter
from attnbench.output.export.exporter import Exporter, save_formats
from attnbench.output.export.json_export import JsonExporter
from attnbench.output.export.markdown_export import MarkdownExporter
from attnbench.results.resultset import ResultSet, default_name, slug

# JSON first: its file is the result's own (it names the result, and `load` reads it back).
EXPORTERS: tuple[Exporter, ...] = (JsonExporter(), CsvExporter(), MarkdownExporter())


def save(result: ResultSet, folder: str | Path, stem: str | None = None, selector: str | None = None,
         reserved: Sequence[str] = ()) -> list[Path]:
    """Write every format of a result set (JSON, CSV, Markdown); returns their paths, JSON first. `reserved`:
    the tails of files to be written under the same stem afterwards (plots), never over an existing file."""
    return save_formats(result, EXPORTERS, folder, slug(stem, 120) if stem else default_name(result, selector),
                        reserved)
