"""tools/sgemm_ceiling.py: without PyTorch or a GPU it says so in one line and exits 3; bad sizes exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "sgemm_ceiling.py"


def run_without_torch(*args: str) -> subprocess.CompletedProcess:
    # torch blocked in sys.modules: the import fails whether or not this machine has PyTorch
    code = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    return subprocess.run([sys.executable, "-c", code, str(TOOL), *args], capture_output=True, text=True, cwd=ROOT)


def test_without_pytorch_it_exits_3_with_one_line():
    done = run_without_torch()
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr.splitlines() == ["sgemm_ceiling: this needs PyTorch (pip install torch)"]


def test_sizes_that_are_not_numbers_are_bad_usage():
    done = run_without_torch("--sizes", "4096,big")
    assert done.returncode == 2
    assert "'4096,big' is not a comma-separated list of sizes of at least 64" in done.stderr
    assert "Traceback" not in done.stderr
