"""The sweep's Python face: sizes and values as a list of whole numbers as well as text."""

import re

import pytest

import attnbench as api
from attnbench.errors import UsageError


def test_a_sweep_takes_its_values_as_a_python_list_as_it_takes_them_as_text():
    """From Python, sweep(values=[16]) was an AttributeError (a newcomer pass): a list is the comma text."""
    timing = api.TimingOptions(reps=1)
    as_list = api.sweep("N", "cpu", values=[8, 16], batch=1, head_dim=8, timing=timing)
    as_text = api.sweep("N", "cpu", values="8,16", batch=1, head_dim=8, timing=timing)
    assert [c.label for c in as_list.cases] == [c.label for c in as_text.cases] and len(as_list.cases) == 2


@pytest.mark.parametrize("values", [[8, "16"], [True], 16, [1.5]])
def test_a_sweep_refuses_values_that_are_no_list_of_whole_numbers_in_one_line(values):
    with pytest.raises(UsageError, match="values="):
        api.sweep("N", "cpu", values=values, batch=1, head_dim=8)


@pytest.mark.parametrize("what, given, said", [
    ("square", {"sizes": [16], "values": [3]}, "sweep square does not use values=[3]"),
    ("square", {"sizes": [16], "batch": 2}, "sweep square does not use batch=2"),
    ("n", {"values": [16], "sizes": [3]}, "sweep N does not use sizes=[3]"),
    ("n", {"values": [16], "lab_timing": True}, "sweep N does not use lab_timing=True"),
    ("n", {"values": [16], "seq_len": 64}, "sweep N does not use seq_len=64"),
    ("d", {"values": [16], "head_dim": 32}, "sweep d does not use head_dim=32"),
    ("n", {"values": [16], "device": 1}, "--device 1: none of cpu runs on a GPU"),
])
def test_an_argument_the_axis_does_not_read_is_refused_not_dropped(what, given, said):
    """From Python, sweep("square", sizes=[16], values=[3]) ran the square sizes and dropped values without a word
    (the command line refuses it), and device=1 with host variants only was taken as compare never takes it."""
    with pytest.raises(UsageError, match=re.escape(said)):
        api.sweep(what, ["cpu"], timing=api.TimingOptions(reps=2), **given)


@pytest.mark.parametrize("what, given", [("square", {"sizes": [-3]}), ("n", {"values": [16, -32]})])
def test_a_negative_size_in_a_list_is_named_as_given(what, given):
    """sizes=[-3] became the text "-3", read as a range, and the error said "--sizes '': not a whole number"."""
    name, value = next(iter(given.items()))
    with pytest.raises(UsageError, match=re.escape(f"{name}={value!r}: a list of whole numbers >= 1")):
        api.sweep(what, ["cpu"], **given)
