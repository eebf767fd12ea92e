"""The JSON format: the versioned results schema (see attnbench.results)."""

from __future__ import annotations

from pathlib import Path

from attnbench.files import write_text
from attnbench.results.resultset import ResultSet, dumps


class JsonExporter:
    """The versioned results schema (see attnbench.results)."""

    suffix = ".json"

    def render(self, result: ResultSet) -> str:
        return dumps(result)

    def write(self, result: ResultSet, path: Path) -> None:
        write_text(path, self.render(result))
