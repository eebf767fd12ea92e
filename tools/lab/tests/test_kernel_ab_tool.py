"""tools/lab/kernel_ab.py: the older tree's build keeps its own host facts and kernel file; shapes, extra builds and
the table; one line and exit 3 without a GPU."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnbench.cases.testcase import Shape

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "lab" / "kernel_ab.py"


def load_tool():
    spec = importlib.util.spec_from_file_location("kernel_ab_tool", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def old_tree(tmp_path: Path) -> Path:
    """A copy of this tree's host facts and kernels in which wgmma3x streams up to N = 1024 at every d."""
    tree = tmp_path / "old"
    shutil.copytree(ROOT / "attnbench", tree / "attnbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "cuda", tree / "cuda")
    host = tree / "attnbench" / "kernels" / "wgmma3x.py"
    text = host.read_text()
    assert "_STREAM_MAX_N = {32: 512, 64: 256, 128: 1024}" in text
    host.write_text(text.replace("_STREAM_MAX_N = {32: 512, 64: 256, 128: 1024}", "_STREAM_MAX_N = {32: 1024, 64: 1024, 128: 1024}"))
    return tree


def test_the_old_build_keeps_its_own_launches_and_kernel_file(old_tree):
    tool = load_tool()
    old = tool.old_variant(old_tree, "wgmma3x")
    assert old.name == "wgmma3x@old" and old.source_path == old_tree / "cuda" / "wgmma3x.cu"
    shape = Shape(40, 1024, 64)
    assert [launch.kernel for launch in old.launches_for(shape)] == ["wgmma3x_stream"]
    from attnbench.kernels.catalogue import get_variant

    assert [launch.kernel for launch in get_variant("wgmma3x").launches_for(shape)] == ["wgmma3x_prep", "wgmma3x_fwd"]


def test_a_tree_without_the_variant_is_one_line(tmp_path):
    (tmp_path / "attnbench" / "kernels").mkdir(parents=True)
    with pytest.raises(SystemExit, match="declares no built-in variant named 'wgmma3x'"):
        load_tool().old_variant(tmp_path, "wgmma3x")


def test_shapes_parse_and_a_bad_one_is_refused():
    tool = load_tool()
    assert tool.parse_shape("500x2048x64") == Shape(500, 2048, 64)
    with pytest.raises(SystemExit, match="'500x2048' is not B,N,d or BxNxd"):
        tool.parse_shape("500x2048")


def test_the_table_shows_the_faster_round_and_a_wrong_build():
    rows = [{"shape": (10, 2048, 64), "build": "old", "round": r, "median_ms": ms, "rel_l2": 8.5e-7} for r, ms in ((0, 0.12), (1, 0.125))]
    rows += [{"shape": (10, 2048, 64), "build": "new", "round": 0, "median_ms": 0.108, "rel_l2": 8.4e-7},
             {"shape": (10, 2048, 64), "build": "bad", "round": 0, "median_ms": None, "rel_l2": 0.3}]
    lines = load_tool().table(rows, ["old", "new", "bad"])
    assert lines[2] == ("| (10, 2048, 64) | 0.1200 (+0.0%) | 0.1080 (-10.0%) | WRONG | 89.5 | 99.4 | - | 8.50e-07 | "
                        "8.40e-07 | 3.00e-01 |")
    # a wrong baseline: the others' times without a change against it
    assert "| WRONG | 0.1080 |" in load_tool().table([{**r, "median_ms": None} if r["build"] == "old" else r for r in rows],
                                                     ["old", "new", "bad"])[2]


def test_an_extra_build_needs_an_existing_file(old_tree, tmp_path):
    done = subprocess.run([sys.executable, str(TOOL), str(old_tree), str(tmp_path / "out"), "--variant", "wgmma3x",
                           "--shapes", "2x300x64", "--extra", f"cand={tmp_path / 'missing.cu'}"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode != 0 and "is not NAME=FILE with an existing FILE" in done.stderr


def test_without_a_gpu_it_says_so_in_one_line_and_exits_3(old_tree, tmp_path):
    from attnbench.backends.gpu import gpu_probe

    if gpu_probe() is None:
        pytest.skip("a GPU is here: the tool would run")
    done = subprocess.run([sys.executable, str(TOOL), str(old_tree), str(tmp_path / "out"), "--variant", "wgmma3x",
                           "--shapes", "2x300x64"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("kernel_ab: no usable GPU:") and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
