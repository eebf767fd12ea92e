"""Saved-result formats, one module per format: JSON (the saved schema), CSV (full precision), Markdown."""

from __future__ import annotations

from attnbench.output.export.csv_export import CsvExporter
from attnbench.output.export.json_export import JsonExporter
from attnbench.output.export.markdown_export import MarkdownExporter

EXPORTERS = (JsonExporter(), CsvExporter(), MarkdownExporter())
