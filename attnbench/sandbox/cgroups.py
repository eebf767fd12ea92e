"""Memory that a run really uses, limited by a cgroup v2 where the judge can make one (as root).

`--memory-limit` as RLIMIT_AS limits address space, which a CUDA program reserves by the tens of GiB
without using it; a cgroup's `memory.max` limits the memory the run's processes really take, all of them
together, and `pids.max` their number whatever their uid. Where no cgroup v2 with the memory controller
can be made (not root, a v1 hierarchy, a container that does not delegate one), the judge falls back to
RLIMIT_AS and says so once. Each run gets a group of its own under one group of this judge; its end
kills every process in it (`cgroup.kill`) and removes it. Written here because no maintained Python
library manages cgroup v2 for a short-lived child without a service manager.
"""

from __future__ import annotations

import os
import secrets
import select
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

_MOUNTS = "/proc/self/mounts"


def _v2_root() -> Path | None:
    try:
        lines = Path(_MOUNTS).read_text().splitlines()
    except OSError:
        return None
    roots = [Path(line.split()[1]) for line in lines if len(line.split()) > 2 and line.split()[2] == "cgroup2"]
    return next((r for r in roots if r == Path("/sys/fs/cgroup")), roots[0] if roots else None)


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


@dataclass
class RunGroups:
    """This judge's cgroup, under which each run gets one of its own."""

    parent: Path
    controllers: tuple[str, ...]

    @classmethod
    def make(cls) -> tuple["RunGroups | None", str]:
        """The judge's group, or None and why not (said once in the run's header)."""
        if os.geteuid() != 0:
            return None, "the judge is not root, so it cannot make a cgroup"
        root = _v2_root()
        if root is None:
            return None, "no cgroup v2 hierarchy is mounted here"
        try:
            available = (root / "cgroup.controllers").read_text().split()
        except OSError as exc:
            return None, f"cgroup v2 cannot be read here ({exc.strerror})"
        wanted = tuple(c for c in ("memory", "pids", "cpuset") if c in available)
        if not wanted:
            return None, "the cgroup v2 here has no memory, pids or cpuset controller"
        parent = root / f"attnbench-judge-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            _write(root / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
            parent.mkdir()
            _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
        except OSError as exc:
            _rmdir(parent)
            return None, f"a cgroup cannot be made here ({exc.strerror})"
        return cls(parent, wanted), ""

    def run_group(self, memory_bytes: int | None, processes: int | None, cpus: Sequence[int] = ()) -> Path:
        """A fresh group for one run, with its limits written: memory, processes (whatever their uid), and
        the CPU cores it may run on (a cpuset the program cannot widen, unlike its affinity)."""
        group = self.parent / f"run-{secrets.token_hex(6)}"
        group.mkdir()
        if cpus and "cpuset" in self.controllers:
            _write(group / "cpuset.cpus", ",".join(map(str, sorted(cpus))))
        if memory_bytes is not None and "memory" in self.controllers:
            _write(group / "memory.max", str(memory_bytes))
            if (group / "memory.swap.max").exists():
                _write(group / "memory.swap.max", "0")
        if processes is not None and "pids" in self.controllers:
            _write(group / "pids.max", str(processes))
        return group

    def close(self) -> None:
        _rmdir(self.parent)


def join(group: Path) -> None:
    """Move the calling process into group (the child, before it drops root and starts the program)."""
    _write(group / "cgroup.procs", str(os.getpid()))


def _events(path: Path) -> dict[str, int]:
    """A flat-keyed events file ("oom_kill 1" a line) as counts; {} where it cannot be read."""
    try:
        return {key: int(value) for key, value in
                (line.split() for line in path.read_text().splitlines() if line.strip())}
    except (OSError, ValueError):
        return {}


@dataclass(frozen=True)
class LimitsHit:
    """Which of a run's cgroup limits the kernel enforced: it killed a process for memory (memory.events
    oom_kill), or refused a fork or a thread at pids.max (pids.events max)."""

    memory: bool = False
    processes: bool = False


def limits_hit(group: Path) -> LimitsHit:
    """What the run's group says was exceeded, read after the run and before `end` removes the group."""
    return LimitsHit(memory=_events(group / "memory.events").get("oom_kill", 0) > 0,
                     processes=_events(group / "pids.events").get("max", 0) > 0)


def kill_and_wait(group: Path, timeout_s: float) -> list[int] | None:
    """Kill every process in the group at once and wait until none is left; the pids still there after timeout_s
    (an empty list: every one has exited, its files closed and its memory gone, as `populated 0` says). None where
    the kernel has no cgroup.kill (before Linux 5.14): the caller kills another way.

    cgroup.kill kills the forks that race it too, and none of the group's processes can leave it (moving a process
    needs write access to the group it goes to, which only root has), so one write ends the whole run, without the
    fork and the /proc scan that killing by uid takes (13 ms a run in a judge on an H200's host). The wait wakes on
    the change of cgroup.events (the kernel notifies its pollers), not on a timer."""
    if not (group / "cgroup.kill").exists():
        return None
    events = os.open(group / "cgroup.events", os.O_RDONLY)
    try:
        watch = select.poll()
        watch.register(events, select.POLLPRI | select.POLLERR)
        _write(group / "cgroup.kill", "1")
        deadline = time.monotonic() + timeout_s
        while _populated(events):
            left = deadline - time.monotonic()
            if left <= 0:
                return _still_there(group, events)
            watch.poll(min(left, 0.05) * 1000)  # woken by the change; the 50 ms bound keeps a missed wake short
        return []
    finally:
        os.close(events)


def _populated(events: int) -> bool:
    """Whether cgroup.events (open as `events`) says a live process is in the group (read again from its start)."""
    return b"populated 1" in os.pread(events, 4096, 0)


def _still_there(group: Path, events: int) -> list[int]:
    """What keeps the group populated past the wait: its processes, else its threads. cgroup.procs leaves out a
    process whose leader has exited and whose every thread is dying: a thread still on its way out (freeing a large
    memory in exit_mm, before its files are closed) is named by cgroup.threads only, and an empty cgroup.procs read
    as "every one has exited" (red team 18). Pid 0 where the group is still populated yet names no task at all."""
    left = _pids(group / "cgroup.procs") or _pids(group / "cgroup.threads")
    return left if left or not _populated(events) else [0]


def _pids(listing: Path) -> list[int]:
    try:
        return [int(p) for p in listing.read_text().split()]
    except OSError:
        return []


def end(group: Path, timeout_s: float = 3.0) -> None:
    """Kill every process in the group and remove it (what cannot be removed in timeout_s is left): waited for by
    its events where the kernel has cgroup.kill (`kill_and_wait`: cgroup.procs alone, empty while a thread was still
    exiting, let the removal fail and left the group's folder), else process by process."""
    try:
        waited = kill_and_wait(group, timeout_s)
    except OSError:  # its events cannot be read (the group is gone, say): as before, by its process list
        waited = None
    if waited is None:
        _kill_listed(group, timeout_s)
    _rmdir(group)


def _kill_listed(group: Path, timeout_s: float) -> None:
    """Kill the group's listed processes until none is listed or timeout_s passes (a kernel without cgroup.kill)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = _pids(group / "cgroup.procs")
        if not pids:  # none left, or the group is gone
            break
        try:
            _write(group / "cgroup.kill", "1")
        except OSError:
            for pid in pids:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
        time.sleep(0.01)


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass
