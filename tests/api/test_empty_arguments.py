"""An empty path or name given from Python is named as such, not read as the current folder."""

from pathlib import Path

import pytest

from attnbench.api.empty_arguments import refuse_empty
from attnbench.errors import UsageError


@pytest.mark.parametrize("given", ["", "  "])
def test_an_empty_or_blank_argument_is_bad_usage_naming_it(given):
    with pytest.raises(UsageError, match=r"^ref is empty \('.*'\): give a reference$"):
        refuse_empty("ref", given, "a reference")


@pytest.mark.parametrize("given", [None, "t02", Path("out.bin")])
def test_a_named_or_default_argument_passes(given):
    refuse_empty("ref", given, "a reference")
