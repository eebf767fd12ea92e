"""Saving a result set: each of its formats (`EXPORTERS`) side by side, never over an existing result."""

from __future__ import annotations

from pathlib import Path

from attnbench.output.export import EXPORTERS
from attnbench.output.export.exporter import save_formats
from attnbench.results.resultset import ResultSet, default_name, slug


def save(result: ResultSet, folder: str | Path, stem: str | None = None, selector: str | None = None) -> list[Path]:
    """Write every format of a result set (JSON, CSV, Markdown); returns their paths, JSON first."""
    return save_formats(result, EXPORTERS, folder, slug(stem, 120) if stem else default_name(result, selector))
