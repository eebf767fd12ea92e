"""The sweep's Python face: sizes and values as a list of whole numbers as well as text."""

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
