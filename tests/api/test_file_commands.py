"""The API over files on disk: the suite's cases a selector names."""

from attnbench.api import suite_cases


def test_suite_cases_by_group_and_range():
    assert "t29" in [c.name for c in suite_cases("known")]
    assert [c.name for c in suite_cases("t01-t03")] == ["t01", "t02", "t03"]


def test_a_large_gen_says_how_much_it_writes_and_refuses_what_the_disk_cannot_hold(monkeypatch):
    import shutil
    from collections import namedtuple

    import pytest

    from attnbench import api
    from attnbench.api import file_commands as files
    from attnbench.errors import OutputError

    said = []
    monkeypatch.setattr(files, "SIZE_NOTICE_BYTES", 0)
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10, 10, 100))
    with pytest.raises(OutputError, match="need 0.0 GB, but only 0.0 GB is free"):
        api.generate(["odd_17x1"], force=True, notice=said.append)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10, 10, 1 << 40))
    api.generate(["odd_17x1"], force=True, notice=said.append)
    assert said and said[0].startswith("writing 0.0 GB (1 case(s): inputs and float64 references) to ")
