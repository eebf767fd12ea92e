"""Saving a result set: each of its formats (`EXPORTERS`) side by side, never over an existing result."""

from __future__ import annotations

from pathlib import Path

from attnbench.output.export import EXPORTERS
from attnbench.results.resultset import ResultSet, default_name, slug, unique_stem


def save(result: ResultSet, folder: str | Path, stem: str | None = None, selector: str | None = None) -> list[Path]:
    """Write every format of a result set (JSON, CSV, Markdown); returns their paths, JSON first."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stem = unique_stem(folder, slug(stem, 120) if stem else default_name(result, selector),
                       [exporter.suffix for exporter in EXPORTERS])
    paths = [folder / f"{stem}{exporter.suffix}" for exporter in EXPORTERS]
    result.path = paths[0]  # set before writing: the other formats may name the result by its JSON
    for exporter, path in zip(EXPORTERS, paths):
        exporter.write(result, path)
    return paths
