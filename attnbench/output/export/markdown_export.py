"""The Markdown format: the page saved beside a result's JSON."""

from __future__ import annotations

from pathlib import Path

from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN
from attnbench.files import write_text
from attnbench.output.markdown import markdown_document
from attnbench.results.resultset import ResultSet


class MarkdownExporter:
    """A Markdown page: environment, then time, TFLOP/s, speedup and correctness tables."""

    suffix = ".md"

    def render(self, result: ResultSet) -> str:
        return markdown_document(result, result.settings.get("same_within", DEFAULT_SAME_WITHIN))

    def write(self, result: ResultSet, path: Path) -> None:
        write_text(path, self.render(result))
