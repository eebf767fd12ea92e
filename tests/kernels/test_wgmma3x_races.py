"""wgmma3x under compute-sanitizer's racecheck and synccheck: the paths whose threads hand shared memory to
each other (the pre-pass workers' job slot and raw tiles, the streaming producer's split, the short
path's fast and masked splits, the key split's combine). A race there can pass every float64 check
by timing alone: the workers' job slot was once overwritten before all of them had read it, which no
output check caught on the GPU and racecheck did (3 hazards, and a wrong output under its scheduling).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import get_variant
from tests.conftest import skip_unless_runs

ROOT = Path(__file__).resolve().parents[2]
# B, N, d, key parts, persistent blocks (0: the host's grid)
RUNS = {
    "pre-pass workers, d = 64": (6, 1000, 64, 1, 2),
    "pre-pass workers, d = 32": (5, 777, 32, 1, 3),
    "key split": (3, 300, 64, 4, 0),
    "streaming": (5, 200, 64, 1, 2),
    "short, masked tile": (20, 100, 32, 1, 0),
    "short": (16, 128, 32, 1, 0),
    "pre-pass workers, d = 128": (4, 700, 128, 1, 2),
    "key split, d = 128": (2, 300, 128, 4, 0),
    "streaming, d = 128": (3, 200, 128, 1, 2),
}


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["racecheck", "synccheck"])
@pytest.mark.parametrize("name", list(RUNS))
def test_wgmma3x_has_no_shared_memory_hazards(gpu, tool, name):
    sanitizer = shutil.which("compute-sanitizer")
    if sanitizer is None:
        pytest.skip("compute-sanitizer is not installed")
    b, n, d, parts, blocks = RUNS[name]
    skip_unless_runs(get_variant("wgmma3x"), Shape(b, n, d), gpu)
    result = subprocess.run(
        [sanitizer, "--tool", tool, "--error-exitcode", "9", sys.executable, "tools/lab/key_split_sweep.py", "--one-pass",
         f"{b},{n},{d},{parts},{blocks}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    summary = [line for line in result.stdout.splitlines() if "SUMMARY" in line]
    assert result.returncode == 0, f"{tool} on {name}: exit {result.returncode}, {summary or result.stdout[-2000:]}"
    assert "passed" in result.stdout, result.stdout[-2000:]
