"""tools/lab/key_split_sweep.py's summary: the fastest count per case and the host pick's loss against it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def summarise(tmp_path: Path, rows: list[dict]) -> subprocess.CompletedProcess:
    saved = tmp_path / "key_split_sweep.json"
    saved.write_text(json.dumps({"metadata": {}, "rows": rows}))
    return subprocess.run([sys.executable, str(ROOT / "tools" / "lab" / "key_split_sweep.py"), "--summary", str(saved)],
                          capture_output=True, text=True, cwd=ROOT)


def rows_for(case: str, picked: int, medians: dict[int, float | None], passed: bool = True) -> list[dict]:
    return [{"case": case, "shape": "10, 2048, 64", "splits": k, "picked": picked, "passed": passed,
             "median_ms": ms, "rel_l2": 9e-7} for k, ms in medians.items()]


def test_a_pick_that_is_the_fastest_count_passes(tmp_path):
    done = summarise(tmp_path, rows_for("t10", 3, {1: 0.154, 2: 0.135, 3: 0.131, 4: 0.132}))
    assert done.returncode == 0, done.stderr
    assert "| t10 | 10, 2048, 64 | 0.1540 | 0.1350 | 0.1310 | 0.1320 | 3 | 3 | +0.0% |" in done.stdout


def test_a_pick_slower_than_another_count_by_more_than_3_percent_exits_1(tmp_path):
    done = summarise(tmp_path, rows_for("t06", 2, {1: 0.0596, 2: 0.0634}))
    assert done.returncode == 1
    assert "| 2 | 1 | +6.4% |" in done.stdout


def test_a_wrong_or_unmeasured_run_exits_1(tmp_path):
    assert summarise(tmp_path, rows_for("t10", 1, {1: 0.15, 2: 0.14}, passed=False)).returncode == 1
    done = summarise(tmp_path, rows_for("t10", 1, {1: None, 2: None}))
    assert done.returncode == 1 and "not measured" in done.stdout


def test_without_a_gpu_a_one_pass_says_so_in_one_line_and_exits_3():
    """CUDA_VISIBLE_DEVICES is emptied, so this holds on a machine with a GPU too."""
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "lab" / "key_split_sweep.py"), "--one-pass", "1,64,64,2"],
                          capture_output=True, text=True, cwd=ROOT, env={"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 3 and len(done.stderr.strip().splitlines()) == 1, done.stderr
