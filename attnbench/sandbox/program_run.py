"""The one call that runs a program on a case in the room: `run_program(room, spec) -> ProgramOutcome`.

The judge calls it for every judged case (in the room it opened for the program, whose JIT cache a warm-up
filled), and a compare for an `exe:` variant's cell (`run_alone`: a room of its own for the one run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from attnbench.cases.testcase import Shape
from attnbench.sandbox.outcome import ProgramOutcome, ended
from attnbench.sandbox.room import Confinement, Sandbox, SandboxSettings

DEFAULT_ARGS = ("{in}", "{out}")


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

    def argv(self, program: str, input_arg: str, output_arg: str) -> list[str]:
        """The program (as the room names it) and its arguments, without the launcher."""
        return [program, *(a.replace("{in}", input_arg).replace("{out}", output_arg) for a in self.args)]


def run_program(room: Sandbox, spec: ProgramSpec) -> ProgramOutcome:
    """Run the room's program once on the case, in a fresh case folder with its own copy of the input, under
    the case's limits; every process it started is killed when it ends or its time is up. The outcome says
    how it ended, and holds its output when that was a sound file of the right size."""
    case = room.prepare(spec.label, spec.input_path)
    limits = room.limits_for(spec.shape.output_bytes, spec.timeout_s)
    try:
        argv = spec.argv(room.program_path(), case.input_arg, case.output_arg)
        process = room.run(argv, case, spec.timeout_s, limits, spec.launcher)
        memory = (f"used more than the {room.settings.memory_mb} MiB memory limit (its cgroup's): killed"
                  if room.out_of_memory(case) else "")
        return ended(process, case.output, spec.shape, limits, room.confinement.sandboxed, spec.timeout_s, memory)
    finally:
        room.finish(case)


def run_alone(program: Path, spec: ProgramSpec, settings: SandboxSettings) -> tuple[ProgramOutcome, Confinement]:
    """One run in a room of its own (a compare's `exe:` cell), and how it was confined.
    SandboxUnavailable when `settings.mode` is "required" and no sandbox can be made here."""
    room = Sandbox.open(program, settings, bool(spec.launcher), cache_writable=True)
    try:
        return run_program(room, spec), room.confinement
    finally:
        room.close()
