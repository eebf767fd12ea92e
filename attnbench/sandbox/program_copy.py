"""The program as a room holds it: the judge's sealed copy hard-linked (or any other file copied, read-only),
under the size a program may be, with times that say nothing of when it was built."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from attnbench.sandbox.process import ProgramError


def program_copy(program: Path, folder: Path, cap: int) -> Path:
    """The program in the room's folder: the judge's sealed copy (its own read-only file, as a class's build
    leaves it: staging.take_program) hard-linked, so a class copies each program once, not once per run;
    any other file copied, read-only. One over `cap` bytes is refused (a 1000 MiB hw4 once cost 2 GiB of
    the judge's disk and 14 s a class in copies)."""
    info = os.stat(program)
    if info.st_size > cap:
        raise ProgramError(f"{program}: {info.st_size / 2**20:.0f} MiB, over the {cap >> 20} MiB a program may be "
                           "(--max-program-mib)")
    copy = folder / program.name
    sealed = stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o7222
    if sealed:
        try:
            os.link(program, copy)
            return timeless(copy)
        except OSError:  # another file system: a copy of its own
            pass
    shutil.copyfile(program, copy)
    os.chmod(copy, 0o555)
    return timeless(copy)


def timeless(copy: Path) -> Path:
    """The program's times set to the epoch: its build time was a clock only growing, so a rerun, later than
    every first run, could tell itself from one by the age of /proc/self/exe (red team)."""
    os.utime(copy, (0, 0), follow_symlinks=False)
    return copy
