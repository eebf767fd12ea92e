"""The package's shape: layers held by import-linter, click only in the command line, small modules."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HINT_MODULE_LINES = 400  # a hint to look for two jobs, not a cap: files are cut by concept
MAX_MODULE_LINES = 800  # past this a module surely holds two jobs


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter is not installed (the test extra)")
def test_import_linter_contracts_hold():
    done = subprocess.run(["lint-imports", "--config", str(ROOT / "pyproject.toml")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "BROKEN" not in done.stdout


def test_no_module_holds_two_jobs_by_its_length():
    lengths = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in (ROOT / "attnbench").rglob("*.py")}
    hinted = {name: n for name, n in lengths.items() if n > HINT_MODULE_LINES}
    if hinted:
        warnings.warn(f"modules over {HINT_MODULE_LINES} lines (two jobs?): {hinted}", stacklevel=1)
    too_long = {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES}
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines: cut them by concept: {too_long}"
