"""Every process a program started, found and killed: a child subreaper plus a sweep of /proc.

A process group is not enough: a child that calls setsid() leaves it, and a double fork leaves the
parent's tree, since the orphan is handed to init. As a child subreaper (prctl PR_SET_CHILD_SUBREAPER)
this process receives those orphans instead, so every process the program started stays below it in
the process tree, where a sweep of /proc finds it. Where a run has a uid of its own (the fallback as root),
`kill_user` kills every process of that uid at once, whatever its tree and however fast it changes PIDs,
and waits on pidfds until each has exited. Written here because no maintained Python library does this
without psutil's per-process overhead, and /proc's stat and status lines are all it needs.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from attnbench.sandbox import cgroups

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_SWEEP_S = 3.0  # how long the sweep keeps killing before it reports what is left
_RESCAN_S = 0.05  # the longest wait for killed processes to exit before the sweep looks again


@dataclass(frozen=True)
class Leftover:
    """A process still alive after the sweep: its pid and its command line."""

    pid: int
    command: str


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; False where the kernel refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


@contextmanager
def subreaper_restored() -> Iterator[None]:
    """Within the block this process may become its orphans' subreaper (each program run makes it one); after
    it, it is one only if it was before: a long-lived caller that judged once from Python (a notebook) stayed
    every orphan's parent for good, so whatever it ran later left it zombies nobody reaped."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        state = ctypes.c_int(0)
        known = libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(state), 0, 0, 0) == 0
    except (OSError, AttributeError):
        known = False
    try:
        yield
    finally:
        if known and state.value == 0:
            libc.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _proc_bytes(pid: int, name: str) -> bytes | None:
    """/proc/PID/NAME's first 4 KiB (stat and status fit), or None if the process is gone. os.open and one read:
    Path.read_text's text layer cost more than the kernel's answer in scans of every process, several a run."""
    try:
        fd = os.open(f"/proc/{pid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) from /proc/PID/stat, or None if it is gone."""
    text = _proc_bytes(pid, "stat")
    if not text:
        return None
    fields = text[text.rfind(b")") + 2:].split()  # the command name may hold spaces and parentheses
    return int(fields[1]), fields[0].decode()


def descendants(root: int) -> dict[int, str]:
    """Every live process below root in the process tree: pid -> state letter (Z for a zombie)."""
    parents: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                parents[int(entry)] = stat
    below: dict[int, str] = {}
    frontier = {root}
    while frontier:
        frontier = {pid for pid, (ppid, _) in parents.items() if ppid in frontier and pid not in below}
        below.update({pid: parents[pid][1] for pid in frontier})
    return below


def _command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:120] or "?"


def processes_of(uid: int) -> int:
    """How many processes the user uid has now (RLIMIT_NPROC counts them all, not just one program's)."""
    count = 0
    for entry in os.listdir("/proc"):
        try:
            count += entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid
        except OSError:
            pass
    return count


def _reap(pid: int) -> bool:
    """Collect a zombie that is this process's own child (an orphan handed to us, now dead); False when it
    is another's (its parent, alive, collects it)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return False


def sweep(spared: set[int], timeout_s: float = _SWEEP_S) -> list[Leftover]:
    """Kill every descendant of this process that is not in spared, until none is left or timeout_s
    passes; returns what is still alive then (an empty list: every one is gone).

    Only a scan that finds no live descendant and no zombie of this process's to collect ends it. /proc
    is read entry by entry, not as one snapshot: a process listed while alive may fork, exit and be a
    zombie by the time its line is read, and its child, born after the listing, is in no line of this
    scan. It was handed to this process before the zombie's line could say Z, so the next scan finds it.
    (Seen: a double fork's grandchild outliving the judge on a loaded 2-core machine, 1 run in 12.)
    Between scans it waits for the processes it killed to exit (their orphans reach this process only
    then), woken by their pidfds rather than by a timer."""
    me = os.getpid()
    deadline = time.monotonic() + timeout_s
    while True:
        found = {pid: state for pid, state in descendants(me).items() if pid not in spared}
        alive = [pid for pid, state in found.items() if state != "Z"]
        collected = [pid for pid, state in found.items() if state == "Z" and _reap(pid)]
        if not alive and not collected:
            return []
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if time.monotonic() > deadline:
            still = [pid for pid in alive if (_stat(pid) or (0, "Z"))[1] != "Z"]
            return [Leftover(pid, _command(pid)) for pid in still]
        wait_for_exits(alive, min(deadline, time.monotonic() + _RESCAN_S))


def _until_exits(pidfds: list[int], deadline: float) -> tuple[set[int], int | None]:
    """Poll pidfds until each has told its process's exit or the monotonic clock passes deadline: those still
    pending, and when the last exit was told (CLOCK_MONOTONIC, ns; None when none was)."""
    poller = select.poll()
    for fd in pidfds:
        poller.register(fd, select.POLLIN)
    pending, last = set(pidfds), None
    while pending:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            break
        for fd, _ in poller.poll(left_ms):
            poller.unregister(fd)
            pending.discard(fd)
        last = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    return pending, last


def last_exit_of_the_rest(spared: set[int], timeout_s: float = _SWEEP_S) -> int | None:
    """When the last descendant of this process not in spared exited (CLOCK_MONOTONIC, ns), each one found
    running killed first; None when none was running. For the end of a run whose main process has exited
    (reaped or a zombie): what it left running is still its run, until it is gone.

    Each is killed through a pidfd and its exit is told by that pidfd, so the time is the exit's, not that of
    the scan that follows;
    scans repeat until one finds nothing running (a child born after a scan is in the next). One that had
    already exited when its pidfd was opened is dated at its scan's start (bwrap's own init in the box, which
    ends within microseconds of the program: an honest run is not charged the judge's scan). Processes that
    outlast timeout_s are left to the sweep, which reports them. Without pidfds (before Linux 5.3): None."""
    if not (hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")):
        return None
    deadline = time.monotonic() + timeout_s
    last: int | None = None
    me = os.getpid()
    while time.monotonic() < deadline:
        began = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        killed: list[int] = []
        try:
            for pid, state in descendants(me).items():
                if pid in spared or state == "Z":
                    continue
                try:
                    fd = os.pidfd_open(pid)
                except OSError:  # gone already (a zombie its own parent reaped)
                    last = max(last or began, began)
                    continue
                if _exited(fd):  # it exited during the scan
                    os.close(fd)
                    last = max(last or began, began)
                    continue
                killed.append(fd)
                try:
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                except OSError:
                    pass
            if not killed:
                return last
            pending, exited_at = _until_exits(killed, deadline)
            last = exited_at if exited_at is not None else last
            if pending:
                return last
        finally:
            for fd in killed:
                os.close(fd)
    return last


def _exited(pidfd: int) -> bool:
    """Whether the pidfd's process has exited, asked without waiting. poll(), not select(): select() refuses a
    descriptor numbered 1024 or more (ValueError), which a run that left hundreds of processes reached."""
    probe = select.poll()
    probe.register(pidfd, select.POLLIN)
    return bool(probe.poll(0))


def wait_for_exits(pids: list[int], deadline: float, owner: int | None = None) -> list[int]:
    """Wait until each process in pids has exited (a zombie counts) or the monotonic clock passes deadline;
    returns those still running then. Each is watched through a pidfd, which poll() reports the moment the
    process exits (Linux 5.3 on); where pidfds are missing, a short sleep stands in. With `owner`, a pid whose
    real uid is no longer owner once its pidfd is open is another process that took a freed number: skipped."""
    watched: dict[int, int] = {}
    try:
        for pid in pids:
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            except (AttributeError, OSError):  # no pidfds here
                time.sleep(max(0.0, min(0.02, deadline - time.monotonic())))
                return [p for p in pids if _running(p)]
            if owner is not None and _real_uid(pid) != owner:
                os.close(fd)
                continue
            watched[fd] = pid
        pending, _ = _until_exits(list(watched), deadline)
        return sorted(watched[fd] for fd in pending)
    finally:
        for fd in watched:
            os.close(fd)


def _running(pid: int) -> bool:
    return (_stat(pid) or (0, "Z"))[1] != "Z"


def _status_fields(pid: int) -> tuple[int, str] | None:
    """(real uid, state letter) from /proc/PID/status, or None if it is gone."""
    status = _proc_bytes(pid, "status")
    if not status:
        return None
    uid, state = None, ""
    for line in status.splitlines():
        if line.startswith(b"State:"):
            state = line[6:].strip()[:1].decode()
        elif line.startswith(b"Uid:"):
            uid = int(line[4:].split()[0])
            break  # Uid comes after State
    return (uid, state) if uid is not None else None


def _real_uid(pid: int) -> int | None:
    fields = _status_fields(pid)
    return fields[0] if fields else None


def user_processes(uid: int) -> dict[int, str]:
    """Every process whose real uid is uid (from /proc/PID/status): pid -> state letter (Z for a zombie)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _status_fields(int(entry))
            if fields is not None and fields[0] == uid:
                found[int(entry)] = fields[1]
    return found


def processes_of_user(uid: int) -> list[int]:
    """Every live process whose real uid is uid (from /proc/PID/status), zombies left out."""
    return [pid for pid, state in user_processes(uid).items() if state != "Z"]


def signal_all_as(uid: int) -> bool:
    """One kill(-1, SIGKILL) pass as uid, from a child that becomes uid; whether the pass was made (False: the
    child was killed first, by a process of uid that signalled it). OSError when the child cannot become uid.

    One pass is enough: the kernel signals every process the caller may signal while holding the process
    list's lock, which fork needs too, and a fork whose parent has a fatal signal pending fails; so every
    process of uid that exists when the pass runs is killed and none can be born after it. (It answers 0 even
    when it found none of uid: every process it may not signal counts as found.) False too when a process of uid
    stopped the child before its pass."""
    pid = os.fork()
    if pid == 0:  # the child: only system calls, then _exit (no Python clean-up in a forked copy)
        code = 1
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
            code = 0
        finally:
            os._exit(code)
    # Once it is uid, a process of uid may stop it before its pass: a wait for its exit alone then waited for
    # ever (a program spinning on kill(-1, SIGSTOP) held the judge; the fallback's runs see this child, a box's
    # cannot). A stopped child is killed (this process may) and counts as one killed first.
    _, status = os.waitpid(pid, os.WUNTRACED)
    if os.WIFSTOPPED(status):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return False
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
        raise OSError(f"cannot signal as uid {uid}")
    return os.WIFEXITED(status)


def kill_user(uid: int, timeout_s: float = _SWEEP_S) -> list[Leftover]:
    """Kill every process of uid, whatever tree it is in (a uid of one run's own: the judge's fallback as
    root), wait for each to exit, collect those handed to this process, and report any still alive after
    timeout_s (an empty list: every one is gone, its last write done).

    One kill(-1) pass as uid (`signal_all_as`), then one /proc scan for uid: since no process of uid can be
    born after the pass, the scan finds every one still exiting, and their pidfds wake this process when they
    have. The pass is made again only when its child was killed before it (a process of uid may signal it)."""
    deadline = time.monotonic() + timeout_s
    try:
        while not signal_all_as(uid):
            if time.monotonic() > deadline:
                return [Leftover(p, _command(p)) for p in processes_of_user(uid)]
    except OSError:
        return [Leftover(p, _command(p)) for p in processes_of_user(uid)]
    found = user_processes(uid)
    running = wait_for_exits([pid for pid, state in found.items() if state != "Z"], deadline, owner=uid)
    for pid in found:
        _reap(pid)  # an orphan handed to this process (its subreaper), now a zombie
    return [Leftover(p, _command(p)) for p in running if _running(p)]


def kill_run(group: Path | None, uid: int | None, timeout_s: float = _SWEEP_S) -> list[Leftover]:
    """Every process of a run killed and gone: its cgroup's at once where it has one with cgroup.kill
    (`cgroups.kill_and_wait`: every process of the run is in it, whatever its uid), else its uid's (`kill_user`;
    uid None: none of its own, nothing killed here); what is still alive after timeout_s."""
    if group is not None:
        left = cgroups.kill_and_wait(group, timeout_s)
        if left is not None:
            return [Leftover(p, _command(p)) for p in left]
    return kill_user(uid, timeout_s) if uid is not None else []


def reap_orphans(before: set[int]) -> None:
    """Collect the exits of what a worker process left unreaped when it ended (a sandbox's bwrap): a judge that
    is a subreaper inherits them, and no later run's sweep would (they were there before it began, so it spares
    them). `before`: this process's descendants before the workers started."""
    for pid, state in descendants(os.getpid()).items():
        if state == "Z" and pid not in before:
            _reap(pid)  # not this process's child: its own parent collects it
