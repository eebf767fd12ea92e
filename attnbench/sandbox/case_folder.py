"""A run's case folder on the host: where its input and output are, how the program names them, and an input
the room writes into it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

from attnbench.cases.shape import Shape


@dataclass(frozen=True)
class WrittenInput:
    """An input the room writes into the run's case folder itself (a warm-up's throwaway): no file of it on the
    disk first and no copy (t21's 393 MB took 0.26 s to write and copy on an H200's host)."""

    shape: Shape
    write: Callable[[BinaryIO], None]


@dataclass(frozen=True)
class CasePaths:
    """One case's folder on the host, and the paths the program is given (inside the sandbox, if any)."""

    folder: Path
    input: Path
    output: Path
    input_arg: str
    output_arg: str
    cgroup: Path | None = None  # the run's own cgroup (memory.max, pids.max), where one could be made
    cache: Path | None = None  # the run's own copy of the sealed CUDA cache, removed with the run
    cache_capped: bool = False  # that copy sits in a size-capped tmpfs of its own (cache.parent)
    capped: bool = False  # the folder is a size-capped tmpfs of its own (attnbench.sandbox.case_disk)
    # As root in bwrap, the run's /tmp and /dev/shm: tmpfs mounts of their own, capped in bytes AND in files
    # (bwrap's --tmpfs caps bytes only: 470,000 empty files once took 465 MB of kernel memory)
    scratch: tuple[Path, Path] | None = None
    # The input staged once and bound read-only into the box at input_arg (attnbench.sandbox.staged_inputs), not
    # copied into the folder; None: `input` is the run's own copy
    staged: Path | None = None
