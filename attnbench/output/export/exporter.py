"""The one interface every saved format implements (as hyperfine's export/ and NVBench's printers do)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, TypeVar

from attnbench.files import write_text

Saved = TypeVar("Saved", contravariant=True)  # what is saved: a ResultSet, a class's Scoreboard


class Exporter(Protocol[Saved]):
    """A saved format of one kind of result: the suffix of its file, and its text. A format subclasses this
    (`Exporter[ResultSet]`) and implements `render`; `write` is shared."""

    suffix: str

    def render(self, saved: Saved) -> str:
        """The file's whole text."""
        ...

    def write(self, saved: Saved, path: Path) -> None:
        """Save `render`'s text through attnbench.files: never a partial file, an old one replaced whole."""
        write_text(path, self.render(saved))
