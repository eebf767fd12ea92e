"""The one call that runs a program on a case in the room: `run_program(room, spec) -> ProgramOutcome`.

The judge calls it for every judged case (in the room it opened for the program, whose JIT cache a warm-up
filled), and a compare for an `exe:` variant's cell (`run_alone`: a room of its own for the one run).
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np

from attnbench.cases.testcase import Shape, write_repeated_into
from attnbench.sandbox.outcome import ProgramOutcome, ended, exceeded_line
from attnbench.sandbox.process import ProgramError
from attnbench.sandbox.reaper import reap_orphans
from attnbench.sandbox.case_folder import WrittenInput
from attnbench.sandbox.room import Confinement, Sandbox, SandboxSettings, remove_rooms_of_the_gone

DEFAULT_ARGS = ("{in}", "{out}")
THROWAWAY_BLOCK = 1 << 20  # a warm-up's distinct values (4 MiB), repeated to its shape


@dataclass(frozen=True)
class ProgramSpec:
    """One run: the case's label and input, the shape its output must have, how long it may take, and how the
    program is called (its argument template, the launcher that wraps the room)."""

    label: str
    input_path: Path
    shape: Shape
    timeout_s: float
    args: tuple[str, ...] = DEFAULT_ARGS
    launcher: tuple[str, ...] = ()
    tool: tuple[str, ...] = ()  # words before the program inside the room (compute-sanitizer, for a diagnosis)
    written: WrittenInput | None = field(default=None, compare=False)  # an input the room writes (input_path: none)

    def argv(self, program: str, input_arg: str, output_arg: str) -> list[str]:
        """The program (as the room names it) and its arguments, without the launcher."""
        return [*self.tool, program, *(a.replace("{in}", input_arg).replace("{out}", output_arg) for a in self.args)]


def run_program(room: Sandbox, spec: ProgramSpec, before_launch: Callable[[], None] | None = None) -> ProgramOutcome:
    """Run the room's program once on the case, in a fresh case folder with its own copy of the input, under
    the case's limits; every process it started is killed when it ends or its time is up. The outcome says
    how it ended, and holds its output when that was a sound file of the right size. `before_launch` is called
    once the case folder is ready, right before the program starts (what it raises ends the run unstarted)."""
    outcome, finish = run_unfinished(room, spec, before_launch)
    finish()
    return outcome


def run_unfinished(room: Sandbox, spec: ProgramSpec,
                   before_launch: Callable[[], None] | None = None) -> tuple[ProgramOutcome, Callable[[], None]]:
    """run_program's run, its outcome read, and the step that removes its case folder (Sandbox.finish), for the
    caller to take once, beside the output's check (the folder holds nothing the verdict reads any more; the room's
    close removes it where that step is never taken). Where the run fails, the folder is removed before it raises."""
    case = room.prepare(spec.label, spec.input_path, written=spec.written)
    limits = room.limits_for(spec.shape.output_bytes, spec.timeout_s)
    try:
        if before_launch is not None:
            before_launch()
        argv = spec.argv(room.program_path(), case.input_arg, case.output_arg)
        process = room.run(argv, case, spec.timeout_s, limits, spec.launcher)
        exceeded = exceeded_line(room.limits_hit(case), room.settings.processes, room.settings.memory_mb)
        outcome = ended(process, case.output, spec.shape, limits, room.confinement.sandboxed, spec.timeout_s,
                        exceeded, room.watched_limits(case))
    except BaseException:
        room.finish(case)
        raise
    return outcome, lambda: room.finish(case)


@dataclass(frozen=True)
class WarmUp:
    """How a warm-up went: why its cache was dropped ('' when kept), the room's ending of its run (TIMEOUT,
    CRASH, ...; None when it exited normally or never started) and how long the program ran."""

    dropped: str = ""
    ending: str | None = None
    wall_s: float = 0.0


def clear_after_workers(before: set[int]) -> None:
    """What a pool's workers left when they ended: their unreaped processes (`reap_orphans`, `before`: this
    process's descendants before they started), and the rooms of any killed outright (a
    worker stopped by Ctrl-C or SIGTERM is killed 2 s later: one still unmounting its room's view under load left
    the room, its tmpfs and its overlays mounted in the judge's temporary folder)."""
    reap_orphans(before)
    remove_rooms_of_the_gone()


def warm_up(room: Sandbox, spec: ProgramSpec, before_launch: Callable[[], None] | None = None) -> WarmUp:
    """One run of the room's program on a throwaway input of `spec`'s shape (fresh random values, so no case's
    answer can be kept), neither timed nor judged: it fills CUDA's JIT cache (a room opened with
    `cache_writable`), which is then sealed; from then on each run of the room gets a copy of its own. Whatever
    the run does or fails to do is no verdict: it is reported (`WarmUp`) for the caller to weigh.
    `before_launch`: as run_program's (the caller's work that may go on while the throwaway input is written)."""
    outcome = None
    written = WrittenInput(spec.shape, lambda f: write_throwaway_into(f, spec.shape))
    try:
        outcome = run_program(room, replace(spec, label="warmup", input_path=Path("warmup.in"), written=written),
                              before_launch)
    except ProgramError:
        pass  # a program that cannot start says so in its first real run
    dropped = room.seal_warm_cache()
    return WarmUp(dropped, outcome.ending, outcome.wall_s) if outcome is not None else WarmUp(dropped)


def throwaway_block(shape: Shape) -> np.ndarray:
    """Values uniform in the suite's [-3, 3), from numpy's default generator on a secret seed: a warm-up's input
    needs no seed anyone can rebuild. A block of at most THROWAWAY_BLOCK values, which the input repeats to the
    shape's size: the warm-up's output is never read, and drawing all of t21's 98 million values took 0.67 s
    of a one-program judge on an H200's host (a warm-up runs once per submission and round)."""
    block = np.random.default_rng(secrets.randbits(128)).random(min(3 * shape.elements, THROWAWAY_BLOCK),
                                                                 dtype=np.float32)
    block *= 6.0
    block -= 3.0
    return block


def write_throwaway_into(f: BinaryIO, shape: Shape) -> None:
    """A warm-up's input, `throwaway_block` repeated to the shape's size, written into an open file block by block: never held whole
    (making t21's 393 MB in memory first took 0.11 s of every warm-up on an H200's host)."""
    write_repeated_into(f, shape, throwaway_block(shape))


class WarmCaches:
    """The CUDA JIT caches of a process's `exe:` programs, one per program and sandbox mode, for the life of
    the process, each filled by one `warm_up`, as a judged submission's is: without it a program built as PTX
    would compile its kernels in every cell (about 2 s on a Hopper GPU), and its process time would be the
    driver's."""

    def __init__(self) -> None:
        self.root: Path | None = None
        self.caches: dict[tuple[str, str], Path] = {}

    def _folder(self) -> Path:
        if self.root is None:
            # the programs' users may pass through, not list: each cache's name is a secret
            self.root = Path(tempfile.mkdtemp(prefix="attnbench-exe-caches-"))
            os.chmod(self.root, 0o711)
            atexit.register(shutil.rmtree, self.root, True)
        return self.root / secrets.token_hex(16)

    def cache_for(self, program: Path, spec: ProgramSpec, settings: SandboxSettings) -> Path:
        """The program's sealed cache, warmed up first if this is its first run."""
        key = (os.path.realpath(program), settings.mode)
        if key not in self.caches:
            cache = self._folder()
            room = Sandbox.open(program, settings, bool(spec.launcher), cuda_cache=cache, cache_writable=True)
            try:
                warm_up(room, spec)
            finally:
                room.close()
            self.caches[key] = cache
        return self.caches[key]


WARM_CACHES = WarmCaches()


def run_alone(program: Path, spec: ProgramSpec, settings: SandboxSettings) -> tuple[ProgramOutcome, Confinement]:
    """One run in a room of its own (a compare's `exe:` cell) with a copy of the program's sealed JIT cache
    (`WarmCaches`), and how it was confined. SandboxUnavailable when `settings.mode` is "required" and no
    sandbox can be made here."""
    cache = WARM_CACHES.cache_for(program, spec, settings)
    room = Sandbox.open(program, settings, bool(spec.launcher), cuda_cache=cache)
    try:
        return run_program(room, spec), room.confinement
    finally:
        room.close()
