"""docs/results/README.md is what tools/results_index.py writes from the kept runs: it cannot drift from them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "docs" / "results"


def test_the_committed_index_is_the_one_the_runs_give():
    done = check(ROOT)
    assert done.returncode == 0, done.stderr


def check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(root / "tools" / "results_index.py"), "--check"],
                          check=False, capture_output=True, text=True, cwd=root)


def copy_of_the_checkout_parts(tmp_path: Path) -> Path:
    shutil.copytree(FOLDER, tmp_path / "docs" / "results")
    (tmp_path / "tools").mkdir()
    shutil.copy(ROOT / "tools" / "results_index.py", tmp_path / "tools")
    shutil.copytree(ROOT / "attnbench", tmp_path / "attnbench", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_a_run_added_without_its_description_or_an_edited_index_is_caught(tmp_path):
    root = copy_of_the_checkout_parts(tmp_path)
    (root / "docs" / "results" / "2026-12-01_h100_new.md").write_text("# a new run\n")
    done = check(root)
    assert done.returncode == 1 and "2026-12-01_h100_new.md" in done.stderr
    (root / "docs" / "results" / "2026-12-01_h100_new.md").unlink()
    index = root / "docs" / "results" / "README.md"
    index.write_text(index.read_text().replace("NVIDIA H200", "NVIDIA H20", 1))
    done = check(root)
    assert done.returncode == 1 and "out of date" in done.stderr


def test_the_reference_runs_stay_few():
    """At most 30 files: the reference runs the README quotes, not a lab notebook."""
    files = list(FOLDER.iterdir())
    assert len(files) <= 30 and all(p.is_file() for p in files), sorted(p.name for p in files)


def test_every_results_link_in_the_readme_and_its_guides_names_a_kept_file():
    import re

    guides = sorted((ROOT / "docs").glob("*.md"))
    readme = "\n".join(path.read_text() for path in [ROOT / "README.md", *guides])
    named = set(re.findall(r"docs/results/([\w.-]+\.(?:md|json|log))", readme))
    assert named and all((FOLDER / name).is_file() for name in named), sorted(n for n in named if not (FOLDER / n).is_file())
    assert not re.search(r"(?<![\w/-])results/20\d\d", readme), "a link to the removed results/ folder"
