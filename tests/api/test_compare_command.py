"""`compare`'s selection: the variants a selector names, once each, and the names shell completion offers."""

from __future__ import annotations

import pytest

from attnbench.api.compare_command import case_names, variant_names, variants_from
from attnbench.errors import AttnbenchError


def test_a_selector_names_each_variant_once_in_its_order():
    assert [v.name for v in variants_from("cpu,naive,cpu")] == ["cpu", "naive"]
    assert [v.name for v in variants_from(["naive", " cpu "])] == ["naive", "cpu"]


def test_an_empty_selection_is_refused():
    with pytest.raises(AttnbenchError):
        variants_from(" , ")


def test_completion_offers_the_groups_with_the_names():
    assert {"cpu", "naive", "all", "ladder"} <= set(variant_names())
    assert {"t01", "all", "known"} <= set(case_names())


def test_a_compare_says_what_its_cases_will_write_before_writing_any():
    """`compare --cases course` on an empty data folder wrote 11.7 GB without a word; judge and gen say it first."""
    from attnbench import api
    from attnbench.cases import suite

    case = suite.get_case("odd_17x48")
    for path in (suite.input_path(case), suite.reference_path(case)):
        path.unlink(missing_ok=True)
    said: list[tuple[str, bool]] = []
    api.compare("cpu", "odd_17x48", timing=api.TimingOptions(reps=1),
                notice=lambda line: said.append((line, suite.is_generated(case))))
    pending = [written for line, written in said if "the cases not generated yet take" in line and "--cases" in line]
    assert pending == [False]  # said once, before the input was written
    said.clear()
    api.compare("cpu", "odd_17x48", timing=api.TimingOptions(reps=1), notice=lambda line: said.append((line, True)))
    assert not any("not generated yet" in line for line, _ in said)  # nothing left to write: nothing said
