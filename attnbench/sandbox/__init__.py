"""The room an untrusted program runs in, a concern of its own that the judge and `exe:` variants call
(as judges call ioi/isolate): `run_program(room, spec) -> ProgramOutcome` (or `run_unfinished`, whose case
folder the caller removes beside its own work).

Behind it: bubblewrap's namespaces or the fallback's own users (room, bwrap_args, fallback_users), resource
limits and cgroups (process, cgroups), the system-call filter, the OOM killer's order, the capped case
disk, CUDA's sealed JIT cache, the reaper of every process a program started, the checks of the output
file it leaves (outcome), and the safe handling of a submission's files (staging)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnbench.sandbox.outcome import ProgramOutcome
    from attnbench.sandbox.program_run import ProgramSpec, run_alone, run_program, run_unfinished
    from attnbench.sandbox.room import MODES, Confinement, Sandbox, SandboxSettings, SandboxUnavailable

# where each name of the package's face lives, imported when first asked for: a process that needs one room of
# the package (a class's build worker: room, process) does not pay for the rest (the output checks and numpy)
_HOMES = {"ProgramOutcome": "outcome", "ProgramSpec": "program_run", "run_alone": "program_run",
          "run_program": "program_run", "run_unfinished": "program_run", "MODES": "room", "Confinement": "room",
          "Sandbox": "room", "SandboxSettings": "room", "SandboxUnavailable": "room"}

__all__ = ["MODES", "Confinement", "ProgramOutcome", "ProgramSpec", "Sandbox", "SandboxSettings",
           "SandboxUnavailable", "run_alone", "run_program", "run_unfinished"]


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
