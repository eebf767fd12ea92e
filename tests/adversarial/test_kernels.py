"""The adversarial kernel corpus (tests/adversarial/kernels) on a GPU, through the command line as a user
runs it: every trick that skips work is WRONG with no speed and exit 1, in `run --check` and in `compare`,
caught by the launch each one's trick fires on; `transform` (answers only inputs it has seen, from its own
copy, and computes the rest) keeps PASS and gains nothing; the honest control keeps PASS with its speed.

The case is t08 (B=20, N=1024, d=64; 16 MB of input). Commands run in the corpus folder (attnbench reads its
attnbench.toml there) with this checkout's attnbench on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "kernels"
CASE = "t08"
# Each trick, and the launch it is caught on: the warm-up passes (checked like the samples), one fresh input
# launched twice (a kernel that recognises an input serves the poison), the launch not poisoned first, or that
# input launched again over zeros (a kernel that skips an input it has just answered leaves them).
CAUGHT_ON = {"lazy": "warmup", "halflazy": "warmup", "onein3": "warmup", "fpptr": "warmup", "sly": "unpoisoned",
             "cached": "repeat", "kwatch": "repeat", "fpvalues": "repeat", "fphash": "repeat", "kstate": "warmup",
             "labmemo": "stale"}
TRICKS = list(CAUGHT_ON)
# The pipelined first pass is several launches (one a chunk): onein3 skips the second, so the check of the first
# pass already catches it there; its warm-up passes are caught as well.
CHUNKS_CATCH = {"onein3"}
NO_GAIN = ["transform"]  # right on every input: it must keep PASS and be no faster than the control
LAB_SIZE = "64"


def attnbench(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "attnbench", *args], cwd=CORPUS, env=env, capture_output=True,
                          text=True, timeout=900)


def test_the_corpus_names_a_kernel_for_every_trick():
    """Runs without a GPU: each trick has its kernel file and its launch facts."""
    text = (CORPUS / "attnbench.toml").read_text()
    for name in ["honest", *TRICKS, *NO_GAIN]:
        assert (CORPUS / f"{name}.cu").is_file() and f"[variants.{name}]" in text


@pytest.mark.gpu
@pytest.mark.parametrize("pipeline", [True, False], ids=["pipelined", "unpipelined"])
@pytest.mark.parametrize("trick", TRICKS)
def test_run_check_calls_every_trick_wrong(gpu, trick, pipeline, tmp_path):
    out = tmp_path / "out.bin"
    extra = [] if pipeline else ["--no-pipeline"]
    result = attnbench("run", CASE, str(out), "--variant", trick, "--check", "--json", *extra)
    assert result.returncode == 1, result.stdout + result.stderr
    data = json.loads(result.stdout)
    if not (pipeline and trick in CHUNKS_CATCH):
        assert data["verification"]["passed"] is True  # the first pass computed: the check before timing is fooled
    timed = data["timed_check"]
    assert timed["passed"] is False and data["tflops"] is None and data["peak_fraction"] is None
    assert timed["failure"]["kind"] == CAUGHT_ON[trick], timed["failure"]
    assert timed["fresh_inputs"] >= timed["samples"] - 2 and data["kernel"]["fresh_inputs"] == data["kernel"]["count"]
    assert "a launch did not compute the answer" in result.stderr
    table = attnbench("run", CASE, str(out), "--variant", trick, "--check", *extra)
    assert table.returncode == 1 and "TFLOP/s" not in table.stdout and "WRONG" in table.stdout, table.stdout


@pytest.mark.gpu
def test_compare_calls_every_trick_wrong_and_keeps_the_control(gpu, tmp_path):
    result = attnbench("compare", "--variants", ",".join(["honest", *TRICKS, *NO_GAIN]), "--cases", CASE,
                       "--results-dir", str(tmp_path), "--name", "adversarial")
    assert result.returncode == 1, result.stdout + result.stderr
    saved = json.loads((tmp_path / "adversarial.json").read_text())
    cells = {cell["variant"]: cell for cell in saved["cells"]}
    assert cells["honest"]["status"] == "ok" and cells["honest"]["timed_check"]["passed"] is True
    assert cells["honest"]["measurement"]["tflops"] > 0
    for trick in TRICKS:
        cell = cells[trick]
        assert cell["status"] == "wrong" and cell["measurement"] is None, cell
        assert cell["check"]["passed"] is True and cell["timed_check"]["passed"] is False
        assert cell["message"].startswith("a launch did not compute the answer"), cell["message"]
        assert cell["timed_check"]["failure"]["kind"] == CAUGHT_ON[trick], cell["timed_check"]["failure"]
    assert result.stdout.count("WRONG") >= len(TRICKS)
    honest = cells["honest"]["measurement"]["kernel"]["median_ms"]
    for name in NO_GAIN:
        cell = cells[name]
        assert cell["status"] == "ok" and cell["timed_check"]["passed"] is True, cell
        assert cell["measurement"]["kernel"]["median_ms"] >= 0.8 * honest, (cell["measurement"]["kernel"], honest)


@pytest.mark.gpu
def test_the_lab_timer_passes_the_control_and_calls_labmemo_wrong(gpu):
    """labmemo skips a launch whose input its previous launch answered while the output holds a number: what the
    square lab's batches (passes back to back on one input, poisoned once) give it. The launch after the samples
    on that input again, zeros over the output, catches it in the lab's sweep as everywhere."""
    control = attnbench("sweep", "square", "--variants", "honest", "--sizes", LAB_SIZE, "--lab-timing", "--no-save")
    assert control.returncode == 0 and "WRONG" not in control.stdout, control.stdout + control.stderr
    result = attnbench("sweep", "square", "--variants", "labmemo", "--sizes", LAB_SIZE, "--lab-timing", "--no-save")
    assert result.returncode == 1 and "WRONG" in result.stdout, result.stdout + result.stderr
