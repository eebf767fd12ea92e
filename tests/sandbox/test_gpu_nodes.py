"""Which GPUs a box holds: only the nodes of the GPUs CUDA_VISIBLE_DEVICES names (a program can drop the variable)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from attnbench.sandbox import gpu_nodes
from attnbench.sandbox.gpu_nodes import GpuChoice, ListedGpu, chosen_gpus, device_minor, gpu_nodes as nodes_for

H200 = "NVIDIA H200"
GPUS = (ListedGpu(0, "GPU-aaaa-0000", H200, "00000000:17:00.0"), ListedGpu(1, "GPU-bbbb-1111", H200, "00000000:3D:00.0"),
        ListedGpu(2, "GPU-cccc-2222", H200, "00000000:9A:00.0"))


@pytest.fixture
def driver(tmp_path: Path) -> Path:
    """A /proc/driver/nvidia/gpus of three GPUs whose minors are not their indices (minor 0 is on the last bus)."""
    for bus, minor in (("0000:17:00.0", 2), ("0000:3d:00.0", 1), ("0000:9a:00.0", 0)):
        (tmp_path / bus).mkdir()
        (tmp_path / bus / "information").write_text(f"Model: \t\t {H200}\nIRQ:   \t\t 10\nDevice Minor: \t {minor}\n")
    return tmp_path


def test_the_minor_comes_from_the_drivers_own_folder_of_the_bus(driver):
    assert device_minor("00000000:3D:00.0", driver) == 1 and device_minor("00000000:17:00.0", driver) == 2
    assert device_minor("00000000:ff:00.0", driver) is None


def test_an_index_or_uuid_names_one_gpu_by_minor_and_uuid(driver):
    assert chosen_gpus("1", GPUS, None, driver) == GpuChoice(frozenset({1}), ("GPU-bbbb-1111",))
    assert chosen_gpus("0,GPU-cccc", GPUS, None, driver) == GpuChoice(frozenset({2, 0}), ("GPU-aaaa-0000", "GPU-cccc-2222"))


@pytest.mark.parametrize("visible", [None, "MIG-1234", "7", "GPU-zzz", "GPU-", ""])
def test_what_cannot_be_told_apart_for_certain_binds_every_gpu(driver, visible):
    assert chosen_gpus(visible, GPUS, None, driver) is None


def test_an_index_among_gpus_of_several_kinds_is_told_only_in_pci_order(driver):
    mixed = (GPUS[0], ListedGpu(1, "GPU-bbbb-1111", "NVIDIA H100", "00000000:3D:00.0"), GPUS[2])
    assert chosen_gpus("1", mixed, None, driver) is None  # CUDA's fastest-first order may not be nvidia-smi's
    assert chosen_gpus("1", mixed, "PCI_BUS_ID", driver) == GpuChoice(frozenset({1}), ("GPU-bbbb-1111",))
    assert chosen_gpus("GPU-bbbb", mixed, None, driver) == GpuChoice(frozenset({1}), ("GPU-bbbb-1111",))


def test_only_the_chosen_gpus_own_nodes_are_bound_beside_the_drivers_shared_ones(tmp_path, monkeypatch):
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"):
        (dev / name).touch()
    monkeypatch.setattr(gpu_nodes, "GPU_NODE_PATTERNS", (f"{dev}/nvidia*",))
    names = {Path(node).name for node in nodes_for(GpuChoice(frozenset({1}), ("GPU-bbbb-1111",)))}
    assert names == {"nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}
    assert len(nodes_for(None)) == 7


@pytest.mark.gpu
def test_a_program_that_drops_cuda_visible_devices_sees_only_the_gpu_its_box_was_given(monkeypatch, tmp_path):
    """On a node of two GPUs or more: a run given GPU 1 (as a --gpus pool's worker gives it) unsets
    CUDA_VISIBLE_DEVICES and still finds one GPU, GPU 1, by nvidia-smi and by the CUDA runtime."""
    from attnbench.sandbox.process import run_process
    from attnbench.sandbox.room import Sandbox, SandboxSettings, find_bwrap

    gpus = gpu_nodes.listed_gpus()
    if len(gpus) < 2 or find_bwrap()[0] is None or shutil.which("nvcc") is None:
        pytest.skip("needs two GPUs or more, bwrap and nvcc")
    source = tmp_path / "count.cu"
    source.write_text('#include <cstdio>\nint main() { int n = 0; cudaGetDeviceCount(&n); char bus[32] = "";\n'
                      'if (n > 0) cudaDeviceGetPCIBusId(bus, sizeof bus, 0); printf("%d %s\\n", n, bus); }\n')
    subprocess.run(["nvcc", "-o", str(tmp_path / "count"), str(source)], check=True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    sandbox = Sandbox.open(tmp_path / "count", SandboxSettings("required"))
    try:
        case = sandbox.prepare("c", None)
        script = (f"{sandbox.program_path()}; nvidia-smi -L | wc -l; unset CUDA_VISIBLE_DEVICES; "
                  f"{sandbox.program_path()}; nvidia-smi -L")
        outcome = run_process(sandbox.command(["/bin/sh", "-c", script], case), case.folder, 60, user=sandbox.user,
                              env=sandbox.case_env(case))
        sandbox.finish(case)
    finally:
        sandbox.close()
    lines = outcome.stdout_tail.strip().splitlines()
    bus = gpus[1].bus_id.lower()[-12:]  # cudaDeviceGetPCIBusId's 0000:3d:00.0 against nvidia-smi's 00000000:3D:00.0
    assert lines[0].lower().endswith(bus) and lines[0].startswith("1 "), outcome.stdout_tail
    assert lines[1] == "1" and lines[2].lower().endswith(bus) and lines[2].startswith("1 "), outcome.stdout_tail
    assert len(lines) == 4 and gpus[1].uuid in lines[3], outcome.stdout_tail
