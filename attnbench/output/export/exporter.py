"""The one interface every saved format implements (as hyperfine's export/ and NVBench's printers do)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence, TypeVar

from attnbench.files import write_text
from attnbench.results.resultset import unique_stem

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


class SavedAt(Protocol):
    path: Path | None  # where it was saved (its first format's file)


Kept = TypeVar("Kept", bound=SavedAt)


def save_formats(saved: Kept, exporters: Sequence[Exporter[Kept]], folder: str | Path, stem: str,
                 reserved: Sequence[str] = ()) -> list[Path]:
    """Write each exporter's format of `saved` side by side under one stem that names none of the folder's
    files (never over an existing one); `saved.path` is the first format's file, set before writing, since
    the other formats may name it. `reserved`: the tails of files written after them under the same stem
    (plots), which the stem must name no existing file with either. Returns the paths, in the exporters' order."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stem = unique_stem(folder, stem, [exporter.suffix for exporter in exporters] + list(reserved))
    paths = [folder / f"{stem}{exporter.suffix}" for exporter in exporters]
    saved.path = paths[0]
    for exporter, path in zip(exporters, paths):
        exporter.write(saved, path)
    return paths
