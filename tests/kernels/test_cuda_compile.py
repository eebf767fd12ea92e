"""Every cuda/*.cu compiles with nvcc for sm_80 and sm_90 (or the one architecture a variant is made
for), for each define set its entry can produce, with zero spill bytes (skipped where nvcc is absent).
The command line is attnbench's own (kernels.nvcc), the one `list` and `info` use."""

import re
import shutil
import subprocess

import pytest

from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import gpu_variants
from attnbench.kernels.nvcc import nvcc_command
from attnbench.locations import kernel_dir

NVCC = shutil.which("nvcc")
SAMPLE_SHAPES = [Shape(2, n, d) for n in (17, 128, 4096) for d in (1, 16, 32, 48, 64, 80, 128, 512, 2048, 8192)]

CUDA_DIR = kernel_dir()


def shapes_with_distinct_defines(variant):
    seen, shapes = [], []
    for shape in SAMPLE_SHAPES:
        if variant.refusal(shape) is None:
            defines = variant.defines(shape)
            if defines not in seen:
                seen.append(defines)
                shapes.append(shape)
    return shapes


def test_every_kernel_file_is_used_by_a_variant():
    # `attnbench ceilings` (tested in test_ceilings) and the fresh samples' own kernels (below)
    used = {v.source for v in gpu_variants()} | {"ceilings.cu"} | set(SUPPORT_KERNELS)
    assert {p.name for p in CUDA_DIR.glob("*.cu")} == used


# the fresh samples' generator and checks on the device (tests/backends/test_gpu_fresh.py); the judge's float64
# reference (tests/cases/test_gpu_reference.py)
SUPPORT_KERNELS = ("fresh_samples.cu", "reference_float64.cu")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", SUPPORT_KERNELS)
def test_the_support_kernels_compile_without_spills(name, arch, tmp_path):
    """As the backend builds them (-O3, no fast math: the check's NaN and Inf tests must hold)."""
    command = [NVCC, f"-arch={arch}", "-O3", "-Xptxas", "-v", "-cubin", "-o", str(tmp_path / "k.cubin"),
               str(CUDA_DIR / name)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", result.stderr)]
    assert spills and not any(spills), result.stderr


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("variant", gpu_variants(), ids=lambda v: v.name)
def test_compiles_without_spills(variant, arch, tmp_path):
    if variant.arch is not None and arch != "sm_90":
        pytest.skip(f"{variant.name} is built for {variant.arch} only")
    for shape in shapes_with_distinct_defines(variant):
        command = nvcc_command(variant, shape, arch, tmp_path / "k.cubin")
        result = subprocess.run(command, capture_output=True, text=True)
        assert result.returncode == 0, f"{variant.name} {shape}\n{result.stderr}"
        spills = [int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", result.stderr)]
        assert spills and not any(spills), f"{variant.name} {variant.arch or arch} {shape} spills:\n{result.stderr}"


def test_the_sample_shapes_build_every_gemmtc_tile():
    """gemmtc's kernels each take a 64 or a 128 tile: the compile check above must meet all four."""
    from attnbench.kernels.catalogue import get_variant

    sets = [get_variant("gemmtc").defines(shape) for shape in shapes_with_distinct_defines(get_variant("gemmtc"))]
    assert {s["QK_TILE"] for s in sets} == {64, 128} and {s["PV_TILE"] for s in sets} == {64, 128}


CUOBJDUMP = shutil.which("cuobjdump")
LADDER_004_STEPS = ("float4", "restructure", "coalesced", "reglm", "bankfree", "qreg")


@pytest.mark.skipif(NVCC is None or CUOBJDUMP is None, reason="nvcc or cuobjdump is not installed")
@pytest.mark.parametrize("name", LADDER_004_STEPS)
@pytest.mark.parametrize("d", [32, 64])
def test_ladder_004_weights_take_one_ex2_each(tmp_path, name, d):
    """The softmax weights of report 004's steps cost one MUFU.EX2 each, as the report's __expf: no
    exp2f denormal range test (FSETP against -126) per weight, only for the two rescale factors a tile."""
    variant = next(v for v in gpu_variants() if v.name == name)
    cubin = tmp_path / "k.cubin"
    subprocess.run(nvcc_command(variant, Shape(1, 1024, d), "sm_90", cubin), check=True, capture_output=True)
    sass = subprocess.run([CUOBJDUMP, "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
    range_tests = len(re.findall(r"FSETP\.GEU\.AND .*-126", sass))
    # at least 8: every step unrolls its weight loop by 8 or more, so the weights' EX2s are in the SASS
    assert sass.count("MUFU.EX2") >= 8 and range_tests <= 2, (sass.count("MUFU.EX2"), range_tests)
