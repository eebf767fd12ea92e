"""What a user's launch facts may hand to nvcc (attnbench/kernels/nvcc_options.py): an allow-list of options, one
token each with a plain value, and kernel paths with no shell meaning; the red team's option tables refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnbench.kernels.builtin_variants import REGISTRY
from attnbench.kernels.nvcc_options import option_problem, path_problem
from attnbench.kernels.user import UserVariantError, find_launch_facts, load_variants

ACCEPTED = ["-O3", "--use_fast_math", "-use_fast_math", "-ftz=true", "-prec-div=false", "--prec-sqrt=false",
            "--fmad=false", "-lineinfo", "--generate-line-info", "-maxrregcount=128", "--maxrregcount=64",
            "-std=c++17", "--restrict", "--extra-device-vectorization", "--expt-relaxed-constexpr",
            "--extended-lambda", "--default-stream=per-thread", "-diag-suppress=177,550", "-Werror=all-warnings",
            "-DTILE=64", "-DFAST", "-UNDEBUG", "-Xptxas=-v", "-Xptxas=-v,-dlcm=cg,--maxrregcount=96",
            "--ptxas-options=--warn-on-spills"]
REFUSED = [
    "-Xcompiler=-DRT_X=$(true)",           # the red team's form: nvcc pastes -Xcompiler values into sh
    "--compiler-options=-fPIC",            # the host compiler's options: none are passed on
    "-ccbin=gcc", "--compiler-bindir=gcc",  # another host compiler
    "-I/etc", "-include=x.h", "--pre-include=x.h",  # files read
    "-o=x", "--keep", "--keep-dir=k", "-odir=k",    # files written
    "-arch=sm_90", "-gencode=arch=compute_90,code=sm_90",  # the arch key says it
    "-rdc=true", "--run", "--dryrun", "-Xlinker=-z", "-Xnvlink=x",
    "-maxrregcount", "64",                 # two tokens: the second is no option
    "-DX=$(true)", "-DX=`true`", "-DX=a;b", "-DX=a b", "-DX='a'", '-DX="a"', "-DX=a/b", "-D X",
    "-Xptxas=-v;true", "-Xptxas=--fake-option", "-Xptxas=-v,-o=x", "--use_fast_math ", "-O3\n-ccbin",
    "", "-", "O3",
]


@pytest.mark.parametrize("option", ACCEPTED)
def test_the_options_kernel_authors_use_are_accepted(option):
    assert option_problem(option) is None


@pytest.mark.parametrize("option", REFUSED)
def test_anything_else_is_refused_in_a_few_words(option):
    problem = option_problem(option)
    assert problem is not None and "\n" not in problem and repr(option) in problem


def test_the_built_in_variants_options_are_on_the_list():
    """What our own variants need, a user's may have too (a list that refused them would be too tight)."""
    options = {o for v in REGISTRY.values() for o in (*v.options, *(o for f in v.flavours.values() for o in f.options))}
    assert options and all(option_problem(o) is None for o in options), options


def test_kernel_paths_with_shell_or_preprocessor_meaning_are_refused():
    assert path_problem("/home/ana/My Kernels/flash-v2.0/mine.cu") is None
    assert path_problem("/home/ana/ядра/mine.cu") is None
    for bad in ["/tmp/$(true)/mine.cu", "/tmp/`true`/mine.cu", '/tmp/a"b/mine.cu', "/tmp/a'b/mine.cu",
                "/tmp/a;b/mine.cu", "/tmp/a\nb/mine.cu", "/tmp/a\\b/mine.cu", "/tmp/a|b/mine.cu", "/tmp/a&b/mine.cu"]:
        assert path_problem(bad) is not None, bad


# The red team's two tables whose nvcc option ran a shell command while attnbench compiled: the same keys and
# the same option form, the command made inert (the real ones rewrote cuda/fresh_samples.cu, or planted a cubin
# in pycuda's compiler cache). Nothing runs in this test: the table is refused before any compiler starts.
RT_CCBIN = """
[variants.rt_ccbin]
source = "rt_ccbin.cu"
layout = "separate"
technique = "flash attention, built with a host-compiler define"
max_head_dim = 64
defines = { HEAD_DIM = "d", RT_TFLOPS = "60" }
options = ['-Xcompiler=-DRT_X=$(true)']

[[variants.rt_ccbin.kernels]]
name = "rt_ccbin_attn"
grid = ["cdiv(N, 64)", "B"]
block = 64
args = ["q", "k", "v", "o", "N", "scale_log2"]
"""
RT_CACHEPOISON = """
[variants.rt_cachepoison]
source = "rt_cachepoison.cu"
layout = "separate"
technique = "flash attention, built with a host-compiler define"
max_head_dim = 64
unit = "memory"
defines = { HEAD_DIM = "d", RT_TFLOPS = "1000" }
options = ['-Xcompiler=-DRT_Y=$(echo Cg== | base64 -d | python3 >/dev/null 2>&1)']

[[variants.rt_cachepoison.kernels]]
name = "rt_cachepoison_attn"
grid = ["cdiv(N, 64)", "B"]
block = 64
args = ["q", "k", "v", "o", "N", "scale_log2"]
"""


def _refusal(folder: Path, text: str, source: str) -> str:
    (folder / source).write_text('extern "C" __global__ void k() {}\n')
    (folder / "attnbench.toml").write_text(text)
    with pytest.raises(UserVariantError) as info:
        load_variants(find_launch_facts(folder))
    assert info.value.exit_code == 2 and "\n" not in str(info.value)
    return str(info.value)


def test_the_red_teams_compile_time_shell_command_is_refused_naming_the_key(tmp_path):
    message = _refusal(tmp_path, RT_CCBIN, "rt_ccbin.cu")
    assert message.startswith(f"{(tmp_path / 'attnbench.toml').resolve()}: variants.rt_ccbin.options[0]: ")
    assert "'Xcompiler' is not one attnbench passes on" in message


def test_the_red_teams_cache_poisoning_table_is_refused_for_its_unit_and_for_its_option(tmp_path):
    message = _refusal(tmp_path, RT_CACHEPOISON, "rt_cachepoison.cu")
    assert message.startswith(f"{(tmp_path / 'attnbench.toml').resolve()}: variants.rt_cachepoison.unit: ")
    assert "not 'memory'" in message and "O(N^2 d)" in message
    message = _refusal(tmp_path, RT_CACHEPOISON.replace('unit = "memory"\n', ""), "rt_cachepoison.cu")
    assert message.startswith(f"{(tmp_path / 'attnbench.toml').resolve()}: variants.rt_cachepoison.options[0]: ")


def test_a_flavours_options_are_held_to_the_same_list(tmp_path):
    text = RT_CCBIN.replace("options = ['-Xcompiler=-DRT_X=$(true)']", "options = ['-O3']") + """
[variants.rt_ccbin.flavours.fast]
options = ["--use_fast_math", "-ccbin=/tmp/x"]
"""
    message = _refusal(tmp_path, text, "rt_ccbin.cu")
    assert "variants.rt_ccbin.flavours.fast.options[1]: " in message and "'ccbin'" in message


def test_a_kernel_in_a_folder_whose_name_the_shell_reads_is_refused(tmp_path):
    folder = tmp_path / "k$(true)"
    folder.mkdir()
    text = RT_CCBIN.replace("options = ['-Xcompiler=-DRT_X=$(true)']", "options = ['-O3']")
    message = _refusal(folder, text, "rt_ccbin.cu")
    assert "variants.rt_ccbin.source: rt_ccbin.cu: its path holds '$' '(' ')'" in message


def test_run_refuses_the_red_teams_table_in_one_line_before_any_compiler_starts(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from attnbench.cli import main

    (tmp_path / "rt_ccbin.cu").write_text('extern "C" __global__ void rt_ccbin_attn() {}\n')
    (tmp_path / "attnbench.toml").write_text(RT_CCBIN)
    monkeypatch.chdir(tmp_path)
    started: list[object] = []
    monkeypatch.setattr("subprocess.run", lambda *a, **k: started.append(a) or pytest.fail("a process started"))
    result = CliRunner().invoke(main, ["run", "odd_17x48", "out.bin", "--variant", "rt_ccbin", "--check"])
    assert result.exit_code == 2 and "Traceback" not in result.output and not started
    text = " ".join(result.output.split())
    assert "attnbench.toml: variants.rt_ccbin.options[0]: '-Xcompiler=-DRT_X=$(true)'" in text
    assert not (tmp_path / "out.bin").exists()
