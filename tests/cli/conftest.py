"""The `cli` fixture: invoke `attnbench` in-process, exceptions raised rather than caught."""

import pytest
from click.testing import CliRunner

from attnbench.cli import main


@pytest.fixture
def cli():
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke
