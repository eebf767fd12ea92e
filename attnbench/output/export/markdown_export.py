"""The Markdown format: the page saved beside a result's JSON, ending with a legend of its CSV's columns."""

from __future__ import annotations

from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN
from attnbench.output.export.csv_columns import csv_legend
from attnbench.output.export.exporter import Exporter
from attnbench.output.render.markdown import markdown_document
from attnbench.output.render.markdown import render as render_markdown
from attnbench.results.resultset import ResultSet


class MarkdownExporter(Exporter[ResultSet]):
    """A Markdown page: environment, then time, TFLOP/s, speedup and correctness tables, then what each of
    the CSV's columns holds (the CSV's header carries no units)."""

    suffix = ".md"

    def render(self, result: ResultSet) -> str:
        same_within = result.settings.same_within
        page = markdown_document(result, DEFAULT_SAME_WITHIN if same_within is None else same_within)
        return f"{page}\n{render_markdown(csv_legend(), level=2)}\n"
