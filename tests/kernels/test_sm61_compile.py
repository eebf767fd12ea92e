"""Every variant that can run on the course's GTX 1080 (sm_61) compiles for it with zero spill bytes.

CUDA 13's nvcc no longer builds for sm_61, so this check compiles with CUDA 12's NVRTC (the pip wheel
nvidia-cuda-nvrtc-cu12, the sm61 extra: 217 MB, so not in the test extra): the same front end and ptxas that CUDA 12's nvcc runs, asked
for an sm_61 cubin and ptxas's report. Skipped where the wheel is not installed (not x86-64 Linux).
NVRTC is called through ctypes: its five C functions are all this needs, and no Python binding of it
that is kept up ships CUDA 12's library for sm_61.
"""

import ctypes
import importlib.util
import re
from pathlib import Path

import pytest

from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import get_variant, gpu_variants
from attnbench.kernels.nvcc import compile_options, include_dirs, source_file
from tests.kernels.test_cuda_compile import shapes_with_distinct_defines

GTX_1080 = (6, 1)


def nvrtc_library() -> ctypes.CDLL | None:
    spec = importlib.util.find_spec("nvidia.cuda_nvrtc") if importlib.util.find_spec("nvidia") else None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "lib" / "libnvrtc.so.12"
    return ctypes.CDLL(str(path)) if path.is_file() else None


NVRTC = nvrtc_library()
needs_nvrtc = pytest.mark.skipif(NVRTC is None, reason="CUDA 12's NVRTC is not installed: "
                                 "`pip install -e '.[sm61]'` adds it (217 MB; CI does)")


def nvrtc_compile(source: Path, options: list[str]) -> tuple[bool, str]:
    """Compile `source` with NVRTC; whether it built, and its log (ptxas's report included)."""
    program = ctypes.c_void_p()
    created = NVRTC.nvrtcCreateProgram(ctypes.byref(program), source.read_bytes(), str(source).encode(), 0, None, None)
    assert created == 0, f"nvrtcCreateProgram returned {created}"
    encoded = [option.encode() for option in options]
    status = NVRTC.nvrtcCompileProgram(program, len(encoded), (ctypes.c_char_p * len(encoded))(*encoded))
    size = ctypes.c_size_t()
    NVRTC.nvrtcGetProgramLogSize(program, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    NVRTC.nvrtcGetProgramLog(program, log)
    NVRTC.nvrtcDestroyProgram(ctypes.byref(program))
    return status == 0, log.value.decode(errors="replace")


def sm61_options(variant, shape: Shape) -> list[str]:
    # NVRTC always optimises and has no -O flag; every other option is nvcc's and NVRTC's alike
    options = [option for option in compile_options(variant, shape) if not option.startswith("-O")]
    return [*options, "-arch=sm_61", "-Xptxas=-v", *(f"-I{folder}" for folder in include_dirs(variant))]


def builds_for_the_gtx_1080():
    """Every built-in variant and flavour that does not refuse an sm_61 GPU."""
    found = []
    for variant in gpu_variants():
        for build in (variant, *(variant.flavoured(name) for name in variant.flavours)):
            if build.runs_on(GTX_1080):
                found.append(build)
    return found


def test_the_cuda_core_path_is_offered_on_the_gtx_1080():
    names = {variant.name for variant in builds_for_the_gtx_1080()}
    assert {"fa2simt", "qreg", "qreg:fastmath", "gemm", "naive", "online"} <= names
    assert not names & {"tf32x3", "gemmtc", "wgmma3x", "gemmwg3x"}


@needs_nvrtc
@pytest.mark.parametrize("variant", builds_for_the_gtx_1080(), ids=lambda v: v.name)
def test_compiles_for_sm_61_without_spills(variant):
    for shape in shapes_with_distinct_defines(variant):
        built, log = nvrtc_compile(source_file(variant), sm61_options(variant, shape))
        assert built, f"{variant.name} {shape}\n{log}"
        assert "for 'sm_61'" in log, log
        spills = [int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", log)]
        assert spills and not any(spills), f"{variant.name} {shape} spills on sm_61:\n{log}"


@needs_nvrtc
def test_the_check_sees_a_compile_error():
    """The check above fails on a kernel that does not build for sm_61: a tensor-core kernel."""
    tf32x3 = get_variant("tf32x3")
    built, log = nvrtc_compile(source_file(tf32x3), sm61_options(tf32x3, Shape(1, 128, 32)))
    assert not built and "error" in log
