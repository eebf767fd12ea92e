"""The system calls a judged program (and its build) may not make: those that carry state from one run to
the next or reach past the run's own processes, and the one that takes disk no size limit sees.

Each run is a fresh box of files, but a few kernel objects outlive any box: keys in the kernel's keyrings
(a session keyring is inherited through fork, exec and bwrap alike, so every run could read, change and
leave keys for the next), io_uring instances, and CPU affinity (a program that widens its own affinity
leaves the cores its worker was pinned to and runs on a neighbour's). ioi/isolate blocks the same family.
A classic BPF program, installed with no-new-privileges just before exec, answers each of these calls with
EPERM; a call made through another ABI (x32, or i386 on x86-64) is refused whole, so it cannot go around
the numbers. fallocate is allowed only in mode 0 (FALLOC_FL_KEEP_SIZE reserves blocks past a file's size,
which RLIMIT_FSIZE and a folder's size cap never see), and statx is answered ENOSYS, so no file in the box
shows its birth time (NO_BIRTH_TIMES). Before the filter, the process also joins a new, empty session keyring, so
nothing the judge's own session holds is even visible in /proc/keys. A build's filter refuses memfd_create and shmget
too (NO_MEMORY_FILES).

Written by hand because libseccomp's Python binding is not on PyPI; the program is a dozen instructions
and a list of numbers, tested by running a small program under it.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
import subprocess
import sys
from typing import Callable

# struct seccomp_data: int nr at offset 0, __u32 arch at offset 4, __u64 args[6] from offset 16; fallocate's
# mode (an int) is the low half of args[1] on these little-endian machines.
_NR_OFFSET, _ARCH_OFFSET, _MODE_OFFSET = 0, 4, 24
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | errno.EPERM
_RET_EOPNOTSUPP = 0x00050000 | errno.EOPNOTSUPP
_RET_ENOSYS = 0x00050000 | errno.ENOSYS
_X32_BIT = 0x40000000

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_KEYCTL_JOIN_SESSION_KEYRING = 1

# Per architecture: the audit arch, keyctl's number, the numbers refused, fallocate's number, statx's, those a
# build's filter refuses besides (NO_MEMORY_FILES), those the fallback's refuses besides (NO_NAMESPACES), and clone's
# and clone3's numbers.
_ARCHES = {
    "x86_64": (0xC000003E, 250, {
        "add_key": 248, "request_key": 249, "keyctl": 250, "sched_setaffinity": 203,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    }, 285, 332, {"memfd_create": 319, "shmget": 29}, {"unshare": 272, "setns": 308, "mount": 165}, 56, 435),
    "aarch64": (0xC00000B7, 219, {
        "add_key": 217, "request_key": 218, "keyctl": 219, "sched_setaffinity": 122,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    }, 47, 291, {"memfd_create": 279, "shmget": 194}, {"unshare": 97, "setns": 268, "mount": 40}, 220, 435),
}

REFUSED_CALLS = tuple(sorted(_ARCHES["x86_64"][2]))
# fallocate with any mode but 0 (which grows the file's size, so RLIMIT_FSIZE and a capped folder see it):
# FALLOC_FL_KEEP_SIZE reserves blocks past the size, which no size limit counts (a program once reserved
# the judge's whole disk through its stdout); answered EOPNOTSUPP, as a file system without it would.
ONLY_PLAIN_FALLOCATE = "fallocate"
# statx, answered ENOSYS as a kernel before 4.11 would (glibc, Rust and the rest fall back to stat, which has no
# birth time): a file's birth time is the one time no utime can set, so it dated whatever the judge made for a
# run (the program's copy, a staged input) and told a rerun from a first run, or a row's place in its round.
NO_BIRTH_TIMES = "statx"
# memfd_create and shmget, refused in a build (EPERM): their pages are memory no limit of a build sees (not
# RLIMIT_AS: never mapped, or mapped one segment at a time and let go; not a capped folder; not RLIMIT_FSIZE) and
# no process's RSS, so the OOM killer would take an honest build beside one that held the host's memory in them
# (red team 24: 23 GiB from one build in memfd pages). A run keeps them: the CUDA driver makes a memfd as it
# starts. No compiler, linker or make needs either.
NO_MEMORY_FILES = ("memfd_create", "shmget")
# unshare, setns and mount refused, and clone with a new namespace's flag, in the fallback (no box: the filter is on
# the program itself; the box's is on bubblewrap, which makes namespaces): in a user namespace of its own a program
# mounted a FUSE file system and asked it what its own server never answered, and SIGKILL left it stuck in the kernel
# (red team 26). clone3 is answered ENOSYS, as a kernel before 5.3 would (its flags are behind a pointer no filter
# reads; glibc and the rest fall back to clone).
NO_NAMESPACES = ("unshare", "setns", "mount")
_CLONE_NEW_NAMESPACES = 0x7E020000  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_FLAGS_OFFSET = 16  # clone's flags: args[0], its low half
_ALU_AND_K = 0x54


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(machine: str | None = None, build: bool = False, fallback: bool = False) -> bytes:
    """The BPF program (struct sock_filter[]) for this machine's architecture (a build's refuses NO_MEMORY_FILES
    too, the fallback's NO_NAMESPACES and clone's namespace flags); raises KeyError for one it does not know."""
    arch, _, refused, fallocate, statx, memory_files, namespaces, clone, clone3 = _ARCHES[machine or platform.machine()]
    numbers = sorted([*refused.values(), *(memory_files.values() if build else []),
                      *(namespaces.values() if fallback else [])])
    program = [
        _insn(_LD_W_ABS, 0, 0, _ARCH_OFFSET),
        _insn(_JEQ_K, 1, 0, arch),           # this ABI: go on
        _insn(_RET_K, 0, 0, _RET_EPERM),     # any other ABI: refused whole
        _insn(_LD_W_ABS, 0, 0, _NR_OFFSET),
        _insn(_JGE_K, 0, 1, _X32_BIT),       # x32 numbers alias the 64-bit ones
        _insn(_RET_K, 0, 0, _RET_EPERM),
    ]
    namespace_checks = [
        _insn(_JEQ_K, 0, 1, clone3),         # clone3: ENOSYS, its flags unread
        _insn(_RET_K, 0, 0, _RET_ENOSYS),
        _insn(_JEQ_K, 0, 5, clone),          # not clone: on to statx
        _insn(_LD_W_ABS, 0, 0, _FLAGS_OFFSET),
        _insn(_ALU_AND_K, 0, 0, _CLONE_NEW_NAMESPACES),
        _insn(_JEQ_K, 0, 1, 0),              # no new namespace: allowed; any: EPERM
        _insn(_RET_K, 0, 0, _RET_ALLOW),
        _insn(_RET_K, 0, 0, _RET_EPERM),
    ] if fallback else []
    tail = namespace_checks + [
        _insn(_JEQ_K, 0, 1, statx),          # statx: ENOSYS, as a kernel without it answers
        _insn(_RET_K, 0, 0, _RET_ENOSYS),
        _insn(_JEQ_K, 0, 2, fallocate),      # not fallocate: allowed
        _insn(_LD_W_ABS, 0, 0, _MODE_OFFSET),
        _insn(_JEQ_K, 0, 1, 0),              # mode 0: allowed; any other: EOPNOTSUPP
        _insn(_RET_K, 0, 0, _RET_ALLOW),
        _insn(_RET_K, 0, 0, _RET_EOPNOTSUPP),
        _insn(_RET_K, 0, 0, _RET_EPERM),
    ]
    for i, number in enumerate(numbers):
        program.append(_insn(_JEQ_K, len(numbers) - i - 1 + len(tail) - 1, 0, number))  # to the last EPERM
    return b"".join(program + tail)


def supported() -> bool:
    """Whether the filter can be installed here: Linux on x86-64 or aarch64, and a kernel that takes it
    (tried once per process on a child that runs this Python, so a kernel without seccomp judges on, and says so,
    rather than failing every run)."""
    global _TAKEN
    if not (platform.system() == "Linux" and platform.machine() in _ARCHES):
        return False
    if _TAKEN is None:
        try:
            # this Python, not `true` from PATH: a PATH without it read as "no seccomp here" and dropped the filter;
            # isolated and without site (-I -S), so no sitecustomize or .pth file of the environment's decides it
            _TAKEN = subprocess.run([sys.executable, "-I", "-S", "-c", ""], preexec_fn=install_in_this_process,
                                    timeout=30,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL).returncode == 0
        except (OSError, subprocess.SubprocessError):
            _TAKEN = False
    return _TAKEN


_TAKEN: bool | None = None


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def install_for_a_build() -> None:
    """`install_in_this_process` with a build's filter."""
    install_in_this_process(build=True)


def install_for_the_fallback() -> None:
    """`install_in_this_process` with the fallback's filter (a run's without a box)."""
    install_in_this_process(fallback=True)


def install_for_a_fallback_build() -> None:
    """`install_in_this_process` with a build's filter and the fallback's."""
    install_in_this_process(build=True, fallback=True)


def installer(build: bool = False, fallback: bool = False) -> Callable[[], None]:
    """The step that installs the filter of a build or a run, in the box or in the fallback."""
    return {(False, False): install_in_this_process, (True, False): install_for_a_build,
            (False, True): install_for_the_fallback, (True, True): install_for_a_fallback_build}[build, fallback]


def install_in_this_process(build: bool = False, fallback: bool = False) -> None:
    """Join a new empty session keyring, then install the filter with no-new-privileges. Called in the
    child between fork and exec (it allocates nothing Python keeps); raises OSError when the kernel
    refuses, so the run fails rather than going on unfiltered."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    # A fresh anonymous session keyring: the judge's own keys are no longer possessed.
    if libc.syscall(ctypes.c_long(_ARCHES[platform.machine()][1]),
                    ctypes.c_long(_KEYCTL_JOIN_SESSION_KEYRING), ctypes.c_void_p(None)) < 0:
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EPERM):  # kernels without keys have nothing to leak
            raise OSError(code, "could not join a new session keyring")
    program = filter_program(build=build, fallback=fallback)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "could not set no-new-privileges")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "could not install the system-call filter")
