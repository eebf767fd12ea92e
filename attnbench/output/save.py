"""Saving a result set: its JSON, CSV and Markdown side by side, never over an existing result."""

from __future__ import annotations

from pathlib import Path

from attnbench.output.export import EXPORTERS
from attnbench.results.resultset import ResultSet, default_name, slug, unique_stem


def save(result: ResultSet, folder: str | Path, stem: str | None = None, selector: str | None = None) -> list[Path]:
    """Write the JSON, CSV and Markdown of a result set; returns their paths, JSON first."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    suffixes = [e.suffix for e in EXPORTERS]
    stem = unique_stem(folder, slug(stem, 120) if stem else default_name(result, selector), suffixes)
    result.path = folder / f"{stem}.json"
    paths = []
    for exporter in EXPORTERS:
        path = folder / f"{stem}{exporter.suffix}"
        exporter.write(result, path)
        paths.append(path)
    return paths
