"""Text someone else wrote, made safe to print and save: no control character reaches a terminal or a file.

A submission's folder name, its compiler's errors and its last stderr line are written by whoever wrote
the submission. Printed raw, an escape sequence moves the cursor, recolours the screen, sets the window's
title or makes a link (a build error once drew a fake PASS row into a scoreboard). Every control and
format character (ESC, CR, BEL, bidirectional overrides, line separators) becomes a visible escape, and a
byte of a file name that is not UTF-8 becomes \\xNN, so the text is one printable line.
"""

from __future__ import annotations

_SURROGATES = range(0xDC80, 0xDD00)  # os.fsdecode's stand-ins for bytes that are not UTF-8


def _escape(char: str) -> str:
    code = ord(char)
    if code in _SURROGATES:
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: object) -> str:
    """str(text) with every character that is not printable (a space is) written as an escape."""
    value = str(text)
    if value.isprintable():
        return value
    return "".join(c if c.isprintable() else _escape(c) for c in value)


def first_few(names: list[str], shown: int = 5) -> str:
    """`a, b, c and 4 more`: the first `shown` names, and how many more there are."""
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 case`, `2 cases`: a count with its noun in the number it takes (`plural` where adding s is wrong)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
