"""The one interface every saved format implements (as hyperfine's export/ and NVBench's printers do)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from attnbench.files import write_text
from attnbench.results.resultset import ResultSet


class Exporter(Protocol):
    """A saved format of a result set: the suffix of its file, and its text. A format subclasses this and
    implements `render`; `write` is shared."""

    suffix: str

    def render(self, result: ResultSet) -> str:
        """The file's whole text."""
        ...

    def write(self, result: ResultSet, path: Path) -> None:
        """Save `render`'s text through attnbench.files: never a partial file, an old one replaced whole."""
        write_text(path, self.render(result))
