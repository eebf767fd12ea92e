"""An `exe:` variant's cell runs in the judge's room (attnbench.sandbox), under the --sandbox modes."""

from __future__ import annotations

import os
import shutil
import tempfile
from types import SimpleNamespace

import numpy as np
import pytest

from attnbench.backends.program import program_cell, program_confinement, program_variant
from attnbench.cases.testcase import Shape, Testcase
from attnbench.results.resultset import ERROR, OK, WRONG
from attnbench.sandbox import SandboxUnavailable
from attnbench.sandbox.bwrap_args import BWRAP_ENV, bwrap_starts

SHAPE = Shape(1, 4, 8)
HAS_BWRAP = shutil.which("bwrap") is not None and not bwrap_starts(shutil.which("bwrap") or "")


def _passed(output, reference):
    return SimpleNamespace(passed=bool(np.array_equal(output, reference)))


def _program(folder, body):
    path = folder / "prog"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return program_variant(f"exe:{path}")


def _cell(variant, mode="auto", timeout_s=30.0):
    testcase = Testcase(np.random.default_rng(0).standard_normal((1, 3, 4, 8)).astype(np.float32))
    return program_cell(variant, "t", testcase, np.zeros((1, 4, 8)), _passed, lambda r: "differs", timeout_s, mode)


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
