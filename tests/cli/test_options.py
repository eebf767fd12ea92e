"""attnbench/cli/options.py: the options several commands share refuse, in one line, a value no run could use."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("command", [["judge", "prog"], ["compare", "-v", "cpu", "-c", "odd_17x48"],
                                     ["sweep", "N", "--values", "64", "--variants", "cpu"], ["profile", "t02"]])
def test_an_empty_name_is_refused_not_replaced_by_the_default(cli, command):
    """`--name ""` (an unset variable) saved under the default stem without a word."""
    result = cli(*command, "--name", "")
    assert result.exit_code == 2 and "'--name': is empty" in result.output, result.output
