"""The package's shape: layers held by import-linter, click only in the command line, small modules."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 400


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter is not installed (the test extra)")
def test_import_linter_contracts_hold():
    done = subprocess.run(["lint-imports", "--config", str(ROOT / "pyproject.toml")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "BROKEN" not in done.stdout


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "attnbench").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (two jobs?): {long}"
