"""nvcc, in one place: the options every kernel is built with, where a variant's source is, and what
the compiler says about each kernel (registers, shared memory, stack and spill bytes, from
`nvcc -cubin -Xptxas -v`, so it needs nvcc but no GPU). Where nvcc is and what it builds for: `nvcc_here`.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from attnbench import strict_json
from attnbench.cases.testcase import Shape
from attnbench.errors import CompileCheckFailed, OutputError
from attnbench.files import write_text
from attnbench.kernels.nvcc_here import first_error_lines, nvcc_architectures, nvcc_path  # noqa: F401 - nvcc's face
from attnbench.kernels.variant import Variant
from attnbench.locations import kernel_dir
from attnbench.results.resultset import VariantInfo

BASE_NVCC_OPTIONS = ("-O3", "-std=c++17")

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


def source_file(variant: Variant) -> Path:
    """The variant's kernel file: a user's own path, or one of the built-in kernels."""
    if variant.source_path is not None:
        return variant.source_path
    assert variant.source is not None, f"{variant.name} has no CUDA source"
    return kernel_dir() / variant.source  # an absolute source (a user's kernel) stays as it is


def is_users(variant: Variant) -> bool:
    """A kernel file outside the package: messages and nvcc name the user's own path."""
    return variant.source_path is not None or Path(str(variant.source)).is_absolute()


def source_label(variant: Variant) -> str:
    """The source as messages name it: cuda/naive.cu, or the user's path."""
    return str(source_file(variant)) if is_users(variant) else f"cuda/{variant.source}"


def compile_source(variant: Variant) -> str:
    """The text handed to the run-time compiler: a user's file starts with a #line directive, so nvcc's
    messages name the user's file and line, not a temporary one."""
    text = source_text(variant)
    return f'#line 1 "{source_file(variant)}"\n{text}' if is_users(variant) else text


def include_dirs(variant: Variant) -> list[Path]:
    """Where `#include` looks: the kernel's own folder, then the built-in kernels (for common.cuh)."""
    folders = [source_file(variant).parent, kernel_dir()]
    return list(dict.fromkeys(folders))


def source_text(variant: Variant) -> str:
    """The kernel's source. Read as UTF-8 whatever the locale (the built-in kernels hold UTF-8 comments, and a
    C or POSIX locale without UTF-8 mode read them as ASCII: `list` ended in a traceback); a byte that is not
    UTF-8 (a Latin-1 comment in a student's kernel) becomes U+FFFD instead of a traceback."""
    return source_file(variant).read_text(encoding="utf-8", errors="replace")


_LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def shared_headers(variant: Variant) -> list[Path]:
    """The built-in headers the variant's code rests on: common.cuh first, then those its source
    includes from the built-in kernel folder (and those they include), in the order first met."""
    found = [kernel_dir() / "common.cuh"]
    pending = [source_text(variant)]
    while pending:
        for name in _LOCAL_INCLUDE.findall(pending.pop(0)):
            header = kernel_dir() / name
            if header not in found and header.is_file():
                found.append(header)
                pending.append(header.read_text(encoding="utf-8", errors="replace"))
    return found


def source_hash(variant: Variant) -> str | None:
    """sha256 of the variant's source and the shared headers it rests on, for saved results."""
    if not variant.kind.compiled or (variant.source is None and variant.source_path is None):
        return None
    digest = hashlib.sha256(source_text(variant).encode())
    for header in shared_headers(variant):
        digest.update(header.read_bytes())
    return digest.hexdigest()[:16]


def compile_options(variant: Variant, shape: Shape) -> list[str]:
    """Every nvcc option but the architecture and include folders: the base set, the variant's own,
    and the defines this shape selects. The run-time compiler and the command line both use this."""
    defines = variant.defines(shape)
    return [*BASE_NVCC_OPTIONS, *variant.options, *(f"-D{k}={v}" for k, v in sorted(defines.items()))]


def nvcc_command(variant: Variant, shape: Shape, arch: str, output: Path) -> list[str]:
    """The nvcc command line that builds the variant's cubin for `arch` (or the one arch it is made for)
    with ptxas's report."""
    nvcc = nvcc_path() or "nvcc"
    arch = variant.arch or arch
    includes = [flag for folder in include_dirs(variant) for flag in ("-I", str(folder))]
    return [nvcc, *compile_options(variant, shape), f"-arch={arch}", "-cubin", "-Xptxas", "-v", *includes,
            str(source_file(variant)), "-o", str(output)]


def variant_info(variant: Variant, arch: str | None = None) -> VariantInfo:
    """What saved results record about a variant: its report, technique, source hash and options."""
    options: tuple[str, ...] = ()
    if variant.kind.compiled:
        target = variant.arch or arch
        options = (*BASE_NVCC_OPTIONS, *variant.options) + ((f"-arch={target}",) if target else ())
    try:
        digest = source_hash(variant)
    except OSError:
        digest = None
    source = str(source_file(variant)) if variant.kind.compiled and is_users(variant) else variant.source
    return VariantInfo(variant.name, variant.report, variant.technique, variant.backend, source, digest,
                       options, variant.accuracy, variant.arithmetic)


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


def _nvcc_version() -> str:
    """nvcc's version banner: a new toolkit may allocate registers differently, so it keys the cache."""
    global _NVCC_VERSION
    if _NVCC_VERSION is None:
        found = subprocess.run([nvcc_path() or "nvcc", "--version"], capture_output=True, text=True)
        _NVCC_VERSION = found.stdout.strip()
    return _NVCC_VERSION


_NVCC_VERSION: str | None = None
PTXAS_CACHE_VERSION = 1  # 1: kernel name -> KernelResources fields


def _ptxas_cache_path(variant: Variant, shape: Shape, arch: str) -> Path:
    """The cached figures of this source (and its shared headers), these options and this nvcc."""
    from attnbench.locations import cache_dir

    key = hashlib.sha256()
    for part in (str(PTXAS_CACHE_VERSION), source_hash(variant) or "", variant.arch or arch,
                 *compile_options(variant, shape), _nvcc_version()):
        key.update(part.encode() + b"\0")
    return cache_dir() / "ptxas" / f"{key.hexdigest()[:32]}.json"


def compile_report(variant: Variant, shape: Shape, arch: str) -> dict[str, KernelResources]:
    """Compile the variant for `arch` with the defines `shape` needs and return ptxas's figures.

    Figures are cached by source, options, architecture and nvcc version (as pycuda caches cubins),
    so `list` compiles only what changed. Raises CompileCheckFailed with nvcc's first error lines."""
    if nvcc_path() is None or not variant.kind.compiled:
        return {}
    cached = _ptxas_cache_path(variant, shape, arch)
    try:
        return {k: KernelResources(**v) for k, v in json.loads(cached.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        pass  # absent or unreadable: compile
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run(nvcc_command(variant, shape, arch, Path(tmp) / "k.cubin"), capture_output=True, text=True,
                                errors="replace")  # nvcc quotes source lines: a Latin-1 one is no traceback
    if result.returncode != 0:
        raise CompileCheckFailed(f"{source_label(variant)}: nvcc could not compile it for {variant.arch or arch}: "
                                 f"{first_error_lines(result.stderr)}")
    figures = parse_ptxas(result.stderr)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_text(cached, strict_json.dumps({k: asdict(v) for k, v in figures.items()}))
    except (OSError, OutputError):
        pass  # a cache that cannot be written only costs a compile next time
    return figures


def representative_shape(variant: Variant, head_dim: int) -> Shape | None:
    """A shape the variant accepts, with d = head_dim if it can (the figures depend on d)."""
    candidates = [head_dim, 64, 32, 128, 512, 1, 48]
    for d in candidates:
        shape = Shape(1, 1024, d)
        if variant.refusal(shape) is None:
            return shape
    return None


def report_all(variants: list[Variant], head_dim: int, arch: str,
               advance: Callable[[int], None] | None = None,
               failed: list[str] | None = None) -> dict[str, tuple[Shape | None, dict[str, KernelResources]]]:
    """Compile every variant in parallel; variant name -> (shape used, per-kernel figures). `advance(1)`
    is called as each variant is done (a cold cache compiles for 15-25 s); the names nvcc refused are
    appended to `failed`, in the variants' order."""

    def one(variant: Variant) -> tuple[str, Shape | None, dict[str, KernelResources], bool]:
        shape = representative_shape(variant, head_dim)
        try:
            return variant.name, shape, compile_report(variant, shape, arch) if shape else {}, True
        except CompileCheckFailed:  # the listing shows "-" and names it; `attnbench info` shows nvcc's error
            return variant.name, shape, {}, False

    with ThreadPoolExecutor() as pool:
        found = {}
        for name, shape, figures, compiled in pool.map(one, variants):
            found[name] = (shape, figures)
            if not compiled and failed is not None:
                failed.append(name)
            if advance is not None:
                advance(1)
        return found
