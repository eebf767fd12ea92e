"""`info` is the compile check of a machine without a GPU: nvcc's errors and missing kernels are exit 2."""

import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnbench.cases.testcase import Shape
from attnbench.cli import main
from attnbench.errors import CompileCheckFailed
from attnbench.kernels import nvcc
from attnbench.kernels.catalogue import get_variant
from attnbench.kernels.user import find_launch_facts, load_variants

needs_nvcc = pytest.mark.skipif(nvcc.nvcc_path() is None, reason="no nvcc")

FACTS = """
[variants.mine]
source = "mine.cu"

[[variants.mine.kernels]]
name = "mine_attention"
grid = ["cdiv(N, 64)", "B"]
block = 64
args = ["q", "k", "v", "o", "N", "scale_log2"]
"""
GOOD_SOURCE = ('extern "C" __global__ void mine_attention(const float* q, const float* k, const float* v, float* o,\n'
               '                                          int N, float scale_log2) { if (N < 0) o[0] = q[0]; }\n')


def info(folder: Path, *args: str):
    (folder / "attnbench.toml").write_text(FACTS)
    return CliRunner().invoke(main, ["info", "-v", "mine", "--case", "odd_17x48", *args], catch_exceptions=False)


@needs_nvcc
def test_a_missing_semicolon_is_nvccs_error_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.cu").write_text(GOOD_SOURCE.replace("q[0];", "q[0]"))
    result = info(tmp_path)
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and re.search(r"mine\.cu\(\d+\): error", result.output), result.output
    assert "100%" not in result.output and "may not support" not in result.output


@needs_nvcc
def test_a_kernel_name_not_in_the_source_is_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.cu").write_text(GOOD_SOURCE.replace("mine_attention", "other_name"))
    result = info(tmp_path)
    assert result.exit_code == 2, result.output
    assert "no kernel named mine_attention" in " ".join(result.output.split())
    assert "other_name" in result.output


@needs_nvcc
def test_the_good_source_gives_its_figures(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.cu").write_text(GOOD_SOURCE)
    result = info(tmp_path, "--json")
    assert result.exit_code == 0, result.output
    assert '"registers": null' not in result.output


@needs_nvcc
def test_an_architecture_this_nvcc_cannot_build_is_exit_2():
    supported = subprocess.run([nvcc.nvcc_path(), "--list-gpu-arch"], capture_output=True, text=True).stdout
    if "compute_61" in supported:
        pytest.skip("this nvcc still builds for sm_61")
    with pytest.raises(CompileCheckFailed, match="sm_61"):
        nvcc.compile_report(get_variant("qreg"), Shape(1, 128, 64), "sm_61")


@needs_nvcc
def test_ptxas_figures_are_cached_by_source_and_options(tmp_path, monkeypatch):
    (tmp_path / "attnbench.toml").write_text(FACTS)
    (tmp_path / "mine.cu").write_text(GOOD_SOURCE)
    variant = load_variants(find_launch_facts(tmp_path))["mine"]
    first = nvcc.compile_report(variant, Shape(1, 128, 64), "sm_80")
    assert "mine_attention" in first
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a) or real_run(*a, **k))
    assert nvcc.compile_report(variant, Shape(1, 128, 64), "sm_80") == first
    assert calls == []  # from the cache: nvcc not run again
    (tmp_path / "mine.cu").write_text(GOOD_SOURCE + "\n// changed\n")
    nvcc.compile_report(variant, Shape(1, 128, 64), "sm_80")
    assert calls  # a changed source compiles again


def test_ceilings_without_a_gpu_suggest_no_option_it_lacks():
    from attnbench.backends.gpu import gpu_probe

    if gpu_probe() is None:
        pytest.skip("a GPU is usable here")
    result = CliRunner().invoke(main, ["ceilings"])
    assert result.exit_code == 3
    assert "ceilings are measured on this machine's GPU" in result.output and "--variant" not in result.output


def test_the_variant_listing_without_resources_compiles_nothing():
    from attnbench.api.explain import variant_listing

    listing = variant_listing(64, resources=False)
    assert listing.figures == {} and listing.arch == "sm_90"
    names = [v.name for v in listing.variants]
    assert "cpu" in names and "bankfree" in names and len(names) == len(set(names))


def test_info_for_an_architecture_the_variant_cannot_run_is_refused_not_another_archs_figures():
    for args, said in ((["-v", "wgmma3x", "--arch", "sm_80"], "wgmma3x runs on sm_90a only"),
                       (["-v", "tf32x3", "--arch", "sm_61"], "tf32x3 needs sm_80 or newer")):
        result = CliRunner().invoke(main, ["info", *args, "--shape", "1,256,64"])
        assert result.exit_code == 2, result.output
        assert said in " ".join(result.output.split()) and "modelled as" not in result.output


@pytest.mark.parametrize("grid, block, said", [
    ('["cdiv(N, 64)", "B"]', "4096", "beyond 1024 threads"),
    ('["1", "16000000"]', "64", "beyond CUDA's limits"),
    ('["cdiv(N, 64)", "B"]', "[1, 1, 128]", "z at most 64"),  # 128 threads, but z is capped at 64
])
def test_info_refuses_a_launch_beyond_cudas_limits_in_one_sentence(tmp_path, monkeypatch, grid, block, said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.cu").write_text(GOOD_SOURCE)
    (tmp_path / "attnbench.toml").write_text(FACTS.replace('grid = ["cdiv(N, 64)", "B"]', f"grid = {grid}")
                                             .replace("block = 64", f"block = {block}"))
    result = CliRunner().invoke(main, ["info", "-v", "mine", "--case", "odd_17x48"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], result.output


def test_info_refuses_a_workspace_of_negative_bytes_as_run_does(tmp_path, monkeypatch):
    """`workspaces = { row_max = -1 }` passed `info` with exit 0 (its figures printed), though no run takes it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.cu").write_text(GOOD_SOURCE)
    (tmp_path / "attnbench.toml").write_text(FACTS.replace('source = "mine.cu"',
                                                           'source = "mine.cu"\nworkspaces = { row_max = "N - 100" }'))
    result = CliRunner().invoke(main, ["info", "-v", "mine", "--case", "odd_17x48"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "workspaces.row_max" in lines[0] and "must be >= 0" in lines[0], result.output


@needs_nvcc
def test_info_for_sm_61_without_an_nvcc_that_builds_it_counts_the_static_shared_memory_of_an_older_build(monkeypatch):
    """`info --arch sm_61` showed 100% occupancy for bankfree, whose static shared memory alone allows 12.5%: CUDA 13
    builds no sm_61, so its static arrays come from the oldest architecture this nvcc builds."""
    from attnbench.api import explain

    monkeypatch.setattr(explain, "nvcc_architectures", lambda: frozenset({"sm_90", "sm_80"}))
    result = CliRunner().invoke(main, ["info", "-v", "bankfree", "--arch", "sm_61", "--json"])
    assert result.exit_code == 0, result.output
    report = __import__("json").loads(result.stdout)
    kernel = report["kernels"][0]
    assert kernel["static_smem"] > 32 * 1024 and kernel["registers"] is None and kernel["spill_bytes"] is None
    assert kernel["limiter"] == "shared memory" and kernel["occupancy"] <= 0.25
    assert "static shared memory from its sm_80 build" in " ".join(" ".join(report["notes"]).split())


def test_info_without_nvcc_says_static_shared_memory_is_unknown(monkeypatch):
    from attnbench.api import explain

    monkeypatch.setattr(explain, "nvcc_path", lambda: None)
    result = CliRunner().invoke(main, ["info", "-v", "qreg", "--arch", "sm_61", "--shape", "1,256,64"])
    assert result.exit_code == 0, result.output
    assert "static shared memory is unknown" in " ".join(result.output.split())


def test_a_kernel_whose_shared_memory_does_not_fit_says_so_and_exits_1(monkeypatch):
    """fa2simt asks 196 KB of shared memory per block at d = 64; a GTX 1080's block may have 48 KB: it cannot
    launch there, which info said only as '0 (does not fit)' and exit 0."""
    from attnbench.api import explain

    monkeypatch.setattr(explain, "nvcc_path", lambda: None)
    for extra in ([], ["--json"]):
        result = CliRunner().invoke(main, ["info", "-v", "fa2simt", "--arch", "sm_61", "--shape", "1,4096,64", *extra])
        assert result.exit_code == 1, result.output
        said = " ".join(result.stderr.split())
        assert "error: flash_fa2simt: 200,704 bytes of shared memory per block" in said
        assert "more than the 49,152 a block may have on sm_61" in said
    assert CliRunner().invoke(main, ["info", "-v", "fa2simt", "--arch", "sm_90", "--shape", "1,4096,64"]).exit_code == 0


def test_info_refuses_case_and_shape_together():
    result = CliRunner().invoke(main, ["info", "-v", "qreg", "--case", "t02", "--shape", "1,256,64"])
    assert result.exit_code == 2 and "--case and --shape" in result.output


def test_roofs_of_cases_take_the_card_named_and_the_suites_shapes():
    from attnbench.api.explain import roofs

    report = roofs(["t11", "t29"], "h200")
    assert report.card.label == "H200 SXM" and report.result is None
    assert report.inputs == [("t11", Shape(13600, 128, 32)), ("t29", Shape(4, 32768, 32))]


def test_roofs_take_a_case_list_as_compare_does():
    """`roof course --gpu h200` said "'course' is neither a file nor a suite case; did you mean course?", and
    `roof t11 t11` drew t11 twice."""
    from attnbench.api.explain import roofs

    assert len(roofs(["course"], "h200").inputs) == 30
    assert [label for label, _ in roofs(["t01-t03", "t11", "t11", "t01,t02"], "h200").inputs] == ["t01", "t02", "t03",
                                                                                                 "t11"]


def test_roofs_of_a_saved_compare_hold_it_to_the_card_it_ran_on(tmp_path):
    from attnbench.api.explain import roofs
    from attnbench.errors import UsageError
    from attnbench.output.export import save
    from tests.synthetic import COURSE_SHAPES, H200, result_set

    shapes = {c: COURSE_SHAPES[c] for c in ("t11", "t29")}
    saved = save(result_set({"wgmma16s": {"t11": 0.34, "t29": 2.8}}, shapes), tmp_path, "run")[0]
    report = roofs(saved=str(saved))
    assert report.card.key == "h200" and [label for label, _ in report.inputs] == ["t11", "t29"]
    assert roofs(["t29"], "a100", str(saved)).card.key == "a100"  # another card on purpose
    with pytest.raises(UsageError, match="holds no t02"):
        roofs(["t02"], saved=str(saved))
    elsewhere = save(result_set({"x": {"t11": 1.0}}, COURSE_SHAPES, gpu={**H200, "name": "NVIDIA B\x1b[31m"}),
                     tmp_path, "other")[0]
    with pytest.raises(UsageError, match=r"no peaks for 'NVIDIA B.*one of h200") as refused:
        roofs(saved=str(elsewhere))
    assert "\x1b" not in str(refused.value)  # a name from a file is never printed raw
    assert "'NVIDIA B\\x1b[31m'" in str(refused.value)  # escaped once (it was escaped twice)
    with pytest.raises(UsageError, match="--gpu"):
        roofs(["t11"])


def test_roofs_of_a_saved_judge_are_refused_since_its_times_are_whole_programs(tmp_path):
    """`roof --saved JUDGE.json --gpu gtx1080` held a program's 0.246 s launch-to-exit to t01's kernel roof."""
    from attnbench.api.explain import roofs
    from attnbench.errors import UsageError
    from attnbench.output.export import save
    from tests.synthetic import COURSE_SHAPES, result_set

    judged = save(result_set({"hw4": {"t10": 246.0}}, {"t10": COURSE_SHAPES["t10"]}, kind="judge"), tmp_path, "j")[0]
    with pytest.raises(UsageError, match="a judge's results: whole-program process times"):
        roofs(gpu="gtx1080", saved=str(judged))


@pytest.mark.parametrize("call, said", [
    (lambda e: e.info("bankfree", "t01", shape=Shape(1, 128, 32)), "--case and --shape both give the shape"),
    (lambda e: e.info("bankfree", ""), "case is empty"),
    (lambda e: e.variant_listing(0, resources=False), "head_dim=0"),
    (lambda e: e.variant_listing(-1, resources=False), "head_dim=-1"),
    (lambda e: e.roofs(saved=""), "saved is empty"),
    (lambda e: e.profile("", ["bankfree"]), "case is empty"),
])
def test_odd_values_from_python_are_refused_as_the_command_line_refuses_them(call, said):
    """From Python, info(case and shape) dropped the case without a word, variant_listing(0) listed for d = 0,
    and an empty case or saved file was read as the working folder (".: is a folder")."""
    from attnbench.api import explain
    from attnbench.errors import UsageError

    with pytest.raises(UsageError, match=re.escape(said)):
        call(explain)
