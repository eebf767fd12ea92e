"""attnbench.explain.geometry and `attnbench info`: launch geometry, occupancy and the report, no GPU needed."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from attnbench.cases.testcase import Shape
from attnbench.cli import main
from attnbench.errors import UnknownName
from attnbench.kernels.catalogue import get_variant
from attnbench.explain.geometry import GPU_MODELS, gpu_model, kernel_reports, launch_geometry, occupancy
from attnbench.kernels.nvcc import KernelResources

NVCC = shutil.which("nvcc")
H = GPU_MODELS["sm_90"]


def test_models_cover_the_course_architectures():
    assert set(GPU_MODELS) == {"sm_61", "sm_80", "sm_86", "sm_89", "sm_90"}
    assert gpu_model("sm_90a") is H
    assert H.sm_count == 132 and GPU_MODELS["sm_61"].sm_count == 20
    with pytest.raises(UnknownName, match="sm_61, sm_80"):
        gpu_model("sm_75")


@pytest.mark.parametrize("threads, regs, smem, blocks, limiter", [
    # qreg at d = 32 on sm_90: 49 KB with the reserved 1 KB -> 4 of 228 KB; 121 -> 128 regs also allow 4
    (128, 121, 49152, 4, "shared memory and registers"),
    (128, 96, 49152, 4, "shared memory"),
    (128, 128, 32768, 4, "registers"),  # qreg at d = 64: 128 regs -> 4 warps per sub-partition -> 4 blocks
    (128, 32, 0, 16, "registers and threads"),  # 32 regs fill the register file exactly at 64 warps
    (128, 24, 0, 16, "threads"),  # 64 warps / 4 warps per block
    (32, 16, 0, 32, "blocks"),  # tiny blocks: the 32-blocks-per-SM limit
    (1024, 255, 0, 0, "does not fit"),  # 255 regs x 1024 threads is more than the register file
    (128, 32, 240 * 1024, 0, "does not fit"),  # more shared memory than a block may have
])
def test_occupancy_on_hopper(threads, regs, smem, blocks, limiter):
    occ = occupancy(H, threads, regs, smem)
    assert (occ.blocks_per_sm, occ.limiter) == (blocks, limiter)
    assert occ.warps_per_sm == blocks * -(-threads // 32)
    assert occ.fraction == occ.warps_per_sm / 64


def test_register_allocation_granularity():
    # 33 registers round up to 40 per thread (1280 per warp, units of 256): 12 warps per sub-partition
    occ = occupancy(H, 256, 33, 0)
    assert occ.by_limit["registers"] == (16384 // 1280) * 4 // 8


def test_fewer_threads_per_sm_on_ada_and_no_reserved_smem_on_pascal():
    assert occupancy(GPU_MODELS["sm_89"], 1024, 32, 0).blocks_per_sm == 1  # 1536 threads per SM
    pascal = GPU_MODELS["sm_61"]
    assert occupancy(pascal, 128, 32, 48 * 1024).by_limit["shared memory"] == 2  # 96 KB / 48 KB, nothing reserved
    assert occupancy(H, 128, 32, 48 * 1024).by_limit["shared memory"] == 4  # (48 + 1) KB each in 228 KB


def test_launch_geometry_and_waves():
    (qreg,) = launch_geometry(get_variant("qreg"), Shape(4, 32768, 32))
    assert (qreg.grid, qreg.block, qreg.dynamic_smem, qreg.launches_per_pass) == ((256, 4, 1), (128, 1, 1), 0, 1)
    assert qreg.waves(H, 4) == pytest.approx(1024 / (4 * 132))
    assert qreg.waves(H, 0) is None
    (tf32,) = launch_geometry(get_variant("tf32x3"), Shape(2, 32768, 64))
    assert tf32.dynamic_smem == 69_632 and tf32.grid == (512, 2, 1)
    kernels = launch_geometry(get_variant("kernels"), Shape(2, 100, 32))
    assert [k.launches_per_pass for k in kernels] == [4] * 5  # one launch per K/V tile of 32, five kernels


def test_kernel_reports_join_ptxas_figures():
    variant = get_variant("qreg")
    resources = {"flash_qreg": KernelResources("flash_qreg", 121, 49152, 0, 0, 0)}
    (report,) = kernel_reports(variant, Shape(4, 32768, 32), H, resources)
    assert report.smem_per_block == 49152 and report.spills == 0
    assert report.occupancy.blocks_per_sm == 4
    (bare,) = kernel_reports(variant, Shape(4, 32768, 32), H, {})
    assert bare.registers is None and bare.occupancy.limiter == "threads"


def test_info_json_for_a_given_shape():
    result = CliRunner().invoke(main, ["info", "-v", "tf32x3", "--shape", "2,32768,64", "--arch", "sm_80", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["gpu_model"] == "A100" and data["defines"] == {"HEAD_DIM": 64}
    (kernel,) = data["kernels"]
    assert kernel["grid"] == [512, 2, 1] and kernel["dynamic_smem"] == 69_632
    if NVCC:
        assert kernel["registers"] > 0 and kernel["spill_bytes"] == 0
        assert kernel["smem_per_block"] == 69_632 + kernel["static_smem"]
        assert 0 < kernel["occupancy"] <= 1
    else:
        assert kernel["registers"] is None and data["notes"]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_info_table_for_a_suite_case():
    result = CliRunner().invoke(main, ["info", "-v", "qreg", "--case", "t29"])
    assert result.exit_code == 0, result.output
    for text in ("flash_qreg", "(256, 4, 1)", "theoretical occupancy", "25.0% (16/64 warps)", "HEAD_DIM=32", "1.94"):
        assert text in result.output


@pytest.mark.parametrize("args, message", [
    (["info", "-v", "qreg", "--shape", "1,64,48"], "qreg needs d in {32, 64}"),
    (["info", "-v", "qreg", "--arch", "sm_75"], "no GPU model for 'sm_75'"),
    (["info", "-v", "cpu"], "runs no kernel"),
    (["info", "-v", "nope"], "no variant named 'nope'"),
    (["info", "-v", "qreg", "--shape", "1,2"], "is not B,N,d"),
])
def test_info_refusals_exit_2(args, message):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert message in result.output


def test_launch_geometry_lists_only_the_launches_that_apply():
    """wgmma3x on t11 runs its short path alone: one launch of ceil(B / 8) blocks, no pre-pass."""
    (short,) = launch_geometry(get_variant("wgmma3x"), Shape(13600, 128, 32))
    assert (short.kernel, short.grid, short.block, short.launches_per_pass) == ("wgmma3x_short", (1700, 1, 1), (384, 1, 1), 1)
    occ = occupancy(gpu_model("sm_90"), 384, 168, short.dynamic_smem)
    assert occ.blocks_per_sm == 1
    assert [g.kernel for g in launch_geometry(get_variant("wgmma3x"), Shape(2, 2048, 32))] == ["wgmma3x_prep", "wgmma3x_fwd"]
