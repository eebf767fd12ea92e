"""The class every class test judges: built once per test module (tests.judge.classes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.judge.classes import can_build, make_class


@pytest.fixture(scope="module")
def classroom(tmp_path_factory) -> Path:
    if not can_build():
        pytest.skip("no C compiler or make")
    return make_class(tmp_path_factory.mktemp("class"))
