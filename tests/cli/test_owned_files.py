"""One rule protects every file the suite and the user own: a command's write target is refused when it is a file
attnbench reads (the suite's manifest, its kernels and modules, a suite input or reference) or one of the same
command's inputs; and a damaged manifest is one line, not a traceback on every command."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import attnbench
from attnbench import locations
from attnbench.cli import main

ROOT = Path(attnbench.__file__).resolve().parents[1]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """Copies of the manifest, the kernels and the package's data stand in for the real ones (so this test, run on
    code that writes there, destroys only copies)."""
    copies = tmp_path / "shipped"
    (copies / "cuda").mkdir(parents=True)
    (copies / "package").mkdir()
    manifest = copies / "suite.json"
    manifest.write_bytes(locations.suite_manifest().read_bytes())
    (copies / "cuda" / "common.cuh").write_bytes((locations.kernel_dir() / "common.cuh").read_bytes())
    (copies / "package" / "report_claims.json").write_bytes(locations.package_file("report_claims.json").read_bytes())
    limits = "limits_rtx3070_2024.toml"  # a --time-limits preset, shipped beside the manifest
    (copies / limits).write_bytes(locations.shipped_limits(limits).read_bytes())
    monkeypatch.setattr(locations, "suite_manifest", lambda: manifest)
    monkeypatch.setattr(locations, "kernel_dir", lambda: copies / "cuda")
    monkeypatch.setattr(locations, "PACKAGE_DIR", copies / "package")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return copies


@pytest.mark.parametrize("name", ["suite.json", "cuda/common.cuh", "package/report_claims.json",
                                  "limits_rtx3070_2024.toml"])
def test_run_never_writes_over_a_file_attnbench_reads(name, shipped):
    path = shipped / name
    before = _sha(path)
    result = CliRunner().invoke(main, ["run", "odd_17x1", str(path), "-v", "cpu"], prog_name="attnbench")
    assert result.exit_code == 2, result.output
    assert "a file attnbench reads" in result.output and path.name in result.output
    assert result.output.count(str(path)) == 1  # the path is named once, not twice ("P: is P, a file ...")
    assert _sha(path) == before


@pytest.mark.parametrize("config, text", [("pyproject.toml", '[project]\nname = "mine"\n'),
                                          ("attnbench.toml", '[variants.mine]\nblock = [32, 1, 1]\n')])
@pytest.mark.parametrize("where", [".", "sub"])
def test_run_and_report_never_write_over_the_launch_facts_file(config, text, where, tmp_path, shipped, monkeypatch):
    """`run odd_17x1 pyproject.toml` wrote the output over a project's pyproject.toml (exit 0); every later
    command then failed on it, not valid TOML. The attnbench.toml or pyproject.toml the launch facts are read
    from, in the working folder or one above it, is a file attnbench reads."""
    target = Path(config)
    target.write_text(text)
    Path("sub").mkdir()
    target = target.resolve()
    monkeypatch.chdir(where)  # in a subfolder, the file one above is the one read
    given = config if where == "." else f"../{config}"
    result = CliRunner().invoke(main, ["run", "odd_17x1", given, "-v", "cpu"], prog_name="attnbench")
    assert result.exit_code == 2 and "a file attnbench reads for your kernels' launch facts" in result.output, \
        result.output
    saved = _saved_results(tmp_path)
    result = CliRunner().invoke(main, ["report", str(saved), "-o", given], prog_name="attnbench")
    assert result.exit_code == 2 and "launch facts" in result.output, result.output
    assert target.read_text() == text


def test_an_attnbench_toml_elsewhere_is_never_replaced_by_a_report(tmp_path, shipped):
    """`report r.json -o other/attnbench.toml` wrote the Markdown over a kernel folder's launch facts (exit 0)."""
    facts = tmp_path / "kernels" / "attnbench.toml"
    facts.parent.mkdir()
    facts.write_text('[variants.mine]\nsource = "mine.cu"\n')
    saved = _saved_results(tmp_path)
    result = CliRunner().invoke(main, ["report", str(saved), "-o", str(facts)], prog_name="attnbench")
    assert result.exit_code == 2 and "launch facts" in result.output, result.output
    assert facts.read_text() == '[variants.mine]\nsource = "mine.cu"\n'


@pytest.mark.parametrize("variant", ["cpu", "mine"])
def test_run_and_report_never_write_over_a_kernel_source_the_launch_facts_name(variant, tmp_path, shipped):
    """`attnbench new mine; attnbench run odd_17x1 mine.cu --variant cpu` wrote the output over the kernel
    (exit 0); with --variant mine, on a GPU, over the very source the run compiled."""
    assert CliRunner().invoke(main, ["new", "mine"], prog_name="attnbench").exit_code == 0
    kernel = Path("mine.cu")
    before = _sha(kernel)
    result = CliRunner().invoke(main, ["run", "odd_17x1", "mine.cu", "-v", variant], prog_name="attnbench")
    assert result.exit_code == 2 and "a kernel source your launch facts name" in result.output, result.output
    saved = _saved_results(tmp_path)
    result = CliRunner().invoke(main, ["report", str(saved), "-o", "mine.cu"], prog_name="attnbench")
    assert result.exit_code == 2 and "a kernel source your launch facts name" in result.output, result.output
    assert _sha(kernel) == before


def test_run_refuses_the_manifest_through_a_link_and_dots(shipped):
    manifest = shipped / "suite.json"
    before = _sha(manifest)
    Path("link.json").symlink_to(manifest)
    for given in ["link.json", str(shipped / "cuda" / ".." / "suite.json")]:
        result = CliRunner().invoke(main, ["run", "odd_17x1", given, "-v", "cpu"], prog_name="attnbench")
        assert result.exit_code == 2 and "a file attnbench reads" in result.output, result.output
    assert _sha(manifest) == before


def _saved_results(tmp_path: Path) -> Path:
    result = CliRunner().invoke(main, ["compare", "-v", "cpu", "-c", "odd_17x1", "--results-dir", str(tmp_path / "r")],
                                prog_name="attnbench")
    assert result.exit_code == 0, result.output
    [saved] = (tmp_path / "r").glob("*.json")
    return saved


def test_report_never_writes_over_the_manifest_or_its_own_input(tmp_path, shipped):
    saved = _saved_results(tmp_path)
    for target in [saved, shipped / "suite.json"]:
        before = _sha(target)
        result = CliRunner().invoke(main, ["report", str(saved), "-o", str(target), "--no-plots"], prog_name="attnbench")
        assert result.exit_code == 2, result.output
        assert _sha(target) == before
    json.loads(saved.read_text())  # still the results


@pytest.mark.parametrize("content", [b"{not json", b"[]", b'{"cases": [{"name": "t01"}]}', None])
def test_a_damaged_manifest_is_one_line_for_every_command(content, tmp_path):
    manifest = tmp_path / "suite.json"
    if content is not None:
        manifest.write_bytes(content)
    script = (f"import sys, pathlib, attnbench.locations as l; l.suite_manifest = lambda: pathlib.Path({str(manifest)!r}); "
              "from attnbench.__main__ import entry; sys.argv = ['attnbench', *sys.argv[1:]]; entry()")
    for args in (["--help"], ["-V"], ["cases"]):
        done = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 3, done.stderr
        assert "Traceback" not in done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {manifest}:") and "damaged" in lines[0], done.stderr
