"""The API over files on disk: the suite's cases a selector names."""

from attnbench.api import suite_cases


def test_suite_cases_by_group_and_range():
    assert "t29" in [c.name for c in suite_cases("known")]
    assert [c.name for c in suite_cases("t01-t03")] == ["t01", "t02", "t03"]
