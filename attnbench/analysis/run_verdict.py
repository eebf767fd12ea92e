"""What `run` makes of its one cell besides the tables: the problems, one line each, and the exit status.

`run` is not gated as a compare is (a wrong output is still timed and written, as the course writes what it
computed); its verdict is read here from the measurement, so the command line only prints the lines and exits
with the status, as it does with a compare's outcome.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from attnbench.results.measurement import Measurement


def run_problems(measurement: Measurement, out: str | os.PathLike | None) -> list[str]:
    """One line per problem of a run, in the order they are told: NaN or Inf without a check (a check has its own
    table), a median below the physical floor, a speed above its unit's peak, a timed sample that failed its check."""
    problems = []
    if measurement.nonfinite and measurement.verification is None:
        problems.append(f"{measurement.nonfinite} of {measurement.shape.elements} elements of {out} are NaN or Inf: "
                        "the output is wrong (run with --check for the worst elements)")
    impossible = measurement.impossible_reason()
    if impossible is not None:
        problems.append(f"IMPOSSIBLE: {measurement.variant} on {measurement.case}: {impossible}")
    suspect = measurement.suspect_reason()
    if suspect is not None:  # its speed is shown, and doubted
        problems.append(f"SUSPECT: {measurement.variant} on {measurement.case}: {suspect}")
    if measurement.timed_check is not None and not measurement.timed_check.passed:  # no speed
        problems.append(measurement.timed_check.describe())
    return problems


def run_exit_status(measurement: Measurement) -> int:
    """1 when the output is wrong (NaN or Inf, or its check failed), the cell has no speed (a failed sample, a
    median below the floor) or its speed is suspect; else 0."""
    verification = measurement.verification
    wrong = measurement.nonfinite or (verification is not None and not verification.passed)
    return 1 if wrong or not measurement.has_speed or measurement.suspect_reason() is not None else 0


@dataclass(frozen=True)
class RunOutcome:
    """What a run leaves for its renderers: the measurement, its problems (one line each) and the exit status."""

    measurement: Measurement
    problems: tuple[str, ...] = ()
    exit_status: int = 0

    @classmethod
    def of(cls, measurement: Measurement, out: str | os.PathLike | None) -> RunOutcome:
        return cls(measurement, tuple(run_problems(measurement, out)), run_exit_status(measurement))

    def to_dict(self) -> dict[str, Any]:
        """The measurement's record with the run's problems and exit status beside it (the docs promise every
        returned object a to_dict and a from_dict)."""
        return {"measurement": self.measurement.to_dict(), "problems": list(self.problems),
                "exit_status": self.exit_status}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunOutcome:
        return cls(Measurement.from_dict(data["measurement"]), tuple(data["problems"]), int(data["exit_status"]))
