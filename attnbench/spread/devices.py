"""The devices a spread runs on: `--gpus all|0,1,...` read one way for compare, sweep and judge.

GPUs are counted one way, by nvidia-smi (a class of programs needs no pycuda), within the
CUDA_VISIBLE_DEVICES the user set: device i is the i-th GPU this process may see, as CUDA numbers
them. Without GPUs, ATTNBENCH_CPU_WORKERS=N stands N cpu workers in for them (tests and CI); a bad
value there is bad usage, like a bad --gpus.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from attnbench.errors import GpuUnavailable, UsageError

# N cpu workers stand in for GPUs (tests and CI without GPUs): `--gpus all` then means N workers.
CPU_WORKERS_ENV = "ATTNBENCH_CPU_WORKERS"
# A cpu worker that stands in for a GPU has this name where a GPU's name would be.
STAND_IN_NAME = "cpu worker (standing in for a GPU)"
# What a run without a GPU ran on, where a GPU's name would be.
NO_GPU_NAME = "no GPU (the host's CPU)"


@dataclass(frozen=True)
class Device:
    """Where a worker runs: a CUDA device index, or a cpu worker standing in for one (tests)."""

    index: int
    stand_in: bool = False

    @property
    def label(self) -> str:
        return f"cpu worker {self.index}" if self.stand_in else f"GPU {self.index}"


def parse_device_list(text: str, count: int | None) -> list[int]:
    """`all` or a comma list of indices (`0,1`), checked against the `count` devices present (with
    None, only the syntax is checked)."""
    text = text.strip().lower()
    if text != "all" and not re.fullmatch(r"\d+(\s*,\s*\d+)*", text):
        raise UsageError(f"--gpus {text!r}: write all, or a comma list of device indices such as 0,1")
    if count is None:
        return []
    if text == "all":
        return list(range(count))
    indices = list(dict.fromkeys(int(part) for part in text.split(",")))
    missing = [i for i in indices if i >= count]
    if missing:
        raise UsageError(f"--gpus {text}: device {missing[0]} does not exist; this machine has {count}, "
                         f"0..{count - 1}")
    return indices


def cpu_workers() -> int | None:
    """The cpu workers ATTNBENCH_CPU_WORKERS asks for; None when it is unset or empty."""
    text = os.environ.get(CPU_WORKERS_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"{CPU_WORKERS_ENV}={text!r}: give a number of cpu workers, 1 or more")
    most = max_cpu_workers()
    if int(text) > most:  # each is a process: 99999 were started one by one until the machine gave out
        raise UsageError(f"{CPU_WORKERS_ENV}={text!r}: at most {most} cpu workers here (4 a core; each is a process)")
    return int(text)


def max_cpu_workers() -> int:
    """The most cpu workers ATTNBENCH_CPU_WORKERS may ask for: 4 a core of this machine."""
    return 4 * (os.cpu_count() or 1)


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES would name each (nvidia-smi counts them)."""
    smi = shutil.which("nvidia-smi")
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60).stdout if smi else ""
    except (OSError, subprocess.SubprocessError):
        listed = ""
    count = sum(line.startswith("GPU ") for line in listed.splitlines())
    if count == 0:
        return []
    chosen = os.environ.get("CUDA_VISIBLE_DEVICES")
    if chosen is None:
        return [str(i) for i in range(count)]
    return [part.strip() for part in chosen.split(",") if part.strip()][:count]


def no_gpu_here() -> str | None:
    """Why the programs this process starts have no NVIDIA GPU to run on, or None when they have one. GPUs are
    counted as everywhere (`visible_gpus`: nvidia-smi, within CUDA_VISIBLE_DEVICES); without nvidia-smi, an
    NVIDIA device node (/dev/nvidia0, ...) says a GPU may be there, and the programs are given the benefit of it."""
    if shutil.which("nvidia-smi") is None:
        if glob.glob("/dev/nvidia[0-9]*"):
            return None
        return "no nvidia-smi and no /dev/nvidia* device"
    if not visible_gpus():
        chosen = os.environ.get("CUDA_VISIBLE_DEVICES")
        within = f" within CUDA_VISIBLE_DEVICES={chosen!r}" if chosen is not None else ""
        return f"nvidia-smi lists no GPU{within}"
    return None


def devices_for(spec: str) -> list[Device]:
    """The devices `--gpus all|0,1,...` names: this host's GPUs, or cpu workers standing in for them."""
    parse_device_list(spec, None)  # the syntax first: bad usage before a missing GPU
    stand_ins = cpu_workers()
    if stand_ins is not None:
        return [Device(i, stand_in=True) for i in parse_device_list(spec, stand_ins)]
    count = len(visible_gpus())
    if count == 0:
        raise GpuUnavailable("--gpus needs NVIDIA GPUs, and nvidia-smi lists none here")
    return [Device(i) for i in parse_device_list(spec, count)]


def cuda_visible(device: Device) -> str:
    """What CUDA_VISIBLE_DEVICES names `device` by, for a process that is to see it alone."""
    visible = visible_gpus()
    return visible[device.index] if device.index < len(visible) else str(device.index)
