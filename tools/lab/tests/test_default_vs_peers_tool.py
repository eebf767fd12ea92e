"""tools/lab/default_vs_peers.py: the default's pick per case, its speedups and its loss, from a saved compare."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SAVED = ROOT / "docs" / "results" / "2026-11-26_h100_final_default_peers_t01-t30.json"  # wgmma3x, tf32x3, triton, torch on an H100


def run_tool(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "lab" / "default_vs_peers.py"), str(path)],
                          capture_output=True, text=True, cwd=ROOT)


def test_each_case_names_the_default_and_its_speedups():
    done = run_tool(SAVED)
    assert done.returncode == 0, done.stderr
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
            for line in done.stdout.splitlines() if line.startswith("| t")}
    assert len(rows) == 30
    assert rows["t01"][2] == "tf32x3" and rows["t22"][2] == "wgmma3x" and rows["t13"][2] == "wgmma3x"
    assert rows["t03"][2] == "wgmma3x" and rows["t12"][2] == "wgmma3x" and rows["t14"][2] == "wgmma3x"
    assert all(row[-1] == "-" for row in rows.values())  # the default is the fastest timed built-in on each
    assert "over torch: geometric mean 3.64x, minimum 1.75x, 2 of 30 cases under 2x" in done.stdout


def test_a_compare_without_the_default_on_a_case_exits_1_and_says_which(tmp_path):
    data = json.loads(SAVED.read_text())
    data["cells"] = [c for c in data["cells"] if not (c["variant"] == "wgmma3x" and c["case"] == "t22")]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(data))
    done = run_tool(partial)
    assert done.returncode == 1 and "not in the compare: wgmma3x on t22" in done.stdout
