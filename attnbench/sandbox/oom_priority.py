"""Who the kernel's OOM killer takes first when memory runs out: a judged program, never the judge.

Without a memory limit, forty children of 30 MiB each are each smaller than the judge, and the OOM killer
picks the largest process: the judge, which then leaves no scoreboard and its temporary folders (fresh
inputs among them) behind. So every judged run and build sets its own `oom_score_adj` to the most
killable value before exec (anyone may raise their own), and a judge running as root lowers its own for
the length of a class (only root may lower it), restoring it afterwards.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

PROGRAM_ADJ = 1000  # the first the OOM killer takes
JUDGE_ADJ = -900  # nearly never taken, yet not exempt (-1000 would let the host's own services go first)
_SELF = Path("/proc/self/oom_score_adj")


def make_this_process_first() -> None:
    """In a run's child, before the uid switch and the filter: the OOM killer takes it first (where the
    kernel has the setting; nowhere else is there one to set)."""
    try:
        fd = os.open(_SELF, os.O_WRONLY)
    except OSError:
        return
    try:
        os.write(fd, b"%d" % PROGRAM_ADJ)
    finally:
        os.close(fd)


def current() -> int | None:
    """This process's oom_score_adj, or None where there is none."""
    try:
        return int(_SELF.read_text().strip())
    except (OSError, ValueError):
        return None


def why_not_lowered() -> str:
    """Why judge_last could not lower this process's setting, in a few words."""
    now = current()
    if now is None:
        return "this system has no such setting"
    if os.geteuid() != 0:
        return "it needs root"
    if now <= JUDGE_ADJ:
        return f"it is already {now}"
    return "the system refused it, although the judge runs as root (no CAP_SYS_RESOURCE?)"


@contextlib.contextmanager
def judge_last() -> Iterator[int | None]:
    """While inside, this process (as root) is nearly the last the OOM killer takes; yields the value set
    (None where it could not be lowered: not root, or no such setting)."""
    before = current()
    lowered = None
    if before is not None and os.geteuid() == 0 and before > JUDGE_ADJ:
        try:
            _SELF.write_text(str(JUDGE_ADJ))
            lowered = JUDGE_ADJ
        except OSError:
            pass
    try:
        yield lowered
    finally:
        if lowered is not None and before is not None:
            with contextlib.suppress(OSError):
                _SELF.write_text(str(before))
