"""docs/results/README.md is what tools/results_index.py writes from the kept runs: it cannot drift from them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "docs" / "results"


def test_the_committed_index_is_the_one_the_runs_give():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "results_index.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_the_reference_runs_stay_few():
    """At most 30 files: the reference runs the README quotes, not a lab notebook."""
    files = [p for p in FOLDER.iterdir()]
    assert len(files) <= 30 and all(p.is_file() for p in files), sorted(p.name for p in files)


def test_every_results_link_in_the_readme_names_a_kept_file():
    import re

    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r"docs/results/([\w.-]+\.(?:md|json|log))", readme))
    assert named and all((FOLDER / name).is_file() for name in named), sorted(n for n in named if not (FOLDER / n).is_file())
    assert not re.search(r"(?<![\w/-])results/20\d\d", readme), "a link to the removed results/ folder"
