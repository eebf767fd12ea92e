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
