"""One error path for every command (attnbench/cli/__init__.py, attnbench/__main__.py): whatever path,
folder or signal a user gives, a failure is one line naming what they gave and an exit code, never a
traceback; and what fails is found before any measurement."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import attnbench
from attnbench.cli import main

ROOT = Path(attnbench.__file__).resolve().parents[1]
NOT_UTF8 = os.fsdecode(b"r\xff\xfe")  # what Python makes of a path's bytes that are not UTF-8


def _invoke(args):
    return CliRunner().invoke(main, args, prog_name="attnbench")


def _one_line_failure(result, expected_codes):
    """A failure as promised: an expected exit code, no traceback, one `error:` line."""
    assert result.exit_code in expected_codes, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    return errors[0]


@pytest.fixture
def places(tmp_path, monkeypatch):
    """A file where a folder is expected, a folder not in UTF-8, a missing file, a saved run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a folder")
    os.mkdir(os.fsencode(tmp_path / NOT_UTF8))
    return tmp_path


# (arguments, exit codes allowed, what the one line must name); {bad} a folder not in UTF-8 (it exists),
# {file} a plain file standing where a folder must be, {missing} a missing file whose name is not UTF-8.
CASES = [
    (["gen", "{missing}"], {2}, "{missing}"),
    (["cases", "{missing}"], {2}, "{missing}"),
    (["run", "{missing}.in", "o.bin", "-v", "cpu"], {2}, "{missing}.in"),
    (["run", "odd_17x1", "{file}/o.bin", "-v", "cpu"], {2}, "{file}/o.bin"),
    (["run", "odd_17x1", "{bad}/sub/o.bin", "-v", "cpu"], {2}, "{bad}/sub/o.bin"),
    (["verify", "{missing}.bin", "odd_17x1"], {2}, "{missing}.bin"),
    (["verify", "o.bin", "{missing}.ref"], {2}, "{missing}.ref"),
    (["compare", "-v", "cpu", "-c", "{missing}.in", "--no-save"], {2}, "{missing}.in"),
    (["compare", "-v", "cpu", "-c", "odd_17x1", "--results-dir", "{file}"], {2}, "{file}"),
    (["compare", "-v", "cpu", "-c", "odd_17x1", "--results-dir", "{file}/sub"], {2}, "{file}/sub"),
    (["compare", "--against", "{missing}.json", "--no-save"], {2}, "{missing}.json"),
    (["sweep", "d", "-v", "cpu", "--values", "16", "-N", "8", "-B", "1", "--results-dir", "{file}"], {2}, "{file}"),
    (["report", "{missing}.json"], {2}, "{missing}.json"),
    (["report", "{saved}", "-o", "{file}/r.md"], {2}, "{file}/r.md"),
    (["info", "-v", "qreg", "--case", "{missing}.in"], {2, 3}, "{missing}.in"),
    (["profile", "{missing}.in", "-v", "qreg"], {2, 3}, None),
    (["profile", "odd_17x48", "-v", "qreg", "--save", "--results-dir", "{file}"], {2}, "{file}"),
    (["judge", "{missing}"], {2}, "{missing}"),
    (["judge", "{missing}/hw4.cu"], {2}, "{missing}/hw4.cu"),
    (["new", "k", "--dir", "{file}"], {2}, "{file}"),
]


@pytest.mark.parametrize("args, codes, named", CASES, ids=[" ".join(c[0][:2]) + f" #{i}" for i, c in enumerate(CASES)])
def test_every_command_fails_in_one_line_naming_what_was_given(places, args, codes, named, monkeypatch):
    from attnbench.bench import matrix

    def no_measurement(*a, **k):
        raise AssertionError("a cell was measured before the bad path was refused")

    monkeypatch.setattr(matrix, "measure_cell", no_measurement)
    saved = places / "saved.json"
    if "{saved}" in args:
        saved.write_text(json.dumps({"schema": "attnbench-results", "schema_version": 1, "kind": "compare",
                                     "variants": [], "cases": [], "cells": []}))
    fill = {"{bad}": str(places / NOT_UTF8), "{file}": "afile", "{missing}": NOT_UTF8 + "x", "{saved}": str(saved)}

    def filled(text):
        for key, value in fill.items():
            text = text.replace(key, value)
        return text

    line = _one_line_failure(_invoke([filled(a) for a in args]), codes)
    if named is not None:
        from attnbench.output.render.terminal import printable

        assert printable(filled(named)) in line, line


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in a read-only folder")
def test_a_read_only_results_folder_is_refused_before_the_first_measurement(tmp_path, monkeypatch):
    from attnbench.bench import matrix

    monkeypatch.setattr(matrix, "measure_cell", lambda *a, **k: pytest.fail("measured before the refusal"))
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    line = _one_line_failure(_invoke(["compare", "-v", "cpu", "-c", "odd_17x1", "--results-dir", str(folder)]), {2})
    assert str(folder) in line and "permission" in line
    line = _one_line_failure(_invoke(["run", "odd_17x1", str(folder / "o.bin"), "-v", "cpu"]), {2})
    assert str(folder / "o.bin") in line


@pytest.mark.parametrize("args", [
    ["compare", "-v", "cpu", "-c", "odd_17x1", "--results-dir", "{ro}"],
    ["compare", "-v", "cpu", "-c", "odd_17x1", "--results-dir", "{ro}/new"],
    ["sweep", "d", "-v", "cpu", "--values", "16", "-N", "8", "-B", "1", "--results-dir", "{ro}"],
    ["run", "odd_17x1", "{ro}/o.bin", "-v", "cpu"],
    ["report", "{saved}", "-o", "{ro}/r.md"],
    ["profile", "odd_17x48", "-v", "qreg", "--save", "--results-dir", "{ro}"],
])
def test_a_folder_without_write_permission_is_refused_before_any_work(tmp_path, monkeypatch, args):
    """As a user who may not write there sees it (root may write anywhere, so permission is what
    `os.access` says: the check the commands make)."""
    from attnbench.bench import matrix

    folder = tmp_path / "ro"
    folder.mkdir()
    saved = tmp_path / "saved.json"
    assert _invoke(["compare", "-v", "cpu", "-c", "odd_17x1", "--reps", "1", "--results-dir", str(tmp_path),
                    "--name", "saved"]).exit_code == 0
    monkeypatch.setattr(matrix, "measure_cell", lambda *a, **k: pytest.fail("measured before the refusal"))
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == folder and mode & os.W_OK
                        else real_access(path, mode, **kw))
    given = [a.replace("{ro}", str(folder)).replace("{saved}", str(saved)) for a in args]
    line = _one_line_failure(_invoke(given), {2})
    assert str(folder) in line and "permission" in line, line
    assert sorted(p.name for p in folder.iterdir()) == []


def test_a_results_folder_not_in_utf8_saves_every_format(tmp_path):
    """The saved Markdown and CSV quote the folder: its bytes are written as escapes, not a traceback."""
    folder = tmp_path / NOT_UTF8
    result = _invoke(["compare", "-v", "cpu", "-c", "odd_17x1", "--reps", "1", "--results-dir", str(folder),
                      "--name", "r"])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert sorted(p.name for p in folder.iterdir()) == ["r.csv", "r.json", "r.md"]


def test_a_file_name_with_control_characters_is_printed_escaped(tmp_path):
    out = tmp_path / "o\x1b[31m.bin"
    result = _invoke(["run", "odd_17x1", str(out), "-v", "cpu", "--reps", "1"])
    assert result.exit_code == 0, result.output
    result = _invoke(["verify", str(out), "odd_17x1"])
    assert result.exit_code == 0 and "\x1b" not in result.output, repr(result.output)
    assert "o\\x1b[31m.bin" in "".join(result.output.split())  # escaped (the title may wrap anywhere)


def test_report_on_a_results_file_lacking_a_measurement_is_one_line(tmp_path):
    assert _invoke(["compare", "-v", "cpu", "-c", "odd_17x1", "--reps", "1", "--results-dir", str(tmp_path),
                    "--name", "r"]).exit_code == 0
    data = json.loads((tmp_path / "r.json").read_text())
    data["cells"][0]["measurement"] = None
    (tmp_path / "cut.json").write_text(json.dumps(data))
    for args in (["report", str(tmp_path / "cut.json")],
                 ["compare", "--against", str(tmp_path / "cut.json"), "--no-save"]):
        line = _one_line_failure(_invoke(args), {2})
        assert "cut.json" in line and "no measurement" in line


def test_ctrl_c_while_the_command_line_imports_is_one_line_and_exit_130():
    """A Ctrl-C in the first second lands in the imports: one line, exit 130, no traceback. The import
    of the command line is held (a finder that waits) so the signal lands there every time."""
    child = (
        "import sys, time, importlib.abc\n"
        "class Held(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'attnbench.cli':\n"
        "            print('importing', flush=True)\n"
        "            time.sleep(30)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Held())\n"
        "sys.argv = ['attnbench', 'cases']\n"
        "from attnbench.__main__ import entry\n"
        "entry()\n"
    )
    process = subprocess.Popen([sys.executable, "-c", child], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdout.readline() == b"importing\n"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and stderr == b"interrupted\n", stderr.decode()


def test_the_console_entry_point_answers_ctrl_c_before_its_imports():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["attnbench"] == "attnbench.__main__:entry"


@pytest.mark.parametrize("args, code", [
    (["sweep", "N", "-v", "cpu", "-B", "100000000000", "--no-save"], 2),
    (["sweep", "d", "-v", "cpu", "--values", "1000000000", "--no-save"], 3),
    (["sweep", "N", "-v", "cpu", "--values", "2147483647", "-d", "2147483647", "--no-save"], 3),
])
def test_a_sweep_beyond_the_format_or_the_host_memory_is_refused_before_any_point(args, code, monkeypatch):
    from attnbench.bench import matrix

    monkeypatch.setattr(matrix, "measure_cell", lambda *a, **k: pytest.fail("measured before the refusal"))
    _one_line_failure(_invoke(args), {code})


@pytest.mark.parametrize("args", [["cases"], ["run", "odd_17x1", "{tmp}/o.bin", "-v", "cpu"], ["list", "--json"]])
def test_a_command_started_with_stdout_closed_is_no_failure(args, tmp_path):
    command = [sys.executable, "-m", "attnbench", *[a.replace("{tmp}", str(tmp_path)) for a in args]]
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300,
                          preexec_fn=lambda: os.close(1))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
