"""The JSON format: the versioned results schema (see attnbench.results)."""

from __future__ import annotations

from attnbench.output.export.exporter import Exporter
from attnbench.results.resultset import ResultSet, dumps


class JsonExporter(Exporter[ResultSet]):
    """The versioned results schema (see attnbench.results)."""

    suffix = ".json"

    def render(self, result: ResultSet) -> str:
        return dumps(result)
