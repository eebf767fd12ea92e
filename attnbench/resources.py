"""What the compiler says about each kernel: registers, shared memory, stack and spill bytes.

Read from `nvcc -cubin -Xptxas -v`, so it needs nvcc but no GPU.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from attnbench.gpu import BASE_NVCC_OPTIONS, CUDA_DIR
from attnbench.testcase import Shape
from attnbench.variants import Variant

_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


@dataclass(frozen=True)
class KernelResources:
    """ptxas's report for one kernel."""

    kernel: str
    registers: int
    static_smem: int
    stack_frame: int
    spill_stores: int
    spill_loads: int

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


def nvcc_path() -> str | None:
    return shutil.which("nvcc")


def parse_ptxas(text: str) -> dict[str, KernelResources]:
    """Per-kernel figures from ptxas -v output."""
    found: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        entry = _ENTRY.search(line)
        if entry:
            current = entry.group(1)
            found[current] = {"registers": 0, "static_smem": 0, "stack_frame": 0, "spill_stores": 0, "spill_loads": 0}
            continue
        if current is None:
            continue
        frame = _FRAME.search(line)
        if frame:
            found[current].update(stack_frame=int(frame[1]), spill_stores=int(frame[2]), spill_loads=int(frame[3]))
        used = _USED.search(line)
        if used:
            found[current]["registers"] = int(used[1])
            smem = _SMEM.search(line)
            found[current]["static_smem"] = int(smem[1]) if smem else 0
    return {name: KernelResources(name, **values) for name, values in found.items()}


def compile_report(variant: Variant, shape: Shape, arch: str) -> dict[str, KernelResources]:
    """Compile the variant for `arch` with the defines `shape` needs and return ptxas's figures."""
    nvcc = nvcc_path()
    if nvcc is None or variant.source is None:
        return {}
    defines = [f"-D{k}={v}" for k, v in sorted(variant.defines(shape).items())]
    with tempfile.TemporaryDirectory() as tmp:
        command = [nvcc, *BASE_NVCC_OPTIONS, *variant.options, *defines, f"-arch={arch}", "-cubin", "-Xptxas", "-v",
                   "-I", str(CUDA_DIR), str(CUDA_DIR / variant.source), "-o", str(Path(tmp) / "k.cubin")]
        result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        return {}
    return parse_ptxas(result.stderr)


def representative_shape(variant: Variant, head_dim: int) -> Shape | None:
    """A shape the variant accepts, with d = head_dim if it can (the figures depend on d)."""
    candidates = [head_dim, 64, 32, 128, 512, 1, 48]
    for d in candidates:
        shape = Shape(1, 1024, d)
        if variant.refusal(shape) is None:
            return shape
    return None


def report_all(variants: list[Variant], head_dim: int, arch: str) -> dict[str, tuple[Shape | None, dict[str, KernelResources]]]:
    """Compile every variant in parallel; variant name -> (shape used, per-kernel figures)."""

    def one(variant: Variant) -> tuple[str, tuple[Shape | None, dict[str, KernelResources]]]:
        shape = representative_shape(variant, head_dim)
        return variant.name, (shape, compile_report(variant, shape, arch) if shape else {})

    with ThreadPoolExecutor() as pool:
        return dict(pool.map(one, variants))
