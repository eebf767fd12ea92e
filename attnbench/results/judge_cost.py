"""What judging cost beside the programs' own runs: the judge's wall time cut into phases, and its ratio to the
sum of every run of the programs the judge made (the floor: a judge that cost nothing else would be 1.0x)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PHASES = ("builds", "inputs and references", "runs", "checks")  # and REST, whatever none of them covers
REST = "the rest"
PROGRAM_RUNS = "first runs, reruns and warm-ups, passed or not"  # what the programs' runs count


@dataclass(frozen=True)
class JudgeCost:
    """The judge's wall time, the seconds of each phase (REST included: they add up to the wall time), and the
    sum of every run of the programs the judge made (PROGRAM_RUNS): a slow program's time, failed or not, is its
    own, never the judge's. Kernel recordings and --diagnose runs (under a tool's collector) are the judge's."""

    wall_s: float
    phases_s: dict[str, float] = field(default_factory=dict)
    program_runs_s: float = 0.0

    @property
    def ratio(self) -> float | None:
        """The judge's wall time over the sum of the programs' runs; None when nothing ran."""
        return self.wall_s / self.program_runs_s if self.program_runs_s > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"wall_s": self.wall_s, "phases_s": dict(self.phases_s), "program_runs_s": self.program_runs_s,
                "ratio": self.ratio}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeCost:
        return cls(float(data["wall_s"]), {k: float(v) for k, v in data.get("phases_s", {}).items()},
                   float(data.get("program_runs_s", 0.0)))
