"""A CUDA program where no NVIDIA GPU is: not judged, since every run of it could only fail, and the failure
would be the host's, not the program's ("CUDA driver version is insufficient", or an output of zeros left by a
kernel that never launched).

A CUDA program is known by the program itself, whatever built it (nvcc, a Makefile, or nobody: an executable
handed in): CUDA device code in it (nvcc's `.nv_fatbin` section), the CUDA runtime or driver or a CUDA library
among the shared libraries it needs (`libcudart.so.13`, `libcuda.so.1`), a CUDA call among the symbols it takes
from them, or the CUDA runtime linked into it (nvcc's default, `-cudart static`, which opens `libcuda.so.1` by
name). A C program has none of them, so the C stand-ins the tests and a laptop judge are judged as ever. Whether
the host has a GPU is asked once, where the runs are (`spread.devices.no_gpu_here`); over Slurm the runs are on
nodes the judge's host cannot see, so nothing is refused there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from attnbench.errors import GpuUnavailable
from attnbench.spread.devices import no_gpu_here

NOT_JUDGED_HERE = "no NVIDIA GPU here"
DEVICE_CODE_SECTIONS = (".nv_fatbin", ".nvFatBinSegment", "__nv_module_id")  # what nvcc adds to a host program
_CUDA_LIBRARY = re.compile(r"lib(cuda|cudart|cublas\w*|cufft\w*|curand|cusparse|cusolver\w*|cudnn\w*|nccl)\.so")
_CUDA_CALL = re.compile(r"(cuda|cu|__cuda)[A-Z]\w*")  # cudaMalloc, cuLaunchKernel, __cudaRegisterFatBinary
_STATIC_RUNTIME = b"libcuda.so.1\0"  # the linked-in runtime opens the driver by this name


def cuda_evidence(program: Path) -> str | None:
    """What shows `program` is a CUDA program ("it holds CUDA device code (.nv_fatbin)"), or None: not an ELF
    file, or nothing of CUDA in it."""
    from elftools.elf.dynamic import DynamicSection  # read only where no GPU is: a GPU host never needs it
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    try:
        with open(program, "rb") as file:
            elf = ELFFile(file)
            for name in DEVICE_CODE_SECTIONS:
                if elf.get_section_by_name(name) is not None:
                    return f"it holds CUDA device code, a {name} section"
            dynamic = elf.get_section_by_name(".dynamic")
            if isinstance(dynamic, DynamicSection):
                for tag in dynamic.iter_tags("DT_NEEDED"):
                    if _CUDA_LIBRARY.match(tag.needed):
                        return f"it needs {tag.needed}"
            symbols = elf.get_section_by_name(".dynsym")
            if isinstance(symbols, SymbolTableSection):
                for symbol in symbols.iter_symbols():
                    if symbol["st_shndx"] == "SHN_UNDEF" and _CUDA_CALL.fullmatch(symbol.name):
                        return f"it calls {symbol.name}"
            rodata = elf.get_section_by_name(".rodata")
            if rodata is not None and _STATIC_RUNTIME in rodata.data():
                return "the CUDA runtime is linked into it"
    except Exception:  # noqa: BLE001 - a submission's file may be any bytes: what is no readable ELF shows nothing
        return None
    return None


@dataclass(frozen=True)
class NoGpuHere:
    """A class's CUDA programs whose runs would be on a host without an NVIDIA GPU: why it has none (`absent`),
    and what shows each program is one (name -> evidence)."""

    absent: str
    evidence: dict[str, str]

    @property
    def why(self) -> str:
        return f"{NOT_JUDGED_HERE} ({self.absent})"

    def reason(self, name: str) -> str:
        """The row's reason: the host's, then the program's."""
        return f"{self.why}; a CUDA program: {self.evidence[name]}"


def not_judged_here(programs: Mapping[str, Path]) -> NoGpuHere | None:
    """The CUDA programs among `programs` (name -> program), when their runs are on this host and it has no NVIDIA
    GPU; None when it has one, or none of them is a CUDA program."""
    absent = no_gpu_here()
    if absent is None:
        return None
    found = {name: cuda_evidence(program) for name, program in programs.items()}
    evidence = {name: why for name, why in found.items() if why}
    return NoGpuHere(absent, evidence) if evidence else None


def refuse_without_gpu(shown: str, program: Path | None = None) -> None:
    """One program run on this host: GpuUnavailable (exit 3), before any run, when it is a CUDA program
    (`program` None: a .cu file, which nvcc builds) and this host has no NVIDIA GPU."""
    absent = no_gpu_here()
    if absent is None:
        return
    evidence = "a .cu file, built by nvcc" if program is None else cuda_evidence(program)
    if evidence:
        raise GpuUnavailable(f"{shown}: not judged: a CUDA program ({evidence}) and {NOT_JUDGED_HERE} ({absent}): "
                             "every run could only fail; judge it on a machine with one, or run it there with "
                             "--launcher")
