"""An `exe:` variant's cell runs in the judge's room (attnbench.sandbox), under the --sandbox modes."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from attnbench.backends.program import program_cell, program_confinement, program_variant
from attnbench.cases.fresh_values import InputRange, fresh_testcase
from attnbench.cases.inputs import computed_reference, no_progress
from attnbench.cases.testcase import Shape, Testcase
from attnbench.results.resultset import ERROR, OK, WRONG
from attnbench.sandbox import SandboxUnavailable
from attnbench.sandbox.bwrap_args import BWRAP_ENV, bwrap_starts

SHAPE = Shape(1, 4, 8)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cpu_program" / "attention.c"
HAS_BWRAP = shutil.which("bwrap") is not None and not bwrap_starts(shutil.which("bwrap") or "")


def _any_output(output, reference):  # these tests are about how a run ends, not about its values
    return SimpleNamespace(passed=True)


def _course_rule(output, reference):
    return SimpleNamespace(passed=bool(np.all(np.abs(output - reference) <= 5e-3)))


def _program(folder, body):
    path = folder / "prog"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return program_variant(f"exe:{path}")


def _testcase():
    return Testcase(np.random.default_rng(0).standard_normal((1, 3, 4, 8)).astype(np.float32))


def _cell(variant, mode="auto", timeout_s=30.0, check=_any_output, testcase=None):
    return program_cell(variant, "t", testcase or _testcase(), check, lambda r: "differs", None, timeout_s, mode)


def test_a_program_writing_the_right_output_is_ok_and_says_how_it_was_confined(tmp_path):
    cell = _cell(_program(tmp_path, f'head -c {SHAPE.output_bytes} /dev/zero > "$2"\n'))
    assert cell.status == OK, cell.message
    assert cell.extra["sandbox"] == ("bwrap" if HAS_BWRAP else "fallback") and cell.extra["process_s"] > 0


def test_the_rooms_endings_are_a_compares_statuses(tmp_path):
    assert _cell(_program(tmp_path, 'echo "oh no" >&2; exit 3\n')).message == (
        "exited with status 3; its last words: oh no")
    assert _cell(_program(tmp_path, 'printf abc > "$2"\n')).status == WRONG
    wrote_none = _cell(_program(tmp_path, "exit 0\n"))
    assert wrote_none.status == ERROR and "wrote no output file" in wrote_none.message
    linked = _cell(_program(tmp_path, 'ln -s "$1" "$2"\n'))
    assert linked.status == ERROR and "symbolic link" in linked.message
    slow = _cell(_program(tmp_path, "sleep 30\n"), timeout_s=0.5)
    assert slow.status == ERROR and slow.message.startswith("still running after 0.5 s: killed")


@pytest.mark.skipif(not HAS_BWRAP, reason="bwrap cannot make namespaces here")
def test_in_the_sandbox_the_program_sees_none_of_the_hosts_files_and_without_it_does(tmp_path):
    handle, name = tempfile.mkstemp(dir="/var/tmp", prefix="attnbench-test-")  # readable by any user, not bound
    os.close(handle)
    os.chmod(name, 0o644)
    try:
        body = f'test -e {name} && exit 7\nhead -c {SHAPE.output_bytes} /dev/zero > "$2"\n'
        assert _cell(_program(tmp_path, body), "required").status == OK
        unconfined = _cell(_program(tmp_path, body), "none")
        assert unconfined.status == ERROR and unconfined.extra["sandbox"] == "fallback"
    finally:
        os.remove(name)


def test_without_bwrap_auto_says_once_and_required_refuses(tmp_path, monkeypatch):
    variant = _program(tmp_path, "exit 0\n")
    monkeypatch.setenv(BWRAP_ENV, str(tmp_path / "no-bwrap"))
    assert "no sandbox" in (program_confinement([variant], "auto") or "")
    assert program_confinement([variant], "none") is not None  # --sandbox none is said too
    with pytest.raises(SandboxUnavailable):
        program_confinement([variant], "required")
    assert _cell(variant).extra["sandbox"] == "fallback"


def test_a_program_runs_on_a_fresh_input_so_the_cases_own_answer_is_wrong(tmp_path):
    """Replaying the answer of the case's own input (public seeds: `attnbench gen` rebuilds it) gains nothing:
    the program is given fresh values of the case's shape and range, checked against their own reference."""
    testcase = _testcase()
    answer = computed_reference(testcase, "t", no_progress).astype(np.float32)
    replay = _program(tmp_path, "base64 -d > \"$2\" <<'EOF'\n" + base64.b64encode(answer.tobytes()).decode() + "\nEOF\n")
    cell = _cell(replay, "none", check=_course_rule, testcase=testcase)
    assert cell.status == WRONG and cell.extra["input"].startswith("fresh, seed 0x")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    honest = tmp_path / "attention"
    subprocess.run([compiler, "-O2", "-o", str(honest), str(EXAMPLE), "-lm"], check=True)
    seeds = set()
    for _ in range(2):
        cell = _cell(program_variant(f"exe:{honest}"), "none", check=_course_rule, testcase=testcase)
        assert cell.status == OK, cell.message
        seeds.add(cell.extra["input"])
    assert len(seeds) == 2  # each cell draws anew


def test_fresh_inputs_keep_the_shape_and_each_tensors_range():
    ranges = InputRange((-3.0, 0.0, 10.0), (3.0, 1.0, 12.0))
    fresh = fresh_testcase(Shape(3, 5, 16), ranges, 12345)
    assert fresh.shape == Shape(3, 5, 16)
    for tensor, (low, high) in enumerate([(-3.0, 3.0), (-0.5, 1.5), (10.0, 12.0)]):  # [0, 1] widened to 1 each side of 0.5
        values = fresh.qkv[:, tensor]
        assert low <= values.min() and values.max() <= high and values.std() > 0.1
    assert not np.array_equal(fresh.qkv, fresh_testcase(Shape(3, 5, 16), ranges, 12346).qkv)


@pytest.mark.parametrize("spec", ["exe:", "exe: "])
def test_an_exe_that_names_no_program_is_said_so(spec):
    """`compare -v exe:` said ": is a folder, not a program" (the empty path is the current folder)."""
    from attnbench.backends.program import program_variant
    from attnbench.sandbox.process import ProgramError

    with pytest.raises(ProgramError, match="names no program: give exe:PATH"):
        program_variant(spec)
