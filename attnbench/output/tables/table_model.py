"""One table, many renderers: the plain model every table is built as, once.

Row builders (`attnbench.output.tables.result_tables`) fill a `TableModel`; the terminal renders it with rich,
saved results and reports render it as Markdown, and piped output renders it as plain text. A cell
may carry a tone ("good", "bad", "dim") that a renderer may show as a colour and may ignore.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

GOOD, BAD, DIM = "good", "bad", "dim"


@dataclass(frozen=True)
class Text:
    """One cell: its text (lines separated by newlines) and an optional tone."""

    text: str
    tone: str = ""

    def __str__(self) -> str:
        return self.text


def as_text(value: "Text | str") -> Text:
    return value if isinstance(value, Text) else Text(str(value))


@dataclass
class Column:
    name: str
    right: bool = False  # numbers align right
    wide: bool = False  # dropped where the terminal is narrow and the user did not ask for --wide
    optional: bool = False  # dropped too, after the wide ones, where the table would not fit side by side with it


@dataclass
class TableModel:
    """A titled table: columns and rows of cells, built once and rendered many ways."""

    title: str
    columns: list[Column]
    rows: list[list[Text]] = field(default_factory=list)
    row_lines: bool = False  # separators between rows, for cells of several lines

    def add_row(self, *cells: "Text | str") -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.title}: a row of {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append([as_text(c) for c in cells])

    def without_wide(self) -> "TableModel":
        """The same table without its `wide` columns."""
        return self._keeping(lambda column: not column.wide)

    def without_optional(self) -> "TableModel":
        """The same table without its `wide` and `optional` columns: the narrowest it can be drawn side by side."""
        return self._keeping(lambda column: not column.wide and not column.optional)

    def _keeping(self, wanted: "Callable[[Column], bool]") -> "TableModel":
        keep = [i for i, c in enumerate(self.columns) if wanted(c)]
        return TableModel(self.title, [self.columns[i] for i in keep], [[r[i] for i in keep] for r in self.rows],
                          self.row_lines)


def columns(*names: str, right_from: int | None = None) -> list[Column]:
    """Columns by name; with `right_from`, the columns from that index on align right."""
    return [Column(n, right=right_from is not None and i >= right_from) for i, n in enumerate(names)]
