"""Saved-result formats, one module per format: JSON (the saved schema), CSV (full precision), Markdown.

Each implements the `Exporter` interface; `EXPORTERS` is the one list that saving writes, so a new
format is one module and one entry here.
"""

from __future__ import annotations

from attnbench.output.export.csv_export import CsvExporter
from attnbench.output.export.exporter import Exporter
from attnbench.output.export.json_export import JsonExporter
from attnbench.output.export.markdown_export import MarkdownExporter

# JSON first: its file is the result's own (it names the result, and `load` reads it back).
EXPORTERS: tuple[Exporter, ...] = (JsonExporter(), CsvExporter(), MarkdownExporter())
