"""Reading --gpus and ATTNBENCH_CPU_WORKERS one way, for compare, sweep and judge alike."""

from __future__ import annotations

import pytest

from attnbench.errors import GpuUnavailable, UsageError
from attnbench.spread import devices
from attnbench.spread.devices import CPU_WORKERS_ENV, Device, cuda_visible, devices_for, no_gpu_here, parse_device_list


def test_device_lists():
    assert parse_device_list("all", 3) == [0, 1, 2]
    assert parse_device_list("1, 0,1", 2) == [1, 0]
    with pytest.raises(UsageError, match="device 2 does not exist; this machine has 2"):
        parse_device_list("0,2", 2)
    with pytest.raises(UsageError, match="write all, or a comma list"):
        parse_device_list("gpu0", 2)


@pytest.mark.parametrize("value", ["two", "0", "-1", "1.5"])
def test_a_bad_number_of_cpu_workers_is_bad_usage(monkeypatch, value):
    monkeypatch.setenv(CPU_WORKERS_ENV, value)
    with pytest.raises(UsageError, match=f"{CPU_WORKERS_ENV}='{value}': give a number of cpu workers, 1 or more"):
        devices_for("all")


def test_more_cpu_workers_than_the_machine_can_hold_is_bad_usage_not_a_hang(monkeypatch):
    """ATTNBENCH_CPU_WORKERS=99999 started processes one by one until the timeout (a compare of one case)."""
    from attnbench.spread.devices import max_cpu_workers

    monkeypatch.setenv(CPU_WORKERS_ENV, "99999")
    with pytest.raises(UsageError, match=f"{CPU_WORKERS_ENV}='99999': at most {max_cpu_workers()} cpu workers here"):
        devices_for("all")
    monkeypatch.setenv(CPU_WORKERS_ENV, str(max_cpu_workers()))
    assert len(devices_for("all")) == max_cpu_workers()


def test_cpu_workers_stand_in_for_gpus(monkeypatch):
    monkeypatch.setenv(CPU_WORKERS_ENV, " 3 ")
    assert devices_for("all") == [Device(0, True), Device(1, True), Device(2, True)]
    assert devices_for("2,0") == [Device(2, True), Device(0, True)]
    monkeypatch.setenv(CPU_WORKERS_ENV, "")  # empty: unset
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(GpuUnavailable, match="nvidia-smi lists none"):
        devices_for("all")


@pytest.fixture
def four_gpus(monkeypatch, tmp_path):
    """An nvidia-smi that lists four GPUs."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + "".join(f"echo 'GPU {i}: H100 (UUID: GPU-{i})'\n" for i in range(4)))
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(CPU_WORKERS_ENV, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_gpus_are_counted_within_the_visible_ones(four_gpus, monkeypatch):
    assert devices_for("all") == [Device(i) for i in range(4)]
    assert cuda_visible(Device(3)) == "3"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert devices_for("all") == [Device(0), Device(1)]
    assert cuda_visible(Device(1)) == "3"  # the second GPU this process may see is the host's GPU 3
    with pytest.raises(UsageError, match="device 2 does not exist; this machine has 2"):
        devices_for("2")


def test_a_host_has_a_gpu_where_nvidia_smi_lists_one_within_the_visible_ones(four_gpus, monkeypatch):
    assert no_gpu_here() is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # CUDA programs see none of the four
    assert no_gpu_here() == "nvidia-smi lists no GPU within CUDA_VISIBLE_DEVICES=''"


def test_a_host_without_nvidia_smi_has_a_gpu_only_where_a_device_node_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(devices.glob, "glob", lambda pattern: [])
    assert no_gpu_here() == "no nvidia-smi and no /dev/nvidia* device"
    monkeypatch.setattr(devices.glob, "glob", lambda pattern: ["/dev/nvidia0"] if pattern == "/dev/nvidia[0-9]*" else [])
    assert no_gpu_here() is None  # a driver's node without its tool: a GPU may be there, so nothing is refused


def test_an_nvidia_smi_that_lists_no_gpu_says_so(monkeypatch, tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'No devices were found'\nexit 6\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert no_gpu_here() == "nvidia-smi lists no GPU"


def test_compare_and_judge_refuse_a_bad_number_of_cpu_workers_alike(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from attnbench.cli import main

    (tmp_path / "alice.c").write_text("int main(void) { return 0; }\n")
    monkeypatch.setenv(CPU_WORKERS_ENV, "many")
    runner = CliRunner()
    compare = runner.invoke(main, ["compare", "-v", "cpu", "-c", "odd_17x48", "--no-save", "--gpus", "all"])
    judge = runner.invoke(main, ["judge", str(tmp_path), "--cases", "odd_17x48", "--gpus", "all",
                                 "--results-dir", str(tmp_path / "out")])
    line = f"{CPU_WORKERS_ENV}='many': give a number of cpu workers, 1 or more"
    for result in (compare, judge):
        assert result.exit_code == 2 and line in result.output
        assert [text for text in result.output.splitlines() if text.startswith("error")] == [f"error: {line}"]
