"""Bubblewrap: finding it, whether it can make namespaces here at all, and the folders it binds into a run: the system's read-only, the GPU's device nodes, and library
folders that can be trusted (never a relative or world-writable `LD_LIBRARY_PATH` entry: one named the
judge's working folder, the other anybody's files)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from attnbench.sandbox.gpu_nodes import GpuChoice, gpu_nodes

BWRAP_ENV = "ATTNBENCH_BWRAP"

_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The /etc entries a program's loader and libc read; the host's passwd and group are not among them: they
# name its accounts (account_files writes the box's own)
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "nsswitch.conf", "localtime")
_CGROUPS = "/sys/fs/cgroup"


def system_folders() -> list[Path]:
    """The system's folders bound into the box (those that are folders here, not links)."""
    return [Path(f) for f in _SYSTEM if os.path.isdir(f) and not os.path.islink(f)]


def system_binds(source: Callable[[str], str] = str) -> list[str]:
    """The system's folders and the few /etc entries read-only, each bound from source(its path) (the
    room's view of it: box_view)."""
    args: list[str] = []
    for folder in _SYSTEM:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", source(folder), folder]
    for name in ETC_FILES:
        args += ["--ro-bind-try", source(f"/etc/{name}"), f"/etc/{name}"]
    return args


def sys_binds() -> list[str]:
    """The host's /sys read-only (a GPU's driver and NVML read its devices), less its cgroup tree: an empty
    read-only tmpfs over /sys/fs/cgroup. That tree named the judge's groups (its pid among them) and a batch
    job's and its steps' groups, whose folders' times are their births and date the class, as their counters
    (cpu.stat, memory.peak) measure its progress; the run's own limits are set from outside (red team)."""
    args = ["--ro-bind", "/sys", "/sys"]
    if os.path.isdir(_CGROUPS) and not os.path.islink(_CGROUPS):
        args += ["--tmpfs", _CGROUPS, "--remount-ro", _CGROUPS]
    return args


def account_files(folder: Path, uid: int) -> tuple[Path, Path]:
    """The box's own /etc/passwd and /etc/group, written into folder: root, the run's user (uid, named
    "runner", at home in /tmp) and nobody; nothing of the host's accounts."""
    users = {0: "root", uid: "runner", 65534: "nobody"}
    homes = {0: "/root", 65534: "/nonexistent"}
    passwd = "".join(f"{name}:x:{number}:{number}:{name}:{homes.get(number, '/tmp')}:/usr/sbin/nologin\n"
                     for number, name in users.items())
    group = "".join(f"{name if number != 65534 else 'nogroup'}:x:{number}:\n" for number, name in users.items())
    written = []
    for name, text in (("passwd", passwd), ("group", group)):
        path = folder / name
        path.write_text(text)
        os.chmod(path, 0o644)
        written.append(path)
    return written[0], written[1]


def gpu_binds(choice: GpuChoice | None = None) -> list[str]:
    """The GPUs' device nodes bound into the sandbox's fresh /dev: of the per-GPU ones, only those of `choice`
    where it is given (gpu_nodes)."""
    return [w for node in gpu_nodes(choice) for w in ("--dev-bind", node, node)]


def holds_temp_folder(folder: str | Path) -> bool:
    """Whether the folder is the judge's temporary folder or one above it: bound into the box, it shows every
    room open beside the run's (their read-only program copies: another submission's program, and the mounts
    inside them), so it is never bound."""
    temp = Path(os.path.realpath(tempfile.gettempdir()))
    return temp.is_relative_to(os.path.realpath(folder))


def trusted_folder(entry: str) -> bool:
    """An LD_LIBRARY_PATH entry worth binding: absolute, an existing folder, not holding the judge's temporary
    folder, and neither it nor a folder above it writable by everybody (a relative entry names the judge's
    working folder, which may be a submission's; a world-writable one may hold anybody's libraries)."""
    if not entry.startswith("/") or not os.path.isdir(entry) or holds_temp_folder(entry):
        return False
    path = Path(os.path.realpath(entry))
    for folder in (path, *path.parents):
        try:
            info = os.stat(folder)
        except OSError:
            return False
        if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
            return False
        if folder == path and info.st_mode & stat.S_IWOTH:
            return False
    return True


def library_folders(extra: Sequence[Path]) -> list[Path]:
    """Folders bound read-only besides the system's: --sandbox-bind's, and LD_LIBRARY_PATH's that are
    absolute, exist and are not writable by everybody (the others are never bound)."""
    folders = [Path(p) for p in extra]
    for entry in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if entry and trusted_folder(entry) and not entry.startswith("/usr/"):
            folders.append(Path(entry))
    return folders


def find_bwrap() -> tuple[str | None, str]:
    """bwrap's path ($ATTNBENCH_BWRAP, else PATH), or None and why not."""
    chosen = os.environ.get(BWRAP_ENV)
    if chosen:
        if not os.access(chosen, os.X_OK):
            return None, f"${BWRAP_ENV}={chosen} is not an executable file"
        # absolute: bwrap is started from each run's case folder, where a relative path names nothing
        return os.path.abspath(chosen), ""
    found = shutil.which("bwrap")
    return (found, "") if found else (None, "bwrap is not installed (Debian: apt-get install bubblewrap)")


def bwrap_starts(tool: str) -> str:
    """'' when bwrap can make its namespaces at all here (no mounts of this run's); else its last words.
    Only this failure ("not installed / not permitted") may fall back."""
    try:
        done = subprocess.run([tool, "--unshare-all", "--dev-bind", "/", "/", "--", "/bin/sh", "-c", "exit 0"],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        words = done.stderr.decode(errors="replace").strip().splitlines()
        return "" if done.returncode == 0 else f"bwrap failed: {words[-1] if words else done.returncode}"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap cannot run: {exc}"
