"""Resource limits set inside the box, on the program only, never on bubblewrap.

Limits set before exec bind the process that runs next; in a sandboxed run that is bwrap, which then
needs the processes and the memory the program was to be refused: `--max-processes 1` or `--memory-limit 1`
ended every run in "bwrap: Creating new namespace failed", and the row blamed the program. So the box runs
util-linux's `prlimit` (bound in with /usr), which sets the limits on itself and execs the program: the
limits hold from the program's first instruction. A library's call cannot reach inside the box's
namespaces, hence the small program.

RLIMIT_CPU is given a hard limit one second above the soft one: at the soft limit the kernel sends SIGXCPU,
which the verdict names (CPU time); at a hard limit equal to it, SIGKILL came first and read as a crash.
"""

from __future__ import annotations

import platform
import shutil
from dataclasses import replace
from typing import Sequence

from attnbench.sandbox.process import ProcessLimits
from attnbench.sandbox.reaper import processes_of

BOX_PROCESSES = 1  # bwrap's init (PID 1 of the box's PID namespace), counted with the program's user


def prlimit_tool() -> str | None:
    """util-linux's prlimit where it is (in /usr, which every box binds), else None."""
    return shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")


def counts_per_namespace() -> bool:
    """Whether RLIMIT_NPROC counts the processes of the box's own user namespace only (Linux 5.14 on), rather
    than every process of the uid on the host."""
    try:
        major, minor = (int(part) for part in platform.release().split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (5, 14)


def split(limits: ProcessLimits, uid: int) -> tuple[list[str], ProcessLimits]:
    """The words that set `limits` inside the box on the program (put before its argv), and the limits left
    for the bwrap process (none of these). No prlimit here: ([], limits), as before."""
    tool = prlimit_tool()
    if tool is None:
        return [], limits
    words = [tool]
    if limits.file_bytes is not None:
        words.append(f"--fsize={limits.file_bytes}")
    if limits.memory_bytes is not None:
        words.append(f"--as={limits.memory_bytes}")
    if limits.cpu_s is not None:
        words.append(f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}")
    if limits.processes is not None:
        already = BOX_PROCESSES + (0 if counts_per_namespace() else processes_of(uid))
        words.append(f"--nproc={already + limits.processes}")
    outer = replace(limits, file_bytes=None, memory_bytes=None, cpu_s=None, processes=None)
    return [*words, "--"], outer


def limited(argv: Sequence[str], words: Sequence[str]) -> list[str]:
    """argv run under the limit words of `split` (argv unchanged without them)."""
    return [*words, *argv] if words else list(argv)
