"""Column widths never cut a word; they share the room, or say that a vertical layout is needed."""

from hypothesis import given
from hypothesis import strategies as st

from attnbench.output.render.column_widths import fit_widths, longest_line, longest_word


def test_words_and_lines_are_measured_in_terminal_cells():
    assert longest_word("max relative error") == 8 and longest_line("a b\nlonger line") == 11
    assert longest_word("±4.7% — ok") == 5 and longest_word("") == 0


def test_fixed_cases():
    assert fit_widths([5, 3], [10, 3], 20) == [10, 3]  # everything fits on one line
    assert fit_widths([5, 3], [25, 13], 20) == [13, 7]  # the spare shared by what each still wants
    assert fit_widths([12, 10], [12, 10], 21) is None  # the words alone do not fit: go vertical


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 80)), min_size=1, max_size=12), st.integers(1, 300))
def test_every_column_holds_its_longest_word_and_the_room_is_kept(columns, room):
    words = [w for w, _ in columns]
    lines = [max(w, line) for w, line in columns]
    widths = fit_widths(words, lines, room)
    if widths is None:
        assert sum(max(w, 1) for w in words) > room
        return
    assert sum(widths) <= room
    assert all(max(w, 1) <= width <= max(line, w, 1) for width, w, line in zip(widths, words, lines))
