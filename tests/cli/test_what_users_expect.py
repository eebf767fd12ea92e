"""What people expect of a command line like this one (attnbench/cli/): --json on every command that
prints a result, "did you mean" for a typo, -V, shell completion of names, conflicting options refused."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import attnbench
from attnbench.cli import main

ROOT = Path(attnbench.__file__).resolve().parents[1]


def _invoke(*args):
    return CliRunner().invoke(main, list(args), prog_name="attnbench")


def test_compare_json_is_the_saved_files_records_and_nothing_else_on_stdout(tmp_path):
    result = CliRunner().invoke(main, ["compare", "-v", "cpu", "-c", "odd_17x1", "--reps", "1", "--results-dir",
                                       str(tmp_path), "--name", "r", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)  # strict JSON: the whole of stdout parses
    assert printed == json.loads((tmp_path / "r.json").read_text())
    assert "saved" in result.stderr


def test_sweep_cases_and_list_print_strict_json():
    sweep = CliRunner().invoke(main, ["sweep", "d", "-v", "cpu", "--values", "16", "-N", "8", "-B", "1", "--reps", "1",
                                      "--no-save", "--json"])
    assert sweep.exit_code == 0, sweep.output
    assert json.loads(sweep.stdout)["kind"] == "sweep"
    cases = CliRunner().invoke(main, ["cases", "course", "--json"])
    records = json.loads(cases.stdout)
    assert [r["name"] for r in records][:2] == ["t01", "t02"] and records[1]["B"] == 160
    listing = CliRunner().invoke(main, ["list", "--no-resources", "--json"])
    assert listing.exit_code == 0, listing.output
    listed = {v["variant"]: v for v in json.loads(listing.stdout)["variants"]}
    assert "qreg" in listed
    assert (listed["torch:fp16"]["arithmetic"], listed["torch:fp16"]["accuracy"]) == ("FP16", "none")
    assert (listed["wgmma16s"]["arithmetic"], listed["wgmma16s"]["accuracy"]) == ("split FP16 + FP16", "course")


@pytest.mark.parametrize("args, said", [
    (["run", "odd_17x1", "o.bin", "--variant", "qrge"], "did you mean qreg?"),
    (["compare", "-v", "bankfre", "-c", "odd_17x1", "--no-save"], "did you mean bankfree?"),
    (["cases", "odd_17x4"], "did you mean odd_17x48"),
])
def test_a_typo_gets_a_did_you_mean(args, said, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _invoke(*args)
    assert result.exit_code == 2 and said in " ".join(result.output.split()), result.output


def test_dash_capital_v_is_the_version():
    result = _invoke("-V")
    assert result.exit_code == 0 and result.output.strip() == f"attnbench, version {attnbench.__version__}"


@pytest.mark.parametrize("args, said", [
    (["run", "odd_17x1", "o.bin", "--variant", "cpu", "--variant", "qreg"], "--variant given 2 times"),
    (["compare", "-v", "cpu", "-v", "qreg", "-c", "odd_17x1", "--no-save"], "--variants given 2 times"),
    (["compare", "-v", "cpu", "-c", "odd_17x1", "-c", "odd_17x48", "--no-save"], "--cases given 2 times"),
    (["verify", "o.bin", "t02", "--case", "t02", "--case", "t03"], "--case given 2 times"),
    (["info", "-v", "qreg", "--case", "t02", "--shape", "1,2,3"], "--case and --shape"),
    # every option that takes one value, not only those written with `once` (the last one counted, silently)
    (["run", "odd_17x1", "o.bin", "--variant", "cpu", "--reps", "5", "--reps=50"], "--reps given 2 times"),
    (["judge", "./hw4", "--cases", "t01", "-c", "t02"], "--cases given 2 times"),
    (["judge", "./hw4", "--results-dir", "a", "--results-dir", "b"], "--results-dir given 2 times"),
    (["compare", "-v", "cpu", "-c", "odd_17x1", "--results-dir", "a", "--results-dir", "b"], "--results-dir given 2"),
    (["sweep", "N", "-v", "cpu", "--values", "8", "--values", "16", "--no-save"], "--values given 2 times"),
    (["run", "odd_17x1", "o.bin", "--variant", "cpu", "--device", "0", "--device", "1"], "--device given 2 times"),
])
def test_conflicting_options_are_refused_not_resolved_silently(args, said, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _invoke(*args)
    assert result.exit_code == 2 and said in result.output, result.output


@pytest.mark.parametrize("args, said", [
    (["run", "", "o.bin", "--variant", "cpu"], 'CASE is empty ("")'),  # was ".: is a directory"
    (["judge", ""], 'PROGRAMS is empty ("")'),  # judged the current folder as a class
    (["verify", "o.bin", ""], 'REF is empty ("")'),
    (["verify", "o.bin", "odd_17x1", "--case", ""], '--case is empty ("")'),  # was ".: is a directory"
    (["info", "--variant", "bankfree", "--case", ""], '--case is empty ("")'),  # modelled t29, exit 0
    (["judge", "prog", "--time-limits", ""], '--time-limits is empty ("")'),  # was ".: is a folder"
    (["compare", "-v", "cpu", "-c", "", "--no-save"], '--cases is empty ("")'),
    (["compare", "-v", "cpu", "-c", "odd_17x1", "--results-dir", ""], '--results-dir is empty ("")'),
    (["run", "odd_17x1", "o.bin", "--variant", ""], "--variant is empty"),  # ran the default instead
    (["run", "odd_17x1", "o.bin", "--variant", "exe:./hw4"], "a whole program is run by compare"),
    (["run", "odd_17x1", "o.bin", "--variant", "cpu", "--device", "7"], "--device 7: the cpu variant runs on the host"),
    (["compare", "-v", "cpu", "-c", "odd_17x1", "--device", "3", "--no-save"], "--device 3: none of cpu runs on a GPU"),
])
def test_an_empty_word_a_program_or_a_device_where_none_applies_is_refused_not_taken(args, said, tmp_path,
                                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _invoke(*args)
    assert result.exit_code == 2 and said in " ".join(result.output.split()), result.output
    assert not (tmp_path / "o.bin").exists()


def test_flags_and_options_of_several_values_may_repeat(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _invoke("run", "odd_17x1", "o.bin", "--variant", "cpu", "--reps", "1", "--hot", "--hot")
    assert result.exit_code == 0, result.output


def _complete(words):
    env = dict(os.environ, _ATTNBENCH_COMPLETE="bash_complete", COMP_WORDS=" ".join(words), COMP_CWORD=str(len(words) - 1))
    found = subprocess.run([sys.executable, "-m", "attnbench"], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=120)
    return [line.split(",", 1)[1] for line in found.stdout.splitlines()]


def test_the_shell_completes_variant_and_case_names():
    assert "qreg:fastmath" in _complete(["attnbench", "run", "t02", "o.bin", "--variant", "qreg"])
    assert "naive,bankfree" in _complete(["attnbench", "compare", "-v", "naive,bank"])
    assert {"t21", "t22"} <= set(_complete(["attnbench", "compare", "-c", "t2"]))
    assert "t01,course" in _complete(["attnbench", "compare", "-c", "t01,cour"])
    assert {"t21", "t22"} <= set(_complete(["attnbench", "judge", "./hw4", "--cases", "t2"]))  # completed nothing
    assert "t01,course" in _complete(["attnbench", "judge", "./hw4", "-c", "t01,cour"])
    assert {"t21", "t22"} <= set(_complete(["attnbench", "verify", "out.bin", "t2"]))  # verify's REF: a suite case


def test_launch_facts_naming_a_built_in_are_refused_by_run_as_by_list(tmp_path, monkeypatch):
    """A [variants.cpu] table was refused by `list` and ignored by `run`, which ran the built-in cpu."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "attnbench.toml").write_text('[variants.cpu]\nsource = "mine.cu"\n')
    for args in (["list", "--no-resources"], ["run", "odd_17x1", "o.bin", "--variant", "cpu"],
                 ["run", "odd_17x1", "o.bin", "--variant", "cpu", "--reps", "1"]):
        result = _invoke(*args)
        assert result.exit_code == 2 and "variants.cpu: cpu is a built-in variant" in result.output, (args, result.output)
    assert not (tmp_path / "o.bin").exists()
