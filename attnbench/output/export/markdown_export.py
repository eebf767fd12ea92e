"""The Markdown format: the page saved beside a result's JSON."""

from __future__ import annotations

from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN
from attnbench.output.export.exporter import Exporter
from attnbench.output.markdown import markdown_document
from attnbench.results.resultset import ResultSet


class MarkdownExporter(Exporter):
    """A Markdown page: environment, then time, TFLOP/s, speedup and correctness tables."""

    suffix = ".md"

    def render(self, result: ResultSet) -> str:
        return markdown_document(result, result.settings.get("same_within", DEFAULT_SAME_WITHIN))
