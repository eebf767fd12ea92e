"""How a program's run ended, and whether what it left in its case folder may be read as its output.

The room's part of a verdict, in the order the checks run: TIMEOUT, RESOURCE LIMIT (a limit's signal, or an
output at the size cap), CRASH, then the output file: read only when it is a plain file of its own (not a
symbolic or hard link a program made to reach a file it cannot read) of exactly the expected size, and only
after every process the program started is dead, so nothing changes it while it is read. What the values
are worth is the caller's to judge (the judge's rule, a compare's check).
"""

from __future__ import annotations

import os
import re
import signal
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnbench.cases.testcase import Shape, read_output
from attnbench.sandbox.cgroups import LimitsHit
from attnbench.sandbox.process import ProcessLimits, ProcessOutcome, exit_text, last_line

# The endings the room finds, in the order its checks run; None: the program exited normally and its output
# file was read.
TIMEOUT, RESOURCE, CRASH, NO_OUTPUT, SIZE = "TIMEOUT", "RESOURCE LIMIT", "CRASH", "NO OUTPUT", "WRONG SIZE"


@dataclass(frozen=True)
class ProgramOutcome:
    """One run in the room: how its process ended, the ending that stops it short of a check (with its one
    line), or the output it wrote; `survivors` says which of its processes outlived the kill ('' when none)."""

    process: ProcessOutcome
    ending: str | None
    message: str
    output: np.ndarray | None
    limits: ProcessLimits
    survivors: str = ""
    exceeded: str = ""  # its cgroup records a limit the kernel enforced on it (memory, processes): the line saying so

    @property
    def wall_s(self) -> float:
        return self.process.wall_s

    @property
    def returncode(self) -> int | None:
        return self.process.returncode


def _size(count: int) -> str:
    return f"{count / (1 << 20):g} MiB" if count >= 1 << 20 else f"{count} bytes"


def signal_of(returncode: int | None, sandboxed: bool) -> int | None:
    """The signal that ended the program, if one did. bwrap's init reports a signal death as 128+N."""
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    if sandboxed and 128 < returncode <= 128 + 64:
        return returncode - 128
    return None


def survivors_note(outcome: ProcessOutcome) -> str:
    """'' when every process the program started was dead after the kill; else which were not."""
    if outcome.all_ended:
        return ""
    named = ", ".join(f"{p.pid} ({p.command})" for p in outcome.left_running[:3])
    return f"; {len(outcome.left_running)} of its processes were still alive after the kill: {named}"


def _limit_ending(signum: int | None, output: Path, limits: ProcessLimits,
                  streamed_past: bool = False) -> tuple[str, str] | None:
    """RESOURCE LIMIT when a limit stopped the program (by its signal, an output at the size cap, or stdout or
    stderr past it)."""
    if streamed_past:
        return RESOURCE, (f"wrote more than the {_size(limits.file_bytes or 0)} file-size limit to its stdout or "
                          "stderr: stopped")
    if signum == signal.SIGXFSZ or (limits.file_bytes is not None and _file_size(output) >= limits.file_bytes):
        return RESOURCE, f"wrote more than the {_size(limits.file_bytes or 0)} file-size limit: stopped"
    if signum == signal.SIGXCPU:
        return RESOURCE, f"used more than {limits.cpu_s} s of CPU time (its limit): stopped"
    return None


def _file_size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def read_output_file(output: Path, shape: Shape) -> tuple[str, str] | np.ndarray:
    """The output's values, or the ending and the line that say why it is not read."""
    try:
        info = os.lstat(output)
    except OSError:
        return NO_OUTPUT, "the program exited normally but wrote no output file"
    if not stat.S_ISREG(info.st_mode):
        return NO_OUTPUT, "the output is a symbolic link or not a plain file: not read"
    if info.st_nlink != 1:
        return NO_OUTPUT, "the output is a hard link to another file: not read"
    if info.st_size != shape.output_bytes:
        return SIZE, (f"the output is {info.st_size} bytes; {shape} needs 4*B*N*d = {shape.output_bytes} "
                      "(B*N*d float32, no header)")
    try:
        return read_output(output, shape)
    except OSError as exc:
        return NO_OUTPUT, f"the output cannot be read ({exc.strerror}): not judged"


def exceeded_line(hit: LimitsHit, processes: int | None, memory_mib: int | None) -> str:
    """The line naming what the run's cgroup says was exceeded ('' when nothing was)."""
    said = []
    if hit.memory:
        said.append(f"used more than the {memory_mib} MiB memory limit (--memory-limit, its cgroup's): killed")
    if hit.processes:
        said.append(f"tried to run more than {processes} processes and threads (--max-processes, its "
                    "cgroup's): refused")
    return "; ".join(said)


# What a program prints when a fork or a thread was refused (EAGAIN's strerror, the calls' names)
_REFUSED_PROCESS_WORDS = re.compile(r"resource temporarily unavailable|\bfork|pthread_create|\bclone|\bthread",
                                    re.IGNORECASE)


def maybe_exceeded(process: ProcessOutcome, limits: ProcessLimits, watched: tuple[str, ...]) -> str:
    """For a crash under a limit no cgroup watched (RLIMIT_AS, RLIMIT_NPROC: the kernel keeps no count of
    refusals): the limit it may have crossed, said as a possibility. An address-space limit breaks a program
    anywhere (a NULL from malloc, CUDA's context), so it is named on every crash; the process limit where the
    program's stderr speaks of a refused fork or thread."""
    maybe = []
    if limits.memory_bytes is not None and "memory" not in watched:
        maybe.append(f"--memory-limit {limits.memory_bytes >> 20} MiB of address space")
    if (limits.processes is not None and "processes" not in watched
            and _REFUSED_PROCESS_WORDS.search(process.stderr_tail)):
        maybe.append(f"--max-processes {limits.processes}")
    return f" (it may have exceeded {' or '.join(maybe)})" if maybe else ""


def ended(process: ProcessOutcome, output: Path, shape: Shape, limits: ProcessLimits, sandboxed: bool,
          timeout_s: float, exceeded: str = "", watched: tuple[str, ...] = ()) -> ProgramOutcome:
    """The run's outcome from its process's end and its output file; the kill's result is always said true.
    `exceeded`: what the run's cgroup says was exceeded (exceeded_line); a crash with it is a RESOURCE LIMIT.
    `watched`: the limits a cgroup watched; a crash under another may have crossed it, and says so."""
    survivors = survivors_note(process)

    def stopped(ending: str, message: str) -> ProgramOutcome:
        return ProgramOutcome(process, ending, message, None, limits, survivors, exceeded)

    if process.timed_out:
        if survivors:
            return stopped(TIMEOUT, f"still running after {timeout_s:g} s: killed")
        return stopped(TIMEOUT, f"still running after {timeout_s:g} s: killed (with every process it started)")
    signum = signal_of(process.returncode, sandboxed)
    limit = _limit_ending(signum, output, limits, process.stream_overflow)
    if limit is not None:
        return stopped(*limit)
    if process.returncode != 0:
        assert process.returncode is not None
        last = last_line(process.stderr_tail)
        ending = exit_text(-signum) if signum is not None else exit_text(process.returncode)
        words = ending + (f"; its last words: {last}" if last else "")
        if exceeded:
            return stopped(RESOURCE, f"{exceeded}; then it {words}")
        return stopped(CRASH, words + maybe_exceeded(process, limits, watched))
    read = read_output_file(output, shape)
    if isinstance(read, tuple):
        return stopped(*read)
    return ProgramOutcome(process, None, "", read, limits, survivors, exceeded)
