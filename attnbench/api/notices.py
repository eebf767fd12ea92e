"""How the API tells its caller something in passing: a function that takes one line (the CLI prints it
to stderr; a library caller may log it or drop it)."""

from __future__ import annotations

from typing import Callable

Notice = Callable[[str], None]  # receives one-line notes for the user ("running the cpu variant", ...)


def quiet(note: str) -> None:
    """The default Notice: say nothing."""


def say_suite_writes(pending: int, folder: object, notice: Notice) -> None:
    """Before a command generates suite cases (the course's thirty take about 8.6 GB), say how much it will
    write and where, and how to write less; nothing when everything is there already."""
    if pending:
        scale, unit = next((scale, unit) for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "bytes"))
                           if pending >= scale)
        size = f"{pending / scale:.1f} GB" if unit == "GB" else f"{pending / scale:.0f} {unit}"
        notice(f"the cases not generated yet take {size} (inputs and float64 references) in "
               f"{folder}; --cases limits them (e.g. --cases t01-t10)")
