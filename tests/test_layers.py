"""The package's shape: layers held by import-linter, click only in the command line, small modules, one name each."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from collections import Counter
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


def modules_sharing_a_basename(package: Path) -> dict[str, list[str]]:
    """Basenames that more than one module of the package carries (package __init__ files aside)."""
    modules = [p for p in package.rglob("*.py") if p.name != "__init__.py"]
    counts = Counter(p.name for p in modules)
    return {name: sorted(str(p.relative_to(package.parent)) for p in modules if p.name == name)
            for name, n in counts.items() if n > 1}


def test_no_two_modules_share_a_basename():
    # a name says a module's role: two `ceilings.py` make a reader open both to learn which is which
    assert modules_sharing_a_basename(ROOT / "attnbench") == {}, "rename one of each pair by its role"


def test_twin_basenames_are_found(tmp_path):
    for module in ("pkg/a/ceilings.py", "pkg/b/ceilings.py", "pkg/a/__init__.py", "pkg/b/__init__.py", "pkg/c.py"):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    assert modules_sharing_a_basename(tmp_path / "pkg") == {"ceilings.py": ["pkg/a/ceilings.py", "pkg/b/ceilings.py"]}
