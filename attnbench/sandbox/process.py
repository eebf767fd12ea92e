"""One run of a whole program as `PROGRAM IN OUT`: in its own process group, under resource limits,
wall-clocked from launch to exit (from the exec of its command, the box's or the program's: the judge's own fork
and the child's steps before exec are not the program's time; to the exit of the last process of the run: what its
main process leaves running is still its run).

When it ends (or its time is up) every process it started is killed: its group first, then every
descendant a sweep of /proc still finds (this process is their subreaper, so a setsid() and a double
fork stay below it: attnbench.sandbox.reaper). Limits on file size, processes, memory and CPU time are
set in the child before it starts; the room adds its namespaces around the command
(attnbench.sandbox.room).
"""

from __future__ import annotations

import mmap
import os
import resource
import select
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from attnbench.errors import AttnbenchError
from attnbench.printable import printable
from attnbench.sandbox.reaper import (Leftover, become_subreaper, descendants, kill_run, kill_user, last_exit_of_the_rest,
                                      processes_of, sweep)

_TAIL_BYTES = 2000
# The longest time a run or a build may be given (11.6 days): 1e300 s overflowed the conversion of the wait
MAX_WAIT_S = 1_000_000.0


class ProgramError(AttnbenchError):
    """The program, its argument template or the time-limits file cannot be used."""

    exit_code = 2


# A student's submission handed in packed: told to unpack it, never to chmod it
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip", ".gz", ".7z", ".rar")


def check_program(program: str) -> Path:
    """The program's absolute path, after checking it exists and may be run; one line naming it if not."""
    path = Path(program)
    if not path.exists():
        raise ProgramError(f"{program}: no such program")
    if path.is_dir():
        raise ProgramError(f"{program}: is a folder, not a program")
    if not os.access(path, os.X_OK):
        if path.suffix == ".hip":  # "build it first (`attnbench judge x.hip` builds a .c or .cu itself)" ran in a circle
            raise ProgramError(f"{program}: a HIP source, the course's AMD part: attnbench judges CUDA and C programs, "
                               "not HIP")
        if path.suffix in (".c", ".cu", ".cpp", ".cc"):  # chmod +x of a source was the advice
            raise ProgramError(f"{program}: a source file, not a program: build it first (`attnbench judge "
                               f"{shlex.quote(program)}` builds a .c or .cu itself)")
        if path.name in ("Makefile", "makefile", "GNUmakefile"):  # chmod +x of a Makefile was the advice
            raise ProgramError(f"{program}: a Makefile, not a program: judge its folder (`attnbench judge "
                               f"{shlex.quote(str(path.parent))}` runs `make hw4` there)")
        if path.name.lower().endswith(ARCHIVE_SUFFIXES):
            raise ProgramError(f"{program}: an archive, not a program: unpack it into a folder and judge that")
        raise ProgramError(f"{program}: is not executable (chmod +x {shlex.quote(program)}, or build it first)")
    return path.resolve()


@dataclass(frozen=True)
class ProcessLimits:
    """Resource limits set in the program's process before it starts (None: not limited)."""

    file_bytes: int | None = None  # RLIMIT_FSIZE: the largest file it may write; also what stdout or stderr may carry
    processes: int | None = None  # RLIMIT_NPROC: processes and threads beyond those its user already has
    memory_bytes: int | None = None  # RLIMIT_AS: address space; CUDA reserves far more than it uses
    cpu_s: int | None = None  # RLIMIT_CPU: CPU seconds of each process

    def to_dict(self) -> dict[str, int | None]:
        return {"file_bytes": self.file_bytes, "processes": self.processes, "memory_bytes": self.memory_bytes,
                "cpu_s": self.cpu_s}


@dataclass(frozen=True)
class ProcessOutcome:
    """How one run of the program ended."""

    returncode: int | None  # None when it was killed at the timeout
    wall_s: float
    timed_out: bool
    stderr_tail: str
    left_running: tuple[Leftover, ...] = ()  # processes the sweep could not kill (none, normally)
    stdout_tail: str = ""
    stream_overflow: bool = False  # it wrote past its file-size limit on stdout or stderr, and was stopped

    @property
    def all_ended(self) -> bool:
        """True when no process the program started was alive after the sweep."""
        return not self.left_running


# How long the program's own process may take to end once SIGKILLed. A process stuck in the kernel never ends: a
# fallback program that mounted a FUSE file system of its own (in a user namespace) and asked it a question its own
# server never answers sat in D state after SIGKILL, and an endless wait for it held the judge, Ctrl-C included (red
# team 26). Past this, it is left to the sweep, which reports it as still running.
GONE_S = 3.0


def _kill_group(process: subprocess.Popen, timeout_s: float = GONE_S) -> bool:
    """The program's group SIGKILLed and its main process waited for, at most timeout_s; whether it ended."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False
    return True


def _limiter(limits: ProcessLimits, uid: int, first: Callable[[], None] | None = None,
             drop_to: int | None = None, last: Callable[[], None] | None = None,
             launched: "LaunchClock | None" = None) -> Callable[[], None]:
    """The function the child runs before exec: `first` (as the judge's user: joining a cgroup, say), then
    each limit, soft and hard alike, then (given `drop_to`) the switch to that uid and group, then `last`
    (a system-call filter, which must come after every call it might refuse), then the time into `launched`."""
    # no core dump, whatever the judge's own limit: a pipe in core_pattern (systemd-coredump, apport) stores and
    # compresses each one outside the run's folder, cgroup and cores, beside other runs (red team)
    settings = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, limits.file_bytes),
                (resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_CPU, limits.cpu_s)]
    if limits.processes is not None:
        # RLIMIT_NPROC counts every process of the user, so the bound is what it has now plus the allowance
        settings.append((resource.RLIMIT_NPROC, processes_of(uid) + limits.processes))
    chosen = [(which, value) for which, value in settings if value is not None]

    def set_limits() -> None:
        if first is not None:
            first()
        for which, value in chosen:
            # a hard CPU limit above the soft one: SIGXCPU (named a CPU-time limit) comes before SIGKILL
            resource.setrlimit(which, (value, value + 1 if which == resource.RLIMIT_CPU else value))
        if drop_to is not None:
            os.setgroups([])
            os.setgid(drop_to)
            os.setuid(drop_to)
        if last is not None:
            last()
        if launched is not None:
            launched.stamp()

    return set_limits


class LaunchClock:
    """When the child was about to exec, stamped by its last step before exec into a page it shares with this
    process, and when the run ended: its wall time. The judge's fork and the child's steps took 27 ms a run in
    a judge on an H200's host (joining the run's cgroup, 19 ms: a cgroup migration waits for an RCU grace
    period), all counted as the program's when the clock started before the fork. The page is an anonymous
    shared map, gone from the child at its exec, so nothing the program runs can write the stamp; the clock is
    CLOCK_MONOTONIC (the vDSO's: no system call a filter could refuse)."""

    def __init__(self) -> None:
        self._page = mmap.mmap(-1, 8)
        self.forked = time.clock_gettime_ns(time.CLOCK_MONOTONIC)

    def stamp(self) -> None:
        self._page[:8] = time.clock_gettime_ns(time.CLOCK_MONOTONIC).to_bytes(8, "little")

    def wall_s(self, until: int | None = None) -> float:
        """Seconds from the exec (from before the fork where the child never stamped) to now, or to `until` (a
        CLOCK_MONOTONIC time in ns, taken after this clock's making)."""
        launched = int.from_bytes(self._page[:8], "little")
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC) if until is None else until
        start = launched if self.forked <= launched <= now else self.forked
        return (now - start) / 1e9

    def close(self) -> None:
        self._page.close()


def run_process(argv: Sequence[str], cwd: Path, timeout_s: float, *, limits: ProcessLimits | None = None,
                user: int | None = None, env: dict[str, str] | None = None, sole_user: bool = False,
                before_exec: Callable[[], None] | None = None,
                after_limits: Callable[[], None] | None = None,
                stream_bytes: int | None = None, group: Path | None = None) -> ProcessOutcome:
    """Run argv in its own process group (as uid `user` if given, under `limits`); wall-clock it from its exec
    to its exit, or to the exit of what it left running, killed then (`LaunchClock`, `last_exit_of_the_rest`); kill the group at the timeout; then kill every descendant left and report any still alive.
    Its stdout and stderr are pipes this process drains, keeping the last _TAIL_BYTES of each: nothing it
    prints lands on a disk, and past `stream_bytes` (by default `limits.file_bytes`) on either it is stopped
    (`stream_overflow`): a sandbox that sets the file-size limit inside its box still caps the pipes here. With
    `sole_user` (uid `user` belongs to this run alone), every process of that uid is killed too, whatever
    tree it is in; with `group` (the run's cgroup, which `before_exec` joins), every process in it, at once
    (`kill_run`). `before_exec` runs in the child as the judge's user, before the limits and the switch to
    `user` (to join a cgroup); `after_limits` runs last, as `user`, just before exec (the judge's system-call
    filter).

    An orphan carries no trace of who started it, so the sweep kills every descendant of this process that
    appeared while argv ran: run one program at a time per process (concurrent cases belong in separate
    worker processes)."""
    become_subreaper()
    spared = set(descendants(os.getpid()))
    own_steps = before_exec is not None or after_limits is not None  # then the uid switch is ours, in order
    ids = {"user": user, "group": user, "extra_groups": []} if user is not None and not own_steps else {}
    clock = LaunchClock()
    preexec = _limiter(limits or ProcessLimits(), os.getuid() if user is None else user, before_exec,  # no core, ever
                       user if own_steps else None, after_limits, clock)
    streams = _Streams(stream_bytes if stream_bytes is not None else (limits or ProcessLimits()).file_bytes)
    try:
        process = subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=streams.out_w,
                                   stderr=streams.err_w, start_new_session=True, env=env, preexec_fn=preexec, **ids)
    except (OSError, subprocess.SubprocessError) as exc:
        streams.close()
        clock.close()
        raise ProgramError(f"{argv[0]}: cannot be started ({getattr(exc, 'strerror', None) or exc})") from None
    streams.parent_started()
    try:
        try:
            exited = _wait_for_exit(process, timeout_s, streams)
            wall = clock.wall_s()
            if exited:
                # Its run ends with the last process it started, not with its main process: a helper that did the
                # work and wrote OUT, then let the main process exit first, had its own exit (a CUDA context's
                # teardown, its memory freed) and whatever it did until it was killed counted nowhere, in the box
                # (bwrap's outer process exits with the program's main one) as in the fallback (red team 14)
                last = last_exit_of_the_rest(spared | {process.pid})
                if last is not None:
                    wall = clock.wall_s(last)
                returncode: int | None = process.wait()
                timed_out = False
            elif streams.overflow:
                _kill_group(process)
                returncode, timed_out = process.returncode, False
            else:
                _kill_group(process)
                returncode, timed_out = None, True
        except BaseException:  # Ctrl-C: take the program's whole group down with us (its uid first)
            if sole_user and user is not None:
                kill_user(user)
            _kill_group(process)
            sweep(spared)
            raise
        # A program that exits while children it started keep running: those are not its output. Its uid
        # first, when the run has one of its own: one pass kills every process of it at once, where a sweep that
        # lists /proc and kills what it listed can be outrun for a while by a process that keeps changing its PID.
        left = kill_run(group, user if sole_user else None)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        left = [*left, *(p for p in sweep(spared) if p.pid not in {q.pid for q in left})]
        streams.drain_left()
    finally:
        streams.close()
        clock.close()
    return ProcessOutcome(returncode, wall, timed_out, streams.tail(streams.err_r), tuple(left),
                          streams.tail(streams.out_r), streams.overflow)


class _Streams:
    """The program's stdout and stderr as pipes: read as they fill, the last _TAIL_BYTES of each kept, their
    bytes counted against `cap`. Files on the judge's disk once let a program reserve that disk whole with
    fallocate(FALLOC_FL_KEEP_SIZE), past RLIMIT_FSIZE, and showed it the judge's folders through
    /proc/self/fd; a pipe holds 64 KiB of the judge's memory and nothing else."""

    def __init__(self, cap: int | None) -> None:
        self.cap = cap
        self.out_r, self.out_w = os.pipe()
        self.err_r, self.err_w = os.pipe()
        for fd in (self.out_r, self.err_r):
            os.set_blocking(fd, False)
        self.kept = {self.out_r: bytearray(), self.err_r: bytearray()}
        self.count = {self.out_r: 0, self.err_r: 0}
        self.open = {self.out_r, self.err_r}
        self.overflow = False

    def parent_started(self) -> None:
        """The child holds the write ends now: the parent's copies go, so the pipes end with its writers."""
        for fd in (self.out_w, self.err_w):
            os.close(fd)
        self.out_w = self.err_w = -1

    def read(self, fd: int) -> None:
        """What fd holds now (not blocking); EOF closes it."""
        while fd in self.open:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.open.discard(fd)
                return
            self.count[fd] += len(chunk)
            kept = self.kept[fd]
            kept += chunk
            del kept[:-_TAIL_BYTES]
            if self.cap is not None and self.count[fd] > self.cap:
                self.overflow = True

    def drain_left(self) -> None:
        """After every writer is dead: what the pipes still hold."""
        for fd in list(self.open):
            self.read(fd)

    def tail(self, fd: int) -> str:
        return bytes(self.kept[fd]).decode(errors="replace")

    def close(self) -> None:
        for fd in (self.out_r, self.err_r, self.out_w, self.err_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


def _wait_for_exit(process: subprocess.Popen, timeout_s: float, streams: _Streams) -> bool:
    """Whether the process exited within timeout_s, told the moment it exits (it is not reaped here), its
    pipes drained meanwhile; False too when it wrote past the cap (streams.overflow).

    Popen.wait(timeout) polls with sleeps that grow to 50 ms, so every wall time came out in steps of up to
    50 ms: programs 10-40 ms apart tied, or one just past a step lost to one just before it. A pidfd is
    readable when the process exits, and poll() wakes on it at once (Linux 5.3 on), as on the pipes."""
    deadline = time.monotonic() + timeout_s
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        pidfd = None
        waiter = _exit_waiter(process)
    try:
        poller = select.poll()
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        for fd in streams.open:
            poller.register(fd, select.POLLIN)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            wait_ms = int(left * 1000) + 1 if pidfd is not None else min(int(left * 1000) + 1, 5)
            for fd, _ in poller.poll(wait_ms):
                if fd == pidfd:
                    return True
                streams.read(fd)
                if fd not in streams.open:
                    poller.unregister(fd)
                if streams.overflow:
                    return False
            if pidfd is None and waiter.is_set():
                return True
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _exit_waiter(process: subprocess.Popen):  # noqa: ANN202 - a threading.Event
    """Where there is no pidfd: an event a thread sets when the process exits (not reaped)."""
    import threading

    exited = threading.Event()

    def wait() -> None:
        os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # told of the exit, the child left to reap
        exited.set()

    threading.Thread(target=wait, daemon=True).start()
    return exited


def exit_text(returncode: int) -> str:
    """'killed by signal SIGSEGV' or 'exited with status 3'."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exited with status {returncode}"


def last_line(text: str) -> str:
    """The last line the program wrote that is not blank, cut to 200 characters, its control characters
    escaped (a program's words never reach a terminal raw)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return printable(lines[-1][:200]) if lines else ""
