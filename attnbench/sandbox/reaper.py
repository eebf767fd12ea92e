"""Every process a program started, found and killed: a child subreaper plus a sweep of /proc.

A process group is not enough: a child that calls setsid() leaves it, and a double fork leaves the
parent's tree, since the orphan is handed to init. As a child subreaper (prctl PR_SET_CHILD_SUBREAPER)
this process receives those orphans instead, so every process the program started stays below it in
the process tree, where a sweep of /proc finds it. Written here because no maintained Python library
does this without psutil's per-process overhead, and /proc's stat line is all it needs.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36
_SWEEP_S = 3.0  # how long the sweep keeps killing before it reports what is left
_KILL_PASSES = 64


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


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) from /proc/PID/stat, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()  # the command name may hold spaces and parentheses
    return int(fields[1]), fields[0]


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
    (Seen: a double fork's grandchild outliving the judge on a loaded 2-core machine, 1 run in 12.)"""
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
        time.sleep(0.02)


def processes_of_user(uid: int) -> list[int]:
    """Every live process whose real uid is uid (from /proc/PID/status), zombies left out."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uids = fields.get("Uid", "").split()
        if uids and int(uids[0]) == uid and not fields.get("State", "").strip().startswith("Z"):
            found.append(int(entry))
    return found


def kill_user(uid: int, timeout_s: float = _SWEEP_S) -> list[Leftover]:
    """Kill every process of uid, whatever tree it is in (a uid of one run's own: the judge's fallback as
    root), and report any still alive after timeout_s. A child that becomes uid calls kill(-1, SIGKILL) until
    it fails with ESRCH (the kernel found no process of uid to signal but itself) or _KILL_PASSES times, so
    a fork storm that outran one pass is caught by the next; a /proc scan for uid then decides, and the
    whole is repeated until the scan finds none."""
    deadline = time.monotonic() + timeout_s
    while True:
        pid = os.fork()
        if pid == 0:  # the child: only system calls, then _exit (no Python clean-up in a forked copy)
            code = 1
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                for _ in range(_KILL_PASSES):  # some kernels answer 0 even when none was found: the scan decides
                    try:
                        os.kill(-1, signal.SIGKILL)
                    except ProcessLookupError:
                        code = 0
                        break
            finally:
                os._exit(code)
        os.waitpid(pid, 0)
        sweep(set(descendants(os.getpid())) - set(processes_of_user(uid)), 0.0)  # collect our own zombies
        left = processes_of_user(uid)
        if not left:
            return []
        if time.monotonic() > deadline:
            return [Leftover(p, _command(p)) for p in left]
        time.sleep(0.02)
