"""A whole program's kernels, recorded in a run of their own: untimed, unjudged, never the judged run.

The collector (`cuda/kernel_records.cpp`) is built once with nvcc against the CUDA toolkit's CUPTI and
cached like the other builds; a recording run loads it into the program through CUDA's injection mechanism
(`CUDA_INJECTION64_PATH`), in the same room as any run of the program (attnbench.sandbox, the same
--sandbox mode and limits), with the library's folder bound read-only. The collector writes every launch
to a file in the case folder, read before the folder goes (attnbench.results.kernel_time sums it).

Without a GPU, nvcc or CUPTI there is no recording run: `unavailable()` says why in one line, and nothing
else changes.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from attnbench.errors import AttnbenchError
from attnbench.kernels.nvcc import first_error_lines, nvcc_path
from attnbench.locations import kernel_dir
from attnbench.locations import cache_dir
from attnbench.results.kernel_time import KernelRecording, KernelRecordsError, parse_records
from attnbench.sandbox import ProgramSpec, Sandbox, SandboxSettings
from attnbench.sandbox.outcome import ended

INJECTION_ENV = "CUDA_INJECTION64_PATH"
RECORDS_ENV = "ATTNBENCH_KERNEL_RECORDS"  # the collector's source names it too
RECORDS_NAME = ".attnbench-kernel-records"  # in the case folder, the run's working folder when CUDA starts
RECORDS_FILE_BYTES = 8 << 20  # about 150,000 launches; the case folder's margin holds it
COLLECTOR_SOURCE = "kernel_records.cpp"
LIBRARY_NAME = "libattnbench_kernel_records.so"
_GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia0")


class CollectorUnavailable(AttnbenchError):
    """The collector cannot be built here (no nvcc, no CUPTI, or nvcc failed): the one line says which."""

    exit_code = 3


def _toolkit_roots() -> list[Path]:
    """Where a CUDA toolkit may be: $CUDA_HOME, $CUDA_PATH, nvcc's own, /usr/local/cuda."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = nvcc_path()
    if nvcc is not None:
        roots.append(str(Path(os.path.realpath(nvcc)).parent.parent))
    roots.append("/usr/local/cuda")
    return [Path(r) for r in dict.fromkeys(r for r in roots if r)]


def find_cupti() -> tuple[Path, Path] | None:
    """CUPTI's header folder and library folder (cupti.h, libcupti.so) in the toolkit: extras/CUPTI in older
    ones, include and lib64 (or targets/*/) in newer; None where there is none."""
    for root in _toolkit_roots():
        pairs = [(root / "extras/CUPTI/include", root / "extras/CUPTI/lib64"), (root / "include", root / "lib64"),
                 *((Path(t) / "include", Path(t) / "lib") for t in sorted(glob.glob(str(root / "targets/*"))))]
        for include, lib in pairs:
            if (include / "cupti.h").is_file() and (lib / "libcupti.so").exists():
                return include, lib
    return None


def gpu_present() -> bool:
    """Whether this machine shows an NVIDIA GPU's device nodes."""
    return any(os.path.exists(node) for node in _GPU_NODES)


def unavailable() -> str | None:
    """Why no kernel time can be recorded here (one line), or None."""
    if not gpu_present():
        return "no kernel time: no NVIDIA GPU on this machine"
    if nvcc_path() is None:
        return "no kernel time: nvcc is not on PATH (it builds the kernel-records collector)"
    if find_cupti() is None:
        roots = ", ".join(str(r) for r in _toolkit_roots())
        return f"no kernel time: CUPTI (cupti.h and libcupti.so) is not in the CUDA toolkit ({roots})"
    return None


def collector_command(source: Path, include: Path, lib: Path, output: Path) -> list[str]:
    """nvcc's command that builds the collector: a host-only shared library against the toolkit's CUPTI, which
    it finds at run time through its rpath."""
    return [nvcc_path() or "nvcc", "-O2", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-I", str(include),
            str(source), "-L", str(lib), "-lcupti", f"-Xlinker=-rpath={lib}", "-o", str(output)]


@functools.cache
def collector_library() -> Path:
    """The collector, built at first use and cached by its source, CUPTI's folders and nvcc's version;
    CollectorUnavailable (one line) where it cannot be built."""
    cupti = find_cupti()
    if nvcc_path() is None or cupti is None:
        raise CollectorUnavailable(unavailable() or "no kernel time: the collector cannot be built here")
    source = kernel_dir() / COLLECTOR_SOURCE
    version = subprocess.run([nvcc_path() or "nvcc", "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256(b"\0".join(part.encode() if isinstance(part, str) else part for part in
                                    (source.read_bytes(), str(cupti[0]), str(cupti[1]), version))).hexdigest()[:24]
    library = cache_dir() / "kernel-records" / key / LIBRARY_NAME
    if library.is_file():
        return library
    library.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=library.parent) as tmp:
        built = Path(tmp) / LIBRARY_NAME
        done = subprocess.run(collector_command(source, *cupti, built), capture_output=True, text=True)
        if done.returncode != 0:
            raise CollectorUnavailable(f"no kernel time: nvcc could not build cuda/{COLLECTOR_SOURCE}: "
                                       f"{first_error_lines(done.stderr)}")
        os.replace(built, library)  # whole or not at all: a second process may build it at the same time
    return library


def _read_records(path: Path) -> str | None:
    """The records file's text, when it is a plain file of its own within its size; None when absent."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        raise KernelRecordsError("the records file is a link or not a plain file: not read")
    if info.st_size > RECORDS_FILE_BYTES:
        raise KernelRecordsError(f"the records file is over {RECORDS_FILE_BYTES >> 20} MiB: not read")
    return path.read_bytes().decode("utf-8", errors="replace")


def record_kernels(program: Path, spec: ProgramSpec, settings: SandboxSettings,
                   cuda_cache: Path | None = None) -> KernelRecording:
    """One untimed run of `program` on `spec`'s input, in a room like its judged runs' (`settings`, its sealed
    `cuda_cache`), with the collector loaded: its kernels summed, or the one line why there are none."""
    why = unavailable()
    if why is not None:
        return KernelRecording(None, why)
    try:
        library = collector_library()
    except CollectorUnavailable as exc:
        return KernelRecording(None, str(exc))
    holder = Path(tempfile.mkdtemp(prefix="attnbench-collector-"))
    try:
        os.chmod(holder, 0o755)  # the run's own user loads it, and cannot change it
        copy = holder / LIBRARY_NAME
        shutil.copyfile(library, copy)
        os.chmod(copy, 0o555)
        cupti_lib = find_cupti()[1]  # type: ignore[index] - unavailable() found it
        binds = (holder,) + (() if str(cupti_lib).startswith("/usr/") else (cupti_lib,))
        env = ((INJECTION_ENV, str(copy)), (RECORDS_ENV, RECORDS_NAME))
        chosen = replace(settings, binds=settings.binds + binds, env=settings.env + env)
        room = Sandbox.open(program, chosen, bool(spec.launcher), cuda_cache=cuda_cache)
        try:
            return _recording_run(room, spec)
        finally:
            room.close()
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def _recording_run(room: Sandbox, spec: ProgramSpec) -> KernelRecording:
    case = room.prepare(f"{spec.label}-kernels", spec.input_path)
    try:
        limits = room.limits_for(spec.shape.output_bytes, spec.timeout_s)
        limits = replace(limits, file_bytes=max(limits.file_bytes or 0, RECORDS_FILE_BYTES))
        argv = spec.argv(room.program_path(), case.input_arg, case.output_arg)
        process = room.run(argv, case, spec.timeout_s, limits, spec.launcher)
        outcome = ended(process, case.output, spec.shape, limits, room.confinement.sandboxed, spec.timeout_s)
        try:
            text = _read_records(case.folder / RECORDS_NAME)
        except (KernelRecordsError, OSError) as exc:
            return KernelRecording(None, f"no kernel time: {exc}")
    finally:
        room.finish(case)
    if text is None:
        ending = f" ({outcome.ending.lower()}: {outcome.message})" if outcome.ending else ""
        return KernelRecording(None, "no kernel time: its recording run wrote no records (it never started CUDA, "
                                     f"or was stopped first){ending}")
    try:
        return KernelRecording(parse_records(text))
    except (KernelRecordsError, ArithmeticError, ValueError) as exc:  # the program writes this file: whatever it
        return KernelRecording(None, f"no kernel time: its records: {exc}")  # holds costs its kernel time, no verdict
