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
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Mapping

from attnbench.errors import GpuUnavailable
from attnbench.spread.devices import no_gpu_here

NOT_JUDGED_HERE = "no NVIDIA GPU here"
DEVICE_CODE_SECTIONS = (".nv_fatbin", ".nvFatBinSegment", "__nv_module_id")  # what nvcc adds to a host program
_CUDA_LIBRARY = re.compile(r"lib(cuda|cudart|cublas\w*|cufft\w*|curand|cusparse|cusolver\w*|cudnn\w*|nccl)\.so")
_CUDA_CALL = re.compile(r"(cuda|cu|__cuda)[A-Z]\w*")  # cudaMalloc, cuLaunchKernel, __cudaRegisterFatBinary
_STATIC_RUNTIME = b"libcuda.so.1\0"  # the linked-in runtime opens the driver by this name


# A submission's ELF is read by hand, every read bounded: pyelftools reads each name to its NUL however far, and
# a hw4 whose 65,536 DT_NEEDED tags each named one 61 MB string without a NUL held a class's judge for hours
# before its first run (red team 25). What a real program has is far below every cap.
_MOST_SECTIONS = 4096
_MOST_TAGS = 4096
_MOST_SYMBOLS = 1 << 16
_NAME_BYTES = 256
_TABLE_BYTES = 16 << 20  # a string table read at most
_RODATA_BYTES = 64 << 20  # as a program may be (--max-program-mib)
_SHN_UNDEF, _DT_NULL, _DT_NEEDED = 0, 0, 1


class _Elf:
    """The few parts of an ELF file `cuda_evidence` reads: its sections by name, their bytes, names in a table."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        ident = file.read(64)
        if len(ident) < 52 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise ValueError("no ELF file")
        self.wide = ident[4] == 2
        self.order = "<" if ident[5] == 1 else ">"
        if self.wide:
            shoff = struct.unpack_from(self.order + "Q", ident, 0x28)[0]
            shentsize, shnum, shstrndx = struct.unpack_from(self.order + "HHH", ident, 0x3A)
        else:
            shoff = struct.unpack_from(self.order + "I", ident, 0x20)[0]
            shentsize, shnum, shstrndx = struct.unpack_from(self.order + "HHH", ident, 0x2E)
        layout = "IIQQQQIIQQ" if self.wide else "IIIIIIIIII"
        size = struct.calcsize(self.order + layout)
        if shentsize < size:
            raise ValueError("no section table")
        file.seek(shoff)
        table = file.read(shentsize * min(shnum, _MOST_SECTIONS))
        self.sections = [struct.unpack_from(self.order + layout, table, at)  # name, type, flags, addr, offset, size,
                         for at in range(0, len(table) - size + 1, shentsize)]  # link, info, align, entsize
        names = self.data(self.sections[shstrndx], _TABLE_BYTES) if shstrndx < len(self.sections) else b""
        self.by_name = {}
        for section in self.sections:
            self.by_name.setdefault(_name(names, section[0]), section)

    def data(self, section: tuple, most: int) -> bytes:
        self.file.seek(section[4])
        return self.file.read(min(section[5], most))

    def linked_names(self, section: tuple) -> bytes:
        """The string table `section` links to (its sh_link)."""
        return self.data(self.sections[section[6]], _TABLE_BYTES) if section[6] < len(self.sections) else b""


def _name(table: bytes, at: int) -> str:
    """The NUL-ended name at `at` in a string table, at most _NAME_BYTES of it."""
    end = table.find(b"\0", at, at + _NAME_BYTES)
    return table[at:end if end >= 0 else at + _NAME_BYTES].decode("latin-1")


def cuda_evidence(program: Path) -> str | None:
    """What shows `program` is a CUDA program ("it holds CUDA device code (.nv_fatbin)"), or None: not an ELF
    file, or nothing of CUDA in it."""
    try:
        with open(program, "rb") as file:
            elf = _Elf(file)
            for name in DEVICE_CODE_SECTIONS:
                if name in elf.by_name:
                    return f"it holds CUDA device code, a {name} section"
            dynamic = elf.by_name.get(".dynamic")
            if dynamic is not None:
                entry = "qQ" if elf.wide else "iI"
                raw, names = elf.data(dynamic, _MOST_TAGS * struct.calcsize(elf.order + entry)), elf.linked_names(dynamic)
                whole = len(raw) - len(raw) % struct.calcsize(elf.order + entry)
                for tag, value in struct.iter_unpack(elf.order + entry, raw[:whole]):
                    if tag == _DT_NULL:
                        break
                    if tag == _DT_NEEDED and _CUDA_LIBRARY.match(_name(names, value)):
                        return f"it needs {_name(names, value)}"
            symbols = elf.by_name.get(".dynsym")
            if symbols is not None:
                layout = "IBBHQQ" if elf.wide else "IIIBBH"
                width = struct.calcsize(elf.order + layout)
                raw, names = elf.data(symbols, _MOST_SYMBOLS * width), elf.linked_names(symbols)
                for fields in struct.iter_unpack(elf.order + layout, raw[:len(raw) - len(raw) % width]):
                    name_at, section = fields[0], fields[3] if elf.wide else fields[5]
                    if section == _SHN_UNDEF and _CUDA_CALL.fullmatch(_name(names, name_at)):
                        return f"it calls {_name(names, name_at)}"
            rodata = elf.by_name.get(".rodata")
            if rodata is not None and _STATIC_RUNTIME in elf.data(rodata, _RODATA_BYTES):
                return "the CUDA runtime is linked into it"
    except (OSError, ValueError, struct.error, IndexError):  # a submission's file may be any bytes: none shows nothing
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
