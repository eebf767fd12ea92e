"""User variants: launch facts in attnbench.toml, every kind of bad fact, lookup, `new`, the runner's q/k/v layout."""

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from attnbench.bench.first_pass import WholeInput
from attnbench.bench.runner import run_cell
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.verify import compare_outputs
from attnbench.cases.reference import reference_output
from attnbench.cases.testcase import Shape
from attnbench.cli import main
from attnbench.errors import UnknownName
from attnbench.kernels.catalogue import get_variant
from attnbench.kernels.nvcc import compile_report, compile_source, nvcc_command, nvcc_path
from attnbench.kernels.starter import write_starter
from attnbench.kernels.user import UserVariantError, find_launch_facts, load_variants, variant_for_source
from attnbench.kernels.variant import Launch, Variant
from attnbench.results.limits import UNKNOWN_LIMITS
from tests.conftest import random_testcase
from tests.fakes import FakeEvent, FakeFreshKernels, SteadyClock

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "report_kernel"

GOOD = """
[variants.mine]
source = "mine.cu"
defines = { HEAD_DIM = "d" }
workspaces = { row_max = "4 * B * N" }

[[variants.mine.kernels]]
name = "mine_attention"
grid = ["cdiv(N, 64)", "B"]
block = 64
args = ["q", "k", "v", "o", "N", "scale_log2", "row_max"]
"""


def write_facts(folder: Path, text: str, name: str = "attnbench.toml") -> Path:
    (folder / "mine.cu").write_text('extern "C" __global__ void mine_attention() {}\n')
    path = folder / name
    path.write_text(text)
    return path


def load(folder: Path) -> dict[str, Variant]:
    facts = find_launch_facts(folder)
    assert facts is not None
    return load_variants(facts)


def test_the_good_table_becomes_a_variant(tmp_path):
    write_facts(tmp_path, GOOD)
    variant = load(tmp_path)["mine"]
    assert variant.layout == "separate" and variant.source == str(tmp_path / "mine.cu")
    shape = Shape(3, 100, 32)
    launch = variant.launches[0]
    assert launch.grid(shape) == (2, 3, 1) and launch.block(shape) == (64, 1, 1) and launch.smem(shape) == 0
    assert variant.defines(shape) == {"HEAD_DIM": 32}
    assert variant.workspace_bytes(shape) == 4 * 3 * 100
    assert variant.steps(shape) == 1 and variant.report == "user (attnbench.toml)"


def test_an_arch_builds_for_it_alone_and_runs_only_on_its_gpus(tmp_path):
    write_facts(tmp_path, _replace("defines", 'arch = "sm_90a"\ndefines'))
    variant = load(tmp_path)["mine"]
    assert variant.arch == "sm_90a" and variant.runs_on((9, 0)) and not variant.runs_on((8, 0))
    assert "-arch=sm_90a" in nvcc_command(variant, Shape(1, 64, 32), "sm_80", tmp_path / "k.cubin")
    write_facts(tmp_path, GOOD)
    assert load(tmp_path)["mine"].arch is None


def _replace(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


BAD_FACTS = [
    # (toml text, key named in the message, words in the message)
    (_replace('source = "mine.cu"\n', ""), "variants.mine.source", "missing"),
    (_replace('"mine.cu"', '"gone.cu"'), "variants.mine.source", "gone.cu: no such file"),
    (_replace('"mine.cu"', '"/"'), "variants.mine.source", "/: a folder, not a kernel file"),  # was "no such file"
    (GOOD.replace("variants.mine", "variants.all"), "variants.all", "names a group of variants"),  # shadowed by it
    (_replace("defines", "gird = 3\ndefines"), "variants.mine.gird", "unknown key"),
    (_replace("defines", 'layout = "interleaved"\ndefines'), "variants.mine.layout", 'must be "separate"'),
    (GOOD.split("[[variants.mine.kernels]]")[0], "variants.mine.kernels", "missing"),
    (_replace('grid = ["cdiv(N, 64)", "B"]\n', ""), "variants.mine.kernels[0].grid", "missing"),
    (_replace("block = 64\n", ""), "variants.mine.kernels[0].block", "missing"),
    (_replace('args = ["q", "k", "v", "o", "N", "scale_log2", "row_max"]\n', ""), "variants.mine.kernels[0].args",
     "missing"),
    (_replace("block = 64", "block = 64\nthreads = 64"), "variants.mine.kernels[0].threads", "unknown key"),
    (_replace('name = "mine_attention"', 'name = "mine-attention"'), "variants.mine.kernels[0].name",
     'extern "C" name'),
    (_replace('grid = ["cdiv(N, 64)", "B"]', 'grid = [1, 1, 1, 1]'), "variants.mine.kernels[0].grid",
     "1 to 3 sizes"),
    (_replace('"cdiv(N, 64)"', '"cdiv(n, 64)"'), "variants.mine.kernels[0].grid[0]", "unknown name 'n'"),
    (_replace('"cdiv(N, 64)"', '"__import__(\'os\').getpid()"'), "variants.mine.kernels[0].grid[0]",
     "only the calls"),
    (_replace("block = 64", 'block = "N / 2"'), "variants.mine.kernels[0].block[0]", "`/` is not allowed"),
    (_replace("block = 64", "block = 64\nsmem = 1.5"), "variants.mine.kernels[0].smem", "whole number or a formula"),
    (_replace("block = 64", 'block = 64\nsmem = "2 ** 70"'), "variants.mine.kernels[0].smem", "`**`"),
    (_replace('"row_max"]', '"qkv"]'), "variants.mine.kernels[0].args", "unknown argument 'qkv'"),
    (_replace('"row_max"]', '"row_min"]'), "variants.mine.kernels[0].args", "unknown argument 'row_min'"),
    (_replace('args = ["q", "k", "v", "o", "N", "scale_log2", "row_max"]', 'args = "q, k, v, o"'),
     "variants.mine.kernels[0].args", "list of argument names"),
    (_replace('HEAD_DIM = "d"', '"HEAD DIM" = "d"'), "variants.mine.defines.HEAD DIM", "C identifier"),
    (_replace('HEAD_DIM = "d"', 'HEAD_DIM = "d.real"'), "variants.mine.defines.HEAD_DIM", "attribute access"),
    (_replace('row_max = "4 * B * N"', 'q = "4 * B * N"'), "variants.mine.workspaces.q", "reserved"),
    (_replace('row_max = "4 * B * N"', 'row_max = "lambda: 4"'), "variants.mine.workspaces.row_max", "Lambda is not"),
    (_replace("defines", "head_dims = 64\ndefines"), "variants.mine.head_dims", "list of positive whole numbers"),
    (_replace("defines", "max_seq_len = -1\ndefines"), "variants.mine.max_seq_len", "whole number >= 1"),
    (_replace("defines", "max_head_dim = \"64\"\ndefines"), "variants.mine.max_head_dim", "whole number >= 1"),
    (_replace("defines", "min_head_dim = 128\nmax_head_dim = 32\ndefines"), "variants.mine.max_head_dim",
     "32 is below min_head_dim = 128"),
    (_replace("defines", 'steps = "x"\ndefines'), "variants.mine.steps", "unknown name 'x'"),
    (_replace("defines", 'options = "-O3"\ndefines'), "variants.mine.options", "list of strings"),
    (_replace("defines", "options = ['-Xcompiler=-DX=$(true)']\ndefines"), "variants.mine.options[0]",
     "'Xcompiler' is not one attnbench passes on"),
    (_replace("defines", "technique = 3\ndefines"), "variants.mine.technique", "must be a string"),
    (_replace("defines", 'arch = "sm90a"\ndefines'), "variants.mine.arch", "one architecture"),
    (_replace("defines", 'arch = ["sm_90a", "sm_80"]\ndefines'), "variants.mine.arch", "one architecture"),
    (_replace("[variants.mine]", "[variants.qreg]").replace("variants.mine.kernels", "variants.qreg.kernels"),
     "variants.qreg", "built-in variant"),
    ("variants = 3\n", "variants", "must be a table"),
    ("[variant.mine]\nsource = 'mine.cu'\n", "variant", "unknown key"),
    ("[variants.mine\nsource = 'mine.cu'\n", "", "not valid TOML"),
]


@pytest.mark.parametrize("text, key, words", BAD_FACTS, ids=[f"{i}-{case[1]}" for i, case in enumerate(BAD_FACTS)])
def test_each_bad_launch_fact_is_one_line_naming_the_file_and_the_key(tmp_path, text, key, words):
    path = write_facts(tmp_path, text)
    with pytest.raises(UserVariantError) as info:
        load(tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path.resolve()}: {key}")
    assert words in message


def test_the_same_errors_from_pyproject_name_the_tool_table(tmp_path):
    text = GOOD.replace("[variants.", "[tool.attnbench.variants.").replace("[[variants.", "[[tool.attnbench.variants.")
    write_facts(tmp_path, text.replace('"cdiv(N, 64)"', '"cdiv(N, 64.0)"'), "pyproject.toml")
    pattern = r"pyproject.toml: tool\.attnbench\.variants\.mine\.kernels\[0\]\.grid\[0\]: float 64\.0"
    with pytest.raises(UserVariantError, match=pattern):
        load(tmp_path)


@pytest.mark.parametrize("field, formula, shape, words", [
    ("grid", '["N // (d - 32)", "B"]', Shape(1, 64, 32), "division by zero for B=1, N=64, d=32"),
    ("smem", '"4 * (d - 64)"', Shape(1, 64, 32), "= -128 for B=1, N=64, d=32; it must be >= 0"),
    ("block", '"d - 32"', Shape(1, 64, 32), "= 0 for B=1, N=64, d=32; it must be >= 1"),
])
def test_formulas_that_fail_for_a_shape_say_so_when_evaluated(tmp_path, field, formula, shape, words):
    text = GOOD.replace("block = 64", f"block = 64\n{field} = {formula}" if field == "smem" else "block = 64")
    if field != "smem":
        text = text.replace('grid = ["cdiv(N, 64)", "B"]' if field == "grid" else "block = 64", f"{field} = {formula}")
    path = write_facts(tmp_path, text)
    launch = load(tmp_path)["mine"].launches[0]
    with pytest.raises(UserVariantError) as info:
        getattr(launch, field)(shape)
    assert str(info.value).startswith(f"{path.resolve()}: variants.mine.kernels[0].{field}")
    assert words in str(info.value)


def test_launch_facts_are_found_in_a_parent_and_pyproject_without_the_table_is_skipped(tmp_path):
    write_facts(tmp_path, GOOD)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    facts = find_launch_facts(deep)
    assert facts is not None and facts.path == (tmp_path / "attnbench.toml").resolve()
    (tmp_path / "a" / "pyproject.toml").write_text(GOOD.replace("[variants.", "[tool.attnbench.variants.")
                                                   .replace("[[variants.", "[[tool.attnbench.variants.")
                                                   .replace('"mine.cu"', '"../mine.cu"'))
    facts = find_launch_facts(deep)
    assert facts.path == (tmp_path / "a" / "pyproject.toml").resolve()
    assert load_variants(facts)["mine"].source == str((tmp_path / "mine.cu").resolve())


def test_lookup_by_name_from_the_folder_and_by_kernel_path_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(EXAMPLE)
    assert get_variant("flash").source == str(EXAMPLE / "flash.cu")
    assert get_variant("qreg").layout == "qkv"  # built-ins first
    with pytest.raises(UnknownName, match="known variants: .*qreg.*flash"):
        get_variant("nosuch")
    monkeypatch.chdir(tmp_path)
    assert get_variant(str(EXAMPLE / "flash.cu")).name == "flash"
    with pytest.raises(UnknownName, match="known variants: cpu"):
        get_variant("flash")  # no launch facts here: only the built-ins are known
    stray = tmp_path / "stray.cu"
    stray.write_text("// not named anywhere\n")
    with pytest.raises(UserVariantError, match=r"stray\.cu: no attnbench\.toml .*attnbench new NAME"):
        get_variant(str(stray))
    write_facts(tmp_path, GOOD)
    with pytest.raises(UserVariantError, match=r'has no variant with source = "stray\.cu"'):
        variant_for_source(str(stray))
    with pytest.raises(UserVariantError, match="gone.cu: no such kernel file"):
        get_variant("gone.cu")


def test_the_example_kernel_takes_d_up_to_64():
    facts = find_launch_facts(EXAMPLE)
    flash = load_variants(facts)["flash"]
    assert flash.refusal(Shape(2, 100, 64)) is None
    assert "d in [1, 64]" in flash.refusal(Shape(2, 100, 128)).sentence()
    assert flash.launches[0].grid(Shape(10, 2048, 64)) == (32, 10, 1)


def test_new_writes_a_kernel_and_facts_that_load_and_never_overwrites(tmp_path):
    files = write_starter("mine", tmp_path)
    assert not files.appended and files.kernel.read_text().startswith("// mine.cu")
    mine = load(tmp_path)["mine"]
    assert mine.layout == "separate" and mine.launches[0].kernel == "mine_attention"
    assert mine.launches[0].grid(Shape(3, 300, 64)) == (3, 3, 1) and mine.defines(Shape(3, 300, 64)) == {"HEAD_DIM": 64}
    result = CliRunner().invoke(main, ["new", "mine", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "already exists; not overwritten" in " ".join(result.output.split())
    files.kernel.rename(tmp_path / "moved.cu")
    result = CliRunner().invoke(main, ["new", "mine", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "already has [variants.mine]" in " ".join(result.output.split())
    (tmp_path / "moved.cu").rename(files.kernel)
    result = CliRunner().invoke(main, ["new", "second", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "added [variants.second] to" in result.output
    assert set(load(tmp_path)) == {"mine", "second"}
    for bad in ("my-kernel", "qreg", "1st"):
        result = CliRunner().invoke(main, ["new", bad, "--dir", str(tmp_path)])
        assert result.exit_code == 2 and "Traceback" not in result.output


def test_cli_errors_for_user_variants_are_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_facts(tmp_path, GOOD.replace('"cdiv(N, 64)"', '"cdiv(N, 64) + x"'))
    result = CliRunner().invoke(main, ["run", "odd_17x48", "out.bin", "--variant", "mine"])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "attnbench.toml: variants.mine.kernels[0].grid[0]: unknown name 'x'" in text
    assert "Traceback" not in result.output
    result = CliRunner().invoke(main, ["list", "--no-resources"])
    assert result.exit_code == 2 and "unknown name 'x'" in result.output


def test_list_shows_user_variants(monkeypatch):
    monkeypatch.chdir(EXAMPLE)
    result = CliRunner().invoke(main, ["list", "--no-resources", "--wide"], terminal_width=200)
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines()]
    # side by side, or one block per variant where the console is too narrow for the wide columns
    assert any(row[:1] == ["flash"] or row[:2] == ["variant", "flash"] for row in rows)
    assert "(attnbench.toml)" in result.output


# -- the compiler's view, where nvcc is present (no GPU needed) -----------------------------------------
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="no nvcc")


@needs_nvcc
@pytest.mark.parametrize("d", [1, 64])
def test_the_example_and_starter_kernels_compile_without_spills(tmp_path, d):
    write_starter("mine", tmp_path)
    for variant in (load_variants(find_launch_facts(EXAMPLE))["flash"], load(tmp_path)["mine"]):
        figures = compile_report(variant, Shape(1, 128, d), "sm_80")
        kernel = variant.launches[0].kernel
        assert kernel in figures, f"{variant.name} did not compile for d={d}"
        assert figures[kernel].spills == 0


@needs_nvcc
def test_a_compile_error_names_the_users_file_and_line(tmp_path):
    write_facts(tmp_path, GOOD)
    (tmp_path / "mine.cu").write_text('// line 1\n\nextern "C" __global__ void mine_attention() { int x = ; }\n')
    variant = load(tmp_path)["mine"]
    (tmp_path / "build").mkdir()
    copy = tmp_path / "build" / "kernel.cu"  # pycuda compiles a copy in a temporary folder
    copy.write_text(compile_source(variant))
    result = subprocess.run([nvcc_path(), "-cubin", "-arch=sm_80", str(copy), "-o", str(tmp_path / "k.cubin")],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert f"{tmp_path / 'mine.cu'}(3): error" in result.stdout + result.stderr


# -- the runner's separate q, k, v layout, on a simulated device --------------------------------------------
class FakeDriver:
    """Device memory as numpy arrays at fake addresses; kernels are Python functions over that memory."""

    class Error(Exception):
        pass

    class MemoryError(Exception):
        pass

    LogicError = Error

    def __init__(self):
        self.blocks: dict[int, np.ndarray] = {}
        self.next = 1 << 32
        self.copies: list[tuple[str, int]] = []
        driver = self

        class Allocation(int):
            def free(self):
                driver.blocks.pop(int(self), None)

        self.Allocation = Allocation

        self.Event = FakeEvent

        class Context:
            @staticmethod
            def synchronize():
                pass

        self.Context = Context

    def mem_alloc(self, nbytes):
        address = self.next
        self.next += 1 << 32
        self.blocks[address] = np.zeros(nbytes // 4, dtype=np.float32)
        return self.Allocation(address)

    def view(self, pointer, count):
        base = max(a for a in self.blocks if a <= pointer)
        offset = (pointer - base) // 4
        assert offset + count <= self.blocks[base].size, "read or write beyond an allocation"
        return self.blocks[base][offset: offset + count]

    def memcpy_htod(self, pointer, array):
        # the fresh samples' rows and totals (integers, kept as their bits) are told apart from the input's uploads
        self.copies.append(("htod" if array.dtype == np.float32 else "htod-indices", array.nbytes))
        bits = np.ascontiguousarray(array).reshape(-1).view(np.float32)
        self.view(int(pointer), bits.size)[:] = bits

    def memcpy_dtod(self, dest, src, nbytes):
        self.view(int(dest), nbytes // 4)[:] = self.view(int(src), nbytes // 4).copy()

    def memcpy_dtoh(self, array, pointer):
        bits = array.reshape(-1).view(np.float32)
        bits[:] = self.view(int(pointer), bits.size)

    def memset_d32(self, pointer, bits, count):
        self.view(int(pointer), count).view(np.uint32)[:] = bits


class FakeKernel:
    """Attention over the chunk the launch names: separate q, k, v, o pointers (or qkv and out)."""

    def __init__(self, driver, layout):
        self.driver, self.layout = driver, layout

    def prepare(self, signature):
        self.signature = signature

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        if self.layout == "separate":
            q, k, v, o, B, N, d = args
            B, N, d = int(B), int(N), int(d)
            arrays = [self.driver.view(p, B * N * d).reshape(B, N, d) for p in (q, k, v)]
        else:
            qkv, o, B, N, d = args
            B, N, d = int(B), int(N), int(d)
            both = self.driver.view(qkv, 3 * B * N * d).reshape(B, 3, N, d)
            arrays = [both[:, i] for i in range(3)]
        assert grid == (math.ceil(N / 64), B, 1)
        s = np.einsum("bnd,bmd->bnm", arrays[0], arrays[1]) / math.sqrt(d)
        p = np.exp(s - s.max(axis=2, keepdims=True))
        out = np.einsum("bnm,bmd->bnd", p / p.sum(axis=2, keepdims=True), arrays[2])
        self.driver.view(o, B * N * d)[:] = out.reshape(-1)


class FakeGpu:
    name = "fake GPU"
    sm_count = 132
    fp32_peak_flops = 1e12
    limits = UNKNOWN_LIMITS
    l2_bytes = 1 << 20
    compute_capability = (9, 0)

    def l2_flush_pending_bytes(self):
        return 0

    def flush_l2(self):
        pass

    def clock(self, what):
        return SteadyClock()

    def __init__(self, layout):
        self.driver = FakeDriver()
        self.kernel = FakeKernel(self.driver, layout)

    def compile(self, variant, shape):
        class Compiled:
            compile_seconds = 0.0
            functions = {variant.launches[0].kernel: self.kernel}

        return Compiled()

    def free_memory(self):
        return 1 << 34

    def allow_dynamic_smem(self, function, kernel, nbytes):
        pass

    def support_function(self, source, name, signature):
        """cuda/fresh_samples.cu's kernels over this fake's float memory, in numpy."""
        memory = lambda address, nbytes: self.driver.view(address, nbytes // 4).view(np.uint8)  # noqa: E731
        return FakeFreshKernels(memory, name)

    def throttle_reasons(self):
        return []


@pytest.mark.parametrize("layout, args", [("separate", ("q", "k", "v", "o", "B", "N", "d")),
                                          ("qkv", ("qkv", "out", "B", "N", "d"))])
def test_the_runner_passes_each_chunk_its_own_q_k_v_arrays(layout, args):
    variant = Variant(name="fake", report="test", technique="test", source="fake.cu", layout=layout, max_chunk=2,
                      launches=(Launch("fake", grid=lambda s: (math.ceil(s.N / 64), s.B, 1),
                                       block=lambda s: (64, 1, 1), args=args),))
    testcase = random_testcase(5, 70, 8, np.random.default_rng(1))
    gpu = FakeGpu(layout)
    run = run_cell(variant, WholeInput(testcase, "rand"), gpu, TimingPolicy(warmup=0, reps=1, flush_l2=False))
    output = run.output
    assert compare_outputs(output, reference_output(testcase), atol=1e-5).passed
    assert run.timed_check.passed, run.timed_check.describe()  # the chunks' pointers, on fresh inputs
    # the upload copies the same bytes either way: three B x N x d arrays, or one interleaved array
    uploads = [size for kind, size in gpu.driver.copies if kind == "htod"]
    assert sum(uploads) == testcase.qkv.nbytes
    assert len(uploads) == (3 if layout == "separate" else 1)
    assert run.timed_check.samples == 1 + 4 and run.timed_check.fresh_inputs == 3  # two launch an input again


# -- on a GPU ---------------------------------------------------------------------------------------------
def _cli_in(folder: Path, monkeypatch, *args):
    monkeypatch.chdir(folder)
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.gpu
def test_the_example_kernel_runs_checks_and_compares_with_built_ins(gpu, tmp_path, monkeypatch):
    out = tmp_path / "out.bin"
    for case in ("odd_100x32", "odd_33x64", "t02"):
        result = _cli_in(EXAMPLE, monkeypatch, "run", case, out, "--variant", "flash", "--check", "--reps", "3")
        assert result.exit_code == 0, result.output
        assert "PASS" in result.output
    result = _cli_in(EXAMPLE, monkeypatch, "compare", "--variants", "flash,qreg", "--cases", "t02,odd_100x32",
                     "--reps", "3", "--results-dir", tmp_path / "res")
    assert result.exit_code == 0, result.output
    import json

    saved = json.loads(next((tmp_path / "res").glob("*.json")).read_text())
    flash = next(v for v in saved["variants"] if v["name"] == "flash")
    assert flash["source"] == str(EXAMPLE / "flash.cu") and flash["source_hash"]
    assert {c["status"] for c in saved["cells"] if c["variant"] == "flash"} == {"ok"}


@pytest.mark.gpu
def test_the_starter_kernel_passes_check_by_name_and_by_path(gpu, tmp_path, monkeypatch):
    write_starter("mine", tmp_path)
    for name in ("mine", "./mine.cu"):
        for case in ("odd_17x48", "odd_1000x128", "t01"):
            result = _cli_in(tmp_path, monkeypatch, "run", case, "out.bin", "--variant", name, "--check", "--reps", "2")
            assert result.exit_code == 0, result.output
            assert "PASS" in result.output


@pytest.mark.gpu
def test_a_compile_error_and_a_bad_geometry_are_one_sentence(gpu, tmp_path, monkeypatch):
    write_facts(tmp_path, GOOD.replace("block = 64", "block = 2048"))
    (tmp_path / "mine.cu").write_text('extern "C" __global__ void mine_attention(const float* q, const float* k, '
                                      'const float* v, float* o, int N, float s, float* w) {}\n')
    result = _cli_in(tmp_path, monkeypatch, "run", "odd_17x48", "out.bin", "--variant", "mine")
    assert result.exit_code == 3
    assert "kernel mine_attention asks for block (2048, 1, 1), beyond 1024 threads" in " ".join(result.output.split())
    (tmp_path / "mine.cu").write_text('// line 1\n\nextern "C" __global__ void mine_attention() { int x = ; }\n')
    result = _cli_in(tmp_path, monkeypatch, "run", "odd_17x48", "out.bin", "--variant", "mine")
    assert result.exit_code == 3
    assert f"{tmp_path / 'mine.cu'}(3): error" in result.output and "Traceback" not in result.output


FAULTY = """
extern "C" __global__ void faulty_attention(const float* q, const float* k, const float* v, float* o, int N) {
    o[(size_t)1 << 40] = 1.0f;  // far outside any allocation: an illegal address
}
"""


@pytest.mark.gpu
def test_a_faulting_kernel_is_reported_and_the_compare_ends_cleanly_with_results_saved(gpu, tmp_path):
    import json
    import os
    import sys

    write_starter("mine", tmp_path)
    (tmp_path / "faulty.cu").write_text(FAULTY)
    with open(tmp_path / "attnbench.toml", "a") as f:
        f.write('\n[variants.faulty]\nsource = "faulty.cu"\n[[variants.faulty.kernels]]\nname = "faulty_attention"\n'
                'grid = ["B"]\nblock = 1\nargs = ["q", "k", "v", "o", "N"]\n')
    paths = [str(Path(__file__).resolve().parents[2]), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}  # this checkout first, and whatever gave pycuda
    # In a process of its own: a fault ends the CUDA context of the process it happens in.
    done = subprocess.run([sys.executable, "-m", "attnbench", "compare", "--variants", "faulty,mine",
                           "--cases", "odd_17x48,odd_100x32", "--reps", "2", "--results-dir", "res"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert 0 < done.returncode < 128, done.stderr
    assert "Traceback" not in done.stderr
    assert "faulty on odd_17x48" in done.stderr
    saved = json.loads(next((tmp_path / "res").glob("*.json")).read_text())
    cells = {(c["variant"], c["case"]): c for c in saved["cells"]}
    assert len(cells) == 4 and cells[("faulty", "odd_17x48")]["status"] == "error"
    for key, cell in cells.items():  # the rest ran in a context that survived, or are marked as not run
        if key == ("faulty", "odd_17x48"):
            continue
        if cell["status"] == "error":
            assert key[0] == "faulty" or cell["message"].startswith("not run: the CUDA context was lost")
        else:
            assert key[0] == "mine" and cell["status"] == "ok"


class FaultingKernel(FakeKernel):
    def prepared_async_call(self, *args, **kwargs):
        raise self.driver.Error("an illegal memory access was encountered")


@pytest.mark.parametrize("context_survives", [True, False])
def test_a_fault_is_an_error_cell_and_a_lost_context_stops_the_matrix(context_survives):
    from attnbench.cases.inputs import SyntheticInput
    from tests.spread.one_device import matrix_here

    args = ("q", "k", "v", "o", "B", "N", "d")

    def variant(name):
        return Variant(name=name, report="test", technique="test", source=f"{name}.cu", layout="separate",
                       launches=(Launch(name, grid=lambda s: (math.ceil(s.N / 64), s.B, 1),
                                        block=lambda s: (64, 1, 1), args=args),))

    gpu = FakeGpu("separate")
    healthy, faulting = gpu.kernel, FaultingKernel(gpu.driver, "separate")
    gpu.compile = lambda v, shape: type("Compiled", (), {"compile_seconds": 0.0, "functions": {
        v.name: faulting if v.name == "faulty" else healthy}})()
    gpu.context_error = lambda: None if context_survives else "an illegal memory access was encountered"
    inputs = [SyntheticInput(Shape(2, 70, 8), seed=1), SyntheticInput(Shape(3, 65, 4), seed=2)]
    policy = lambda v: TimingPolicy(warmup=0, reps=1, flush_l2=False)
    infos, cells = matrix_here([variant("faulty"), variant("good")], inputs, gpu, policy)
    status = {(c.variant, c.case): c for c in cells}
    first, second = inputs[0].label, inputs[1].label
    assert status[("faulty", first)].status == "error"
    assert "faulty: launching kernel faulty failed: an illegal memory access" in status[("faulty", first)].message
    if context_survives:
        assert status[("good", first)].status == "ok" and status[("good", second)].status == "ok"
        assert status[("faulty", second)].status == "error"
    else:
        for key in (("good", first), ("faulty", second), ("good", second)):
            assert status[key].status == "error"
            assert status[key].message.startswith("not run: the CUDA context was lost after faulty failed on")
        assert infos[1].origin == "not loaded" and infos[1].note.startswith("not run")


def test_the_next_step_new_prints_works_from_the_folder_it_was_typed_in(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["new", "k", "--dir", "sub"])
    assert result.exit_code == 0, result.output
    step = result.output.split("next: ", 1)[1].strip()
    assert step == "cd sub && attnbench run t02 out.bin --variant k --check"
    monkeypatch.chdir(tmp_path / "sub")
    assert "k" in load_variants(find_launch_facts())  # where the step goes, the variant is found
    result = CliRunner().invoke(main, ["new", "k2"])
    assert result.output.split("next: ", 1)[1].strip() == "attnbench run t02 out.bin --variant k2 --check"


def test_a_declared_unit_is_read_and_checked(tmp_path):
    """The unit whose peak a speed is held to (default ffma); an unknown one is refused naming the key."""
    (tmp_path / "mine.cu").write_text("// kernel\n")
    table = GOOD.replace('[variants.mine]\n', '[variants.mine]\nunit = "tensor"\n', 1)
    (tmp_path / "attnbench.toml").write_text(table)
    assert load_variants(find_launch_facts(tmp_path))["mine"].unit == "tensor"
    (tmp_path / "attnbench.toml").write_text(GOOD)
    assert load_variants(find_launch_facts(tmp_path))["mine"].unit == "ffma"
    (tmp_path / "attnbench.toml").write_text(table.replace('"tensor"', '"fp4"'))
    with pytest.raises(UserVariantError, match=r"variants\.mine\.unit: must be one of 'ffma', .* not 'fp4'"):
        load_variants(find_launch_facts(tmp_path))
    (tmp_path / "attnbench.toml").write_text(table.replace('"tensor"', '"memory"'))  # would skip SUSPECT: refused
    with pytest.raises(UserVariantError, match=r"variants\.mine\.unit: must be one of .* not 'memory'; an attention "
                                               r"pass does O\(N\^2 d\) arithmetic"):
        load_variants(find_launch_facts(tmp_path))


@pytest.mark.parametrize("args", [
    ["list", "--no-resources"],
    ["run", "odd_17x48", "o.bin", "--variant", "cpu", "--reps", "1"],
    ["run", "odd_17x48", "o.bin", "--reps", "1"],  # the default variant
    ["run", "odd_17x48", "o.bin", "--variant", "bankfree"],  # another built-in: once run beside the file's claim
    ["compare", "--variants", "all", "--cases", "odd_17x48", "--no-save"],
    ["compare", "--variants", "ladder", "--cases", "odd_17x48", "--no-save"],
    ["sweep", "N", "--values", "64", "--variants", "cpu", "--no-save"],
    ["info", "--variant", "bankfree"],
])
def test_a_table_taking_a_built_in_name_is_refused_by_every_command_that_reads_the_file(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "attnbench.toml").write_text('[variants.cpu]\nsource = "mine.cu"\n')
    result = CliRunner().invoke(main, args)
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and said == (f"error: {tmp_path / 'attnbench.toml'}: variants.cpu: cpu is a built-in "
                                              "variant; choose another name"), (args, result.output)
    assert not (tmp_path / "o.bin").exists()


def test_launch_facts_that_are_not_utf8_text_are_one_line_naming_the_file(tmp_path):
    """An attnbench.toml of bytes that are not UTF-8 ended every command (`list` among them) in a UnicodeDecodeError
    traceback from tomllib."""
    (tmp_path / "attnbench.toml").write_bytes(b"\xff\xfe[variants.mine]\n")
    with pytest.raises(UserVariantError, match=r"attnbench.toml: not valid TOML \(it is not UTF-8 text\)$"):
        load(tmp_path)
