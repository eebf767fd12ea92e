"""Which GPUs a box holds: the device nodes of the GPUs CUDA_VISIBLE_DEVICES names, not every GPU of the host.

CUDA_VISIBLE_DEVICES is a request a program may drop: with every /dev/nvidiaN bound, a run on a `--gpus`
pool's worker unset it and saw every GPU of the node, so it could run kernels on, or fill the memory of,
the GPU where another worker was timing a rival or making its float64 references (one failure sends every
later reference of that worker to the CPU) (red team). The box now holds only the nodes of the GPUs it is
given, as a container runtime binds them (nvidia-container-toolkit does the same), and the driver shows a
program no GPU whose node it cannot open. Inside, the GPUs are then numbered from 0, so the box names
them by UUID in CUDA_VISIBLE_DEVICES. Where the GPUs cannot be told apart for certain (CUDA_VISIBLE_DEVICES
unset, a MIG instance, no nvidia-smi, an index where CUDA's order may differ from nvidia-smi's), every node
is bound, as before.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

GPU_NODE_PATTERNS = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/dri")
DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")  # one folder per GPU, named by its PCI bus id
_ONE_GPU_NODE = re.compile(r"nvidia(\d+)")  # /dev/nvidiaN, one GPU's own node


@dataclass(frozen=True)
class ListedGpu:
    """A GPU as nvidia-smi lists it."""

    index: int
    uuid: str
    name: str
    bus_id: str


@dataclass(frozen=True)
class GpuChoice:
    """The GPUs a box holds: their device minors (/dev/nvidiaN) and their UUIDs, in CUDA_VISIBLE_DEVICES' order."""

    minors: frozenset[int]
    uuids: tuple[str, ...]


def listed_gpus() -> tuple[ListedGpu, ...]:
    """The host's GPUs by nvidia-smi (every one, whatever CUDA_VISIBLE_DEVICES says); none without it."""
    return _listed(shutil.which("nvidia-smi"))


@functools.lru_cache(maxsize=4)
def _listed(smi: str | None) -> tuple[ListedGpu, ...]:
    if smi is None:
        return ()
    try:
        found = subprocess.run([smi, "--query-gpu=index,uuid,name,pci.bus_id", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ()
    gpus = []
    for line in found.stdout.splitlines() if found.returncode == 0 else []:
        parts = [part.strip() for part in line.split(",")]
        if len(parts) == 4 and parts[0].isdigit():
            gpus.append(ListedGpu(int(parts[0]), parts[1], parts[2], parts[3]))
    return tuple(gpus)


def device_minor(bus_id: str, driver_gpus: Path | None = None) -> int | None:
    """The minor number of the GPU at this PCI bus id (nvidia-smi's 00000000:17:00.0), from the driver's own
    /proc/driver/nvidia/gpus/0000:17:00.0/information; None where the driver does not say."""
    domain, _, rest = bus_id.lower().partition(":")
    try:
        text = ((driver_gpus or DRIVER_GPUS) / f"{domain[-4:]}:{rest}" / "information").read_text()
    except OSError:
        return None
    found = re.search(r"^Device Minor:\s*(\d+)\s*$", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def chosen_gpus(visible: str | None, gpus: tuple[ListedGpu, ...], order: str | None = None,
                driver_gpus: Path | None = None) -> GpuChoice | None:
    """The GPUs `visible` (CUDA_VISIBLE_DEVICES) names among `gpus`, or None where that is not certain: then
    every node is bound. An index is nvidia-smi's (PCI order) only where CUDA numbers the same way:
    CUDA_DEVICE_ORDER=PCI_BUS_ID, or GPUs all of one name (CUDA's fastest-first order ties by PCI bus)."""
    if visible is None or not gpus:
        return None
    same_order = order == "PCI_BUS_ID" or len({gpu.name for gpu in gpus}) == 1
    chosen: list[ListedGpu] = []
    for entry in (part.strip() for part in visible.split(",")):
        if entry.isdigit() and same_order:
            named = [gpu for gpu in gpus if gpu.index == int(entry)]
        elif entry.startswith("GPU-"):  # CUDA takes a UUID's unique prefix
            named = [gpu for gpu in gpus if gpu.uuid.startswith(entry)]
        else:  # MIG-..., an index in another order, or CUDA's end of the list: not told apart here
            return None
        if len(named) != 1:
            return None
        chosen.append(named[0])
    minors = [device_minor(gpu.bus_id, driver_gpus) for gpu in chosen]
    if not chosen or None in minors:
        return None
    return GpuChoice(frozenset(m for m in minors if m is not None), tuple(gpu.uuid for gpu in chosen))


def visible_choice() -> GpuChoice | None:
    """The GPUs this process's CUDA_VISIBLE_DEVICES names (`chosen_gpus`), or None: every node."""
    return chosen_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"), listed_gpus(), os.environ.get("CUDA_DEVICE_ORDER"))


def gpu_nodes(choice: GpuChoice | None) -> list[str]:
    """The GPU device nodes a box binds: the driver's shared ones (nvidiactl, nvidia-uvm, ...) and /dev/dri, and
    of the per-GPU /dev/nvidiaN those of `choice` only (all of them without one)."""
    nodes = [node for pattern in GPU_NODE_PATTERNS for node in sorted(glob.glob(pattern))]
    if choice is None:
        return nodes
    return [node for node in nodes
            if (one := _ONE_GPU_NODE.fullmatch(os.path.basename(node))) is None or int(one.group(1)) in choice.minors]
