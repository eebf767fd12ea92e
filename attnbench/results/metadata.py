"""What a saved result records about where and how it was measured.

The GPU's facts (name, SMs, clocks, L2, driver and CUDA versions) come from the open `Gpu`; current
clocks, power and temperature from NVML when pynvml is present, else from nvidia-smi when it is on
the PATH; the software from package versions; the code from `git rev-parse`. Anything that cannot
be read is recorded as null, never guessed.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import shutil
import subprocess
from typing import Any

from attnbench.cases.suite import SUITE_VERSION
from attnbench.locations import project_root_for_git
from attnbench.results.described_device import DescribedDevice
from attnbench.version import __version__


def _run(command: list[str], timeout: float = 10.0) -> str | None:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=project_root_for_git())
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def git_state() -> dict[str, Any]:
    """The commit of the checkout and whether tracked files differ from it.

    A copy of the tree shipped to a benchmark machine names its commit through ATTNBENCH_GIT_COMMIT,
    which wins over whatever git finds there (the copy may carry a stale .git of its own).
    """
    if os.environ.get("ATTNBENCH_GIT_COMMIT"):
        return {"commit": os.environ["ATTNBENCH_GIT_COMMIT"], "dirty": None, "source": "ATTNBENCH_GIT_COMMIT"}
    commit = _run(["git", "rev-parse", "HEAD"])
    dirty = None
    if commit is not None:
        status = _run(["git", "status", "--porcelain", "--untracked-files=no"])
        dirty = bool(status) if status is not None else None
    return {"commit": commit, "dirty": dirty}


def nvcc_version() -> str | None:
    """The release of the nvcc that compiles the kernels, e.g. '13.0, V13.0.48'."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    text = _run([nvcc, "--version"])
    match = re.search(r"release ([^\n]+)", text or "")
    return match.group(1).strip() if match else None


def _package_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def live_gpu_state(index: int) -> dict[str, Any] | None:
    """Current and maximum clocks, power and temperature: NVML first, nvidia-smi second."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        return {
            "source": "nvml",
            "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "max_sm_clock_mhz": pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "memory_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
            "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0,
            "temperature_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
        }
    except Exception:
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    fields = ("clocks.sm", "clocks.max.sm", "clocks.mem", "power.draw", "power.limit", "temperature.gpu")
    text = _run([smi, f"--id={index}", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
    if not text:
        return None
    values = [v.strip() for v in text.splitlines()[0].split(",")]

    def number(v: str) -> float | None:
        try:
            return float(v)
        except ValueError:
            return None

    names = ("sm_clock_mhz", "max_sm_clock_mhz", "memory_clock_mhz", "power_w", "power_limit_w", "temperature_c")
    return {"source": "nvidia-smi", **{name: number(v) for name, v in zip(names, values)}}


def torch_versions_of(torch: Any) -> dict[str, Any]:
    """What a result's metadata records of the PyTorch that ran."""
    return {"torch_version": torch.__version__, "torch_cuda_version": torch.version.cuda}


def collect(gpu: DescribedDevice | None = None, with_torch: bool = False, command: str | None = None,
            ceilings: dict[str, Any] | None = None, torch_versions: dict[str, Any] | None = None) -> dict[str, Any]:
    """The metadata block of a saved result; `command` is the command line that made it. With
    `torch_versions` (what the processes that ran the peer reported), PyTorch is not imported here."""
    data: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "attnbench_version": __version__,
        "suite_version": SUITE_VERSION,  # 3: the course's real shapes (cases.suite's history)
        "python_version": platform.python_version(),
        "numpy_version": _package_version("numpy"),
        "pycuda_version": _package_version("pycuda"),
        "torch_version": None,
        "nvcc_version": nvcc_version() if gpu is not None else None,
        "platform": f"{platform.system()} {platform.machine()}",
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "git": git_state(),
        "gpu": None,
        "gpu_state": None,
    }
    if with_torch and torch_versions:
        data.update(torch_versions)
    elif with_torch:
        try:
            import torch

            data.update(torch_versions_of(torch))
        except ImportError:
            pass
    if gpu is not None:
        data["gpu"] = gpu.facts()
        data["gpu_state"] = live_gpu_state(gpu.index)
        data["ceilings"] = ceilings  # `attnbench ceilings`, when measured on this GPU and driver
    return data


def gpu_label(metadata: dict[str, Any]) -> str:
    """The device a result was measured on, in words ('NVIDIA H200', or 'CPU only')."""
    gpu = metadata.get("gpu") or {}
    return gpu.get("name") or "CPU only"


def gpu_short_name(metadata: dict[str, Any]) -> str:
    """A file-name-friendly device name: 'NVIDIA H200' -> 'h200'; no GPU -> 'cpu'."""
    gpu = metadata.get("gpu") or {}
    name = gpu.get("name")
    if not name:
        return "cpu"
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w and w.lower() not in ("nvidia", "geforce", "tesla")]
    return "-".join(words).lower() or "gpu"
