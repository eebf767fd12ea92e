"""attnbench.cases.inputs: a case list names each input once, and no input is dropped unsaid."""

from __future__ import annotations

import shutil

import pytest

from attnbench.cases import suite
from attnbench.cases.inputs import FileInput, inputs_for
from attnbench.errors import UsageError


def _file(folder, name="odd_17x48.in"):
    folder.mkdir(exist_ok=True)
    suite.generate_input(suite.SUITE["odd_17x48"])
    return shutil.copyfile(suite.input_path(suite.SUITE["odd_17x48"]), folder / name)


def test_two_files_of_one_name_in_two_folders_are_refused_not_one_of_them_dropped(tmp_path):
    """Both files were labelled by their name: the second was dropped without a word and a judge said "1 of 1 case
    passed" for the two the TA gave (red team)."""
    first, second = _file(tmp_path / "a"), _file(tmp_path / "b")
    with pytest.raises(UsageError, match=f"^{second}: its case name odd_17x48.in is {first}'s too"):
        inputs_for([str(first), str(second)])


def test_an_input_named_twice_is_taken_once(tmp_path):
    first = _file(tmp_path / "a")
    other_path = tmp_path / "a" / ".." / "a" / "odd_17x48.in"
    chosen = inputs_for([str(first), str(other_path), "odd_17x48", "odd_17x48"])
    assert [i.label for i in chosen] == ["odd_17x48.in", "odd_17x48"] and isinstance(chosen[0], FileInput)


def test_a_file_named_as_a_suite_case_is_refused_beside_that_case(tmp_path):
    """`./t01` beside `t01`: one label for two inputs; the file was the one dropped."""
    named = _file(tmp_path / "a", "odd_17x48")
    with pytest.raises(UsageError, match="its case name odd_17x48 is odd_17x48's too"):
        inputs_for(["odd_17x48", str(named)])
