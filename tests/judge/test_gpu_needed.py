"""attnbench/judge/gpu_needed.py: a CUDA program is known by the program itself (device code, the CUDA libraries it
needs, the CUDA calls it imports, the runtime linked into it), a C program is not one, and a CUDA program is
refused (exit 3) only where this host has no NVIDIA GPU."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from attnbench.errors import GpuUnavailable
from attnbench.judge import gpu_needed
from attnbench.judge.gpu_needed import NoGpuHere, cuda_evidence, not_judged_here, refuse_without_gpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TINY_CU = "__global__ void touch(float *o) { o[0] = 1.0f; }\nint main() { return 0; }\n"
NO_GPU = "no nvidia-smi and no /dev/nvidia* device"

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def compiled(folder: Path, name: str, source: str, *flags: str, compiler: str = "cc") -> Path:
    """`source` built into folder/name by `compiler` (cc, or nvcc for a .cu)."""
    suffix = ".cu" if compiler == "nvcc" else ".c"
    (folder / f"{name}{suffix}").write_text(source)
    done = subprocess.run([compiler, "-o", str(folder / name), str(folder / f"{name}{suffix}"), *flags],
                          capture_output=True, text=True, cwd=folder, timeout=300)
    assert done.returncode == 0, done.stderr
    return folder / name


@needs_nvcc
def test_a_program_nvcc_built_holds_cuda_device_code_even_stripped(tmp_path):
    program = compiled(tmp_path, "tiny", TINY_CU, compiler="nvcc")
    assert cuda_evidence(program) == "it holds CUDA device code, a .nv_fatbin section"
    if shutil.which("strip") is not None:
        subprocess.run(["strip", str(program)], check=True, timeout=120)
        assert cuda_evidence(program) == "it holds CUDA device code, a .nv_fatbin section"


@needs_cc
def test_a_c_program_is_no_cuda_program(tmp_path):
    """The C stand-ins every test judges (the course's shape, examples/cpu_program/attention.c) are judged as ever."""
    shutil.copy(EXAMPLES / "cpu_program" / "attention.c", tmp_path / "attention.c")
    program = compiled(tmp_path, "attention", (tmp_path / "attention.c").read_text(), "-lm")
    assert cuda_evidence(program) is None


@needs_cc
def test_a_program_that_needs_the_cuda_runtime_or_imports_a_cuda_call_is_one(tmp_path):
    """A C program linked with -lcudart (NEEDED libcudart.so.N), or with a library of another name that hands it
    cudaMalloc: each shows what made it one. Stand-in libraries, so that cc alone builds them."""
    library = "int cudaMalloc(void **p, unsigned long n) { (void)p; (void)n; return 0; }\n"
    caller = "int cudaMalloc(void **p, unsigned long n);\nint main(void) { void *p; return cudaMalloc(&p, 4); }\n"
    (tmp_path / "runtime.c").write_text(library)
    for soname in ("libcudart.so.13", "libwrap.so"):
        subprocess.run(["cc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(tmp_path / soname),
                        str(tmp_path / "runtime.c")], check=True, timeout=120)
    needs = compiled(tmp_path, "needs", caller, str(tmp_path / "libcudart.so.13"))
    assert cuda_evidence(needs) == "it needs libcudart.so.13"
    calls = compiled(tmp_path, "calls", caller, str(tmp_path / "libwrap.so"))
    assert cuda_evidence(calls) == "it calls cudaMalloc"


@needs_cc
def test_the_cuda_runtime_linked_into_a_program_is_known_by_the_driver_it_opens(tmp_path):
    """nvcc's default, -cudart static, leaves no library to need and no section of its own when the program has no
    kernel: the runtime opens libcuda.so.1 by name, and that name is in the program's read-only data (a program
    built with cc -lcudart_static showed it, stripped too). Here a C program stands in with the same string."""
    program = compiled(tmp_path, "opens", '#include <stdio.h>\nint main(void) { puts("libcuda.so.1"); return 0; }\n')
    assert cuda_evidence(program) == "the CUDA runtime is linked into it"


def test_what_is_no_elf_shows_nothing_and_never_raises(tmp_path):
    script = tmp_path / "hw4"
    script.write_text("#!/bin/sh\nexit 0\n")
    torn = tmp_path / "torn"
    torn.write_bytes(b"\x7fELF\x02\x01\x01" + b"\xff" * 60)  # an ELF header that lies: a submission may be any bytes
    assert cuda_evidence(script) is None and cuda_evidence(torn) is None
    assert cuda_evidence(tmp_path / "missing") is None


def test_only_the_cuda_programs_are_not_judged_and_only_where_no_gpu_is(tmp_path, monkeypatch):
    evidence = {"ada": "it needs libcudart.so.13", "bob": None}
    monkeypatch.setattr(gpu_needed, "cuda_evidence", lambda program: evidence[program.name])
    programs = {"ada": tmp_path / "ada", "bob": tmp_path / "bob"}
    monkeypatch.setattr(gpu_needed, "no_gpu_here", lambda: None)
    assert not_judged_here(programs) is None  # a GPU here: every program is judged
    monkeypatch.setattr(gpu_needed, "no_gpu_here", lambda: NO_GPU)
    found = not_judged_here(programs)
    assert found == NoGpuHere(NO_GPU, {"ada": "it needs libcudart.so.13"})
    assert found.reason("ada") == f"no NVIDIA GPU here ({NO_GPU}); a CUDA program: it needs libcudart.so.13"
    assert not_judged_here({"bob": tmp_path / "bob"}) is None  # a class of C programs: nothing is refused


def test_one_cuda_program_without_a_gpu_is_refused_in_one_line_naming_it_exit_3(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_needed, "no_gpu_here", lambda: NO_GPU)
    with pytest.raises(GpuUnavailable) as refused:
        refuse_without_gpu("sub/hw4.cu")
    message = str(refused.value)
    assert refused.value.exit_code == 3 and "\n" not in message
    assert message.startswith("sub/hw4.cu: not judged: a CUDA program (a .cu file, built by nvcc) and no NVIDIA GPU "
                              f"here ({NO_GPU})")
    monkeypatch.setattr(gpu_needed, "cuda_evidence", lambda program: None)
    refuse_without_gpu("./attention", tmp_path / "attention")  # a C program: judged on the CPU
    monkeypatch.setattr(gpu_needed, "no_gpu_here", lambda: None)
    refuse_without_gpu("sub/hw4.cu")  # a GPU here


@needs_cc
def test_names_without_an_end_are_read_only_so_far(tmp_path):
    """Red team 25: a hw4 whose .dynamic held 65,536 DT_NEEDED tags, each naming one 61 MB string without a NUL,
    held a class's judge for hours before its first run (pyelftools read every name to its end). Here 4,095 tags
    name one 4 MB string (minutes that way); every read is bounded now, and a CUDA library named in the last tag,
    or a cudaMalloc after 4,096 nameless symbols, is still found."""
    import struct

    def hostile(needed: bytes = b"", call: bytes = b"") -> Path:
        base = bytearray(compiled(tmp_path, "base", "int main(void) { return 0; }\n").read_bytes())
        shoff, = struct.unpack_from("<Q", base, 0x28)
        shnum, = struct.unpack_from("<H", base, 0x3C)
        headers = [bytearray(base[shoff + i * 64:shoff + i * 64 + 64]) for i in range(shnum)]
        data = bytearray(base[:shoff]) + bytes(-shoff % 16)
        strings = len(data)
        data += b"A" * (4 << 20) + b"\0" + needed + b"\0" + call + b"\0"
        data += bytes(-len(data) % 16)
        tags = len(data)
        data += struct.pack("<qQ", 1, 0) * 4095 + (struct.pack("<qQ", 1, (4 << 20) + 1) if needed else b"")
        symbols = len(data)
        name_at = (4 << 20) + 2 + len(needed) if call else 0
        data += struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0) * 4096 + struct.pack("<IBBHQQ", name_at, 0x12, 0, 0, 0, 0)
        for header in headers:
            kind, = struct.unpack_from("<I", header, 4)
            if kind in (6, 11):  # SHT_DYNAMIC, SHT_DYNSYM: pointed at the long tables, their strings at the long name
                link, = struct.unpack_from("<I", header, 40)
                table = (tags, symbols - tags) if kind == 6 else (symbols, len(data) - symbols)
                struct.pack_into("<QQ", header, 24, *table)
                struct.pack_into("<QQ", headers[link], 24, strings, tags - strings)
        struct.pack_into("<Q", data, 0x28, len(data))
        for header in headers:
            data += header
        path = tmp_path / f"hostile{len(needed)}{len(call)}"
        path.write_bytes(bytes(data))
        return path

    assert cuda_evidence(hostile()) is None
    assert cuda_evidence(hostile(needed=b"libcudart.so.13")) == "it needs libcudart.so.13"
    assert cuda_evidence(hostile(call=b"cudaMalloc")) == "it calls cudaMalloc"
