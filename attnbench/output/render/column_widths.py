"""Column widths that never cut a word: every column at least as wide as its longest word (a name such
as `odd_1000x128` or a header such as `constraints`), the rest of the room shared by what each column
would take on one line; when even the longest words do not fit side by side, the caller turns to a
vertical layout. rich's own collapse of a too-wide table ignores words and folds names mid-word, which
is why the widths are decided here."""

from __future__ import annotations

from rich.cells import cell_len


def longest_word(text: str) -> int:
    """Terminal cells of the longest whitespace-separated word of `text`."""
    return max((cell_len(word) for word in text.split()), default=0)


def longest_line(text: str) -> int:
    """Terminal cells of the longest line of `text`."""
    return max((cell_len(line) for line in text.splitlines()), default=0)


def fit_widths(words: list[int], lines: list[int], room: int) -> list[int] | None:
    """Column widths summing to at most `room`, each at least its longest word and at most its longest
    line; the room past the words is shared in proportion to what each column still wants. None when
    the words alone need more than `room`."""
    need = [max(w, 1) for w in words]
    want = [max(line, n) for line, n in zip(lines, need)]
    if sum(need) > room:
        return None
    if sum(want) <= room:
        return want
    spare, extra = room - sum(need), [w - n for w, n in zip(want, need)]
    total = sum(extra)
    widths = [n + spare * e // total for n, e in zip(need, extra)]
    for i in sorted(range(len(widths)), key=lambda i: extra[i], reverse=True):  # the rounding's leftovers
        if sum(widths) >= room:
            break
        if widths[i] < want[i]:
            widths[i] += 1
    return widths
