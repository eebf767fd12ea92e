"""gen, cases, run, verify and list (attnbench/cli/single_commands.py)."""

import json
import struct

import numpy as np
import pytest

from attnbench.cases import suite
from attnbench.cases.testcase import Shape, read_output, write_output


def test_gen_run_and_verify_with_the_cpu_variant(cli, tmp_path):
    result = cli("gen", "t02")
    assert result.exit_code == 0, result.output
    assert suite.has_reference(suite.get_case("t02"))
    out = tmp_path / "out.bin"
    result = cli("run", "t02", str(out), "--variant", "cpu", "--check")
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output and "TFLOP/s" in result.output and "compute" in result.output
    assert out.stat().st_size == Shape(160, 128, 64).output_bytes
    result = cli("verify", str(out), "t02")
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output


def test_verify_fails_on_a_perturbed_output_and_names_the_worst_element(cli, tmp_path):
    case = suite.get_case("odd_100x32")
    cli("gen", case.name)
    ref = read_output(suite.reference_path(case), case.shape)
    bad = ref.copy()
    bad[4, 57, 9] += 0.25
    bad[1, 2, 3] -= 0.01
    write_output(tmp_path / "bad.bin", bad)
    result = cli("verify", str(tmp_path / "bad.bin"), case.name)
    assert result.exit_code == 1
    assert "FAIL" in result.output
    assert "(batch 4, row 57, col 9)" in result.output
    assert "2 of 16000" in result.output
    result = cli("verify", str(tmp_path / "bad.bin"), case.name, "--json")
    report = json.loads(result.output)
    assert report["failing"] == 2 and report["worst"]["row"] == 57


def test_verify_with_a_reference_file_and_a_case(cli, tmp_path):
    case = suite.get_case("odd_17x48")
    cli("gen", case.name)
    ref_file = suite.reference_path(case)
    result = cli("verify", str(ref_file), str(ref_file), "--case", case.name, "--atol", "0")
    assert result.exit_code == 0
    result = cli("verify", str(ref_file), str(tmp_path / "x.ref"))
    assert result.exit_code == 2  # a missing REF is bad input, named as such
    assert "x.ref: no such file" in result.output


def test_run_on_a_users_course_file_checks_against_a_fresh_reference(cli, tmp_path, rng):
    path = tmp_path / "mine.in"
    with open(path, "wb") as f:
        f.write(struct.pack("<iii", 2, 45, 12))
        f.write(rng.uniform(-3, 3, 2 * 3 * 45 * 12).astype("<f4").tobytes())
    result = cli("run", str(path), str(tmp_path / "mine.out"), "--variant", "cpu", "--check", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["verification"]["passed"] and data["shape"] == {"B": 2, "N": 45, "d": 12}
    assert data["kernel"]["count"] > 1 and data["flops"] == 4 * 2 * 45 * 45 * 12  # several host passes


def test_corrupt_input_is_one_line_and_leaves_no_output(cli, tmp_path):
    path = tmp_path / "broken.in"
    path.write_bytes(struct.pack("<iii", 2, 8, 4) + b"\0" * 10)
    out = tmp_path / "o.bin"
    result = cli("run", str(path), str(out), "--variant", "cpu")
    assert result.exit_code == 2  # bad input, not a verification failure
    assert "broken.in" in result.output and "should be" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_unknown_names_and_refused_shapes(cli, tmp_path):
    result = cli("run", "t99", str(tmp_path / "o"), "--variant", "cpu")
    assert result.exit_code == 2 and "neither a file nor a suite case" in result.output
    result = cli("run", "odd_17x48", str(tmp_path / "o"), "--variant", "warp9")
    assert result.exit_code == 2 and "no variant named 'warp9'" in result.output


def test_gen_and_cases_given_a_file_say_they_take_suite_cases(cli, tmp_path, monkeypatch):
    """`gen good.in` said "'good.in' is neither a file nor a suite case", of a file that was there."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.in").write_bytes(b"\0" * 12)
    for command in ("gen", "cases"):
        result = cli(command, "good.in")
        said = " ".join(result.output.split())
        assert result.exit_code == 2 and "good.in: a file, but this takes the suite's cases only" in said, said
        assert "run, verify, compare and judge take an input file" in said
        result = cli(command, "nosuch")
        assert result.exit_code == 2 and "is not a suite case" in result.output and "a file" not in result.output
    (tmp_path / "cases.in").mkdir()  # a folder was "cases.in: a file"
    result = cli("cases", "cases.in")
    assert result.exit_code == 2 and "cases.in: a folder, but this takes" in " ".join(result.output.split())


def test_bankfree_refuses_other_head_dims_in_one_line(cli, tmp_path):
    result = cli("run", "odd_17x48", str(tmp_path / "o"), "--variant", "bankfree")
    assert result.exit_code == 2
    assert "bankfree needs d in {32, 64}, and the case has d=48" in result.output
    assert not (tmp_path / "o").exists()


def test_gpu_variant_without_a_gpu_is_one_clear_sentence(cli, tmp_path):
    from attnbench.backends.gpu import gpu_probe

    if gpu_probe() is None:
        pytest.skip("a GPU is present here")
    result = cli("run", "odd_100x32", str(tmp_path / "o"), "--variant", "naive")
    assert result.exit_code == 3
    assert "Traceback" not in result.output
    assert result.output.count("error:") == 1
    assert not (tmp_path / "o").exists()


def test_default_variant_falls_back_to_cpu_with_a_notice(cli, tmp_path):
    from attnbench.backends.gpu import gpu_probe

    if gpu_probe() is None:
        pytest.skip("a GPU is present here")
    result = cli("run", "odd_17x1", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    assert "running the cpu variant" in result.output


def test_run_takes_a_variant_or_an_accuracy_not_both(cli, tmp_path):
    result = cli("run", "odd_17x1", str(tmp_path / "o"), "--variant", "cpu", "--accuracy", "course")
    assert result.exit_code == 2 and "not both" in result.output
    result = cli("run", "odd_17x1", str(tmp_path / "o"), "--accuracy", "fast")
    assert result.exit_code == 2
    assert not (tmp_path / "o").exists()


def test_list_and_cases_print_tables(cli):
    result = cli("list", "--wide")
    assert result.exit_code == 0 and "bankfree" in result.output and "004" in result.output
    said = " ".join(result.output.split())
    assert "arithmetic" in said and "split FP16 + FP16" in said and "3xTF32 (wgmma)" in said and "course" in said
    result = cli("cases", "known")
    assert result.exit_code == 0 and "t29" in result.output and "known" in result.output


def test_an_input_holding_nan_is_blamed_on_the_input_in_one_line_exit_2(cli, tmp_path):
    from attnbench.cases.testcase import Testcase, write_testcase

    case = suite.get_case("odd_17x48")
    cli("gen", case.name, "--no-reference")
    qkv = np.fromfile(suite.input_path(case), dtype="<f4", offset=12).reshape(2, 3, 17, 48).copy()
    qkv[0, 1, 3, 4] = np.nan
    write_testcase(tmp_path / "nan.in", Testcase(qkv))
    out = tmp_path / "nan.out"
    for args in (["run", str(tmp_path / "nan.in"), str(out), "--variant", "cpu", "--reps", "2"],
                 ["run", str(tmp_path / "nan.in"), str(out), "--variant", "cpu", "--check"],
                 ["compare", "-v", "cpu", "-c", str(tmp_path / "nan.in"), "--reps", "2", "--no-save"]):
        result = cli(*args)
        assert result.exit_code == 2, result.output
        lines = [line for line in result.output.splitlines() if line.strip()]
        # the path given, not its name only (it said "nan.in: ...")
        said = " ".join(" ".join(lines[-3:]).split())
        assert f"error: {tmp_path / 'nan.in'}: the input holds NaN or Inf values (1 in K)" in said
        assert "Traceback" not in result.output and not out.exists()


def test_run_json_records_every_sample_on_a_fresh_input(cli, tmp_path):
    result = cli("run", "odd_100x32", str(tmp_path / "o.bin"), "--variant", "cpu", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["kernel"]["fresh_inputs"] == data["kernel"]["count"] >= 6
    timed = data["timed_check"]
    assert timed["passed"] and timed["rows_per_sample"] == timed["rows"] == 5 * 100  # every row: a small case
    assert timed["samples"] == data["kernel"]["count"] + 4  # and the 4 after the samples, two on inputs seen before
    assert timed["fresh_inputs"] == timed["samples"] - 2


def test_the_cpu_variants_sampling_budget_is_what_timeout_says(cli, tmp_path):
    from attnbench import api
    from attnbench.kernels.catalogue import get_variant

    cpu = get_variant("cpu")
    assert api.TimingOptions().policy_for(cpu).timeout_s == api.timing_options.CPU_SAMPLING_BUDGET_S
    assert api.TimingOptions(timeout=30.0).policy_for(cpu).timeout_s == 30.0  # "use a longer --timeout" is true
    assert api.TimingOptions().policy_for(get_variant("naive")).timeout_s == 10.0
    result = cli("run", "odd_17x48", str(tmp_path / "o.bin"), "--variant", "cpu", "--timeout", "0.001", "--noise", "0.001")
    assert result.exit_code == 0 and "--timeout" in result.output  # stopped by the budget: the advice names it


def test_without_a_gpu_run_and_profile_refuse_before_writing_the_input(cli):
    from attnbench.backends.gpu import gpu_probe

    if gpu_probe() is None:
        pytest.skip("a GPU is usable here")
    case = suite.get_case("t03")
    for args in (["run", "t03", "x.bin", "--variant", "qreg"], ["profile", "t03", "-v", "qreg"]):
        result = cli(*args)
        assert result.exit_code == 3, result.output
        assert not suite.input_path(case).exists(), f"{args[0]} wrote the input"
    result = cli("info", "-v", "qreg", "--case", "t03", "--json")
    assert result.exit_code in (0, 3) and not suite.input_path(case).exists(), "info wrote the input"


def test_a_suite_input_changed_in_place_is_named_not_the_output(cli, tmp_path):
    case = suite.get_case("odd_33x64")
    cli("gen", case.name, "--force")
    path = suite.input_path(case)
    original = path.read_bytes()
    data = bytearray(original)
    data[200:204] = struct.pack("<f", 1e4)  # one huge value: same size, a wrong answer
    path.write_bytes(bytes(data))
    try:
        result = cli("run", case.name, str(tmp_path / "o.bin"), "--variant", "cpu", "--check", "--reps", "2")
        assert result.exit_code == 2, result.output
        assert "its bytes are not those recorded for odd_33x64" in " ".join(result.output.split())
        result = cli("compare", "-v", "cpu", "-c", case.name, "--reps", "2", "--no-save")
        assert result.exit_code == 2 and "gen odd_33x64 --force" in " ".join(result.output.split())
    finally:
        path.write_bytes(original)


def test_piped_output_of_gen_and_run_check_has_no_blank_line(cli, tmp_path):
    result = cli("gen", "odd_17x48", "odd_100x32", "--force")
    assert result.exit_code == 0 and "" not in result.output.splitlines(), result.output
    own = tmp_path / "own.in"
    own.write_bytes(suite.input_path(suite.get_case("odd_17x48")).read_bytes())
    result = cli("run", str(own), str(tmp_path / "o.bin"), "--variant", "cpu", "--check", "--reps", "2")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and not result.output.startswith("\n")


@pytest.mark.parametrize("how", ["direct", "dotdot", "symlink", "hardlink", "other_case_input", "record"])
def test_run_refuses_to_write_over_any_suite_file(cli, tmp_path, how):
    """The suite's files are every check's ground truth: OUT may never be one, however it is spelt."""
    case, other = suite.get_case("odd_17x48"), suite.get_case("odd_100x32")
    assert cli("gen", case.name, other.name).exit_code == 0
    ref = suite.reference_path(case)
    given = {
        "direct": str(ref),
        "dotdot": str(ref.parent / ".." / ref.parent.name / ref.name),
        "other_case_input": str(suite.input_path(other)),
        "record": str(suite.reference_record_path(case)),
    }.get(how)
    if how == "symlink":
        (tmp_path / "link.bin").symlink_to(ref)
        given = str(tmp_path / "link.bin")
    elif how == "hardlink":
        import os

        try:
            os.link(ref, tmp_path / "hard.bin")
        except OSError:
            pytest.skip("no hard links across these folders")
        given = str(tmp_path / "hard.bin")
    before = {p: p.read_bytes() for p in (ref, suite.input_path(other), suite.reference_record_path(case))}
    result = cli("run", case.name, given, "--variant", "cpu", "--reps", "1")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and given in lines[0] and "suite file" in lines[0], result.output
    assert {p: p.read_bytes() for p in before} == before


def test_a_reference_changed_in_place_is_refused_before_a_check_and_remade_by_gen(cli, tmp_path):
    case = suite.get_case("odd_33x64")
    assert cli("gen", case.name).exit_code == 0
    ref = suite.reference_path(case)
    wrong = read_output(ref, case.shape) + 1.0  # what a wrong kernel's run would have left there
    write_output(ref, wrong)
    out = tmp_path / "o.bin"
    write_output(out, wrong)  # the wrong output: it must not pass against the changed reference
    for args in (["verify", str(out), case.name], ["verify", str(out), str(ref)],
                 ["run", case.name, str(tmp_path / "r.bin"), "--variant", "cpu", "--check", "--reps", "1"],
                 ["compare", "-v", "cpu", "-c", case.name, "--reps", "1", "--no-save"]):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert f"regenerate it with `attnbench gen {case.name}`" in " ".join(result.output.split()), result.output
    result = cli("gen", case.name)
    assert result.exit_code == 0 and "computing it again" in " ".join(result.output.split()), result.output
    assert cli("verify", str(out), case.name).exit_code == 1  # the true reference again: the wrong output fails


def test_gen_never_replaces_an_input_it_did_not_write_unless_forced(cli, rng):
    """A user's own file in the data folder (the course's t01.in copied there, of the right size or not) is refused
    before anything is written, by gen and by a run's generation on first use; --force replaces it."""
    case, other = suite.get_case("odd_17x1"), suite.get_case("odd_17x48")
    path = suite.input_path(case)
    path.parent.mkdir(parents=True, exist_ok=True)
    B, N, d = case.shape.B, case.shape.N, case.shape.d
    for mine in (np.array([B, N, d], "<i4").tobytes() + rng.uniform(-3, 3, 3 * B * N * d).astype("<f4").tobytes(),
                 b"my own file"):
        suite.input_path(other).unlink(missing_ok=True)
        path.write_bytes(mine)
        commands = [["gen", other.name, case.name]] + ([["run", case.name, "o.bin", "-v", "cpu"]] if len(mine) < 99 else [])
        for args in commands:
            result = cli(*args)
            said = " ".join(result.output.split())
            assert result.exit_code == 2 and f"gen {case.name} --force" in said, (args, result.output)
            assert path.read_bytes() == mine
        assert not suite.input_path(other).exists()  # refused before anything was written
    result = cli("gen", case.name, "--force")
    assert result.exit_code == 0 and suite.sha256_file(path) == case.input_sha256


@pytest.mark.parametrize("given", ["nosuch.in", "t99", "empty.in", "odd_17x1"])
def test_verify_with_a_suite_ref_does_not_ignore_case(cli, tmp_path, given, monkeypatch):
    case = suite.get_case("odd_17x48")
    assert cli("gen", case.name).exit_code == 0
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.in").write_bytes(b"")
    result = cli("verify", str(suite.reference_path(case)), case.name, "--case", given)
    assert result.exit_code == 2, result.output
    assert given in result.output


def test_list_names_a_variant_nvcc_could_not_compile_instead_of_a_silent_dash(cli, monkeypatch):
    """A user's kernel with a syntax error showed "-" in every figure, as a peer does, exit 0, and no word of why."""
    from attnbench.api import explain
    from attnbench.errors import CompileCheckFailed
    from attnbench.kernels import nvcc

    def compile_report(variant, shape, arch):
        if variant.name == "naive":
            raise CompileCheckFailed("naive.cu(3): error: expected a ;")
        return {}

    monkeypatch.setattr(explain, "nvcc_path", lambda: "/usr/bin/nvcc")
    monkeypatch.setattr(nvcc, "compile_report", compile_report)
    for args in (["list"], ["list", "--json"]):
        result = cli(*args)
        assert result.exit_code == 0, result.output
        said = " ".join(result.output.split())
        assert "note: nvcc could not compile naive for " in said and "attnbench info --variant naive" in said, said
        assert "bankfree" not in said.split("note:")[1]
