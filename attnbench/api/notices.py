"""How the API tells its caller something in passing: a function that takes one line (the CLI prints it
to stderr; a library caller may log it or drop it)."""

from __future__ import annotations

from typing import Callable

Notice = Callable[[str], None]  # receives one-line notes for the user ("running the cpu variant", ...)


def quiet(note: str) -> None:
    """The default Notice: say nothing."""
