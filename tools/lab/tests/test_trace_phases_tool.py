"""tools/lab/trace_phases.py: each phase of a run timed in the parent and in the workers it spawns."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LINE = re.compile(r"T +[\d.]+ pid (\d+) (\S+) .*wall=([\d.]+) cpu=([\d.]+)$")


def test_the_workers_phases_are_traced_and_the_run_is_unchanged(tmp_path):
    env = {**os.environ, "ATTNBENCH_CPU_WORKERS": "2", "ATTNBENCH_DATA": str(tmp_path / "data")}
    env.pop("TRACE_T0", None)
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "lab" / "trace_phases.py"), "compare", "-v", "cpu", "-c",
                           "odd_17x48,odd_100x32", "--gpus", "all", "--no-save"],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "compare on CPU only" in done.stdout
    phases = [LINE.match(line).groups() for line in done.stderr.splitlines() if LINE.match(line)]
    checked_in = {pid for pid, phase, _, _ in phases if phase == "check"}
    parent = {pid for pid, phase, _, _ in phases if phase == "assemble"}
    assert checked_in and len(parent) == 1 and not checked_in & parent  # the workers checked, not the parent
    assert {phase for _, phase, _, _ in phases} >= {"load", "reference", "_first_pass", "_time", "check", "assemble"}
