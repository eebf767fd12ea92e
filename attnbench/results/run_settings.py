"""What a run was asked to do, beside its timing policy: a saved result set's "settings", as a typed record.

Every field is optional: each kind of run sets its own (a compare its tolerances, a sweep its axis, a judge
its limits and sandbox), and the JSON holds the fields that are set, under the names it always had, so that
files saved before the record existed load unchanged and older readers read new files. Keys this version
does not know are kept in `other` and written back.

History: the settings were a free dict until results schema version 5, written with the keys below; the
record reads every such file and writes the same keys, so the schema's version did not change with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class RunSettings:
    """A run's settings: the check, the verdicts' threshold, the sweep, the judge's limits and sandbox."""

    check_rule: str | None = None  # the check of every cell, in one line (CheckRule.describe)
    atol: float | None = None  # compare: the course rule's tolerances
    rtol: float | None = None
    same_within: float | None = None  # differences smaller than this are SAME
    sweep: str | None = None  # sweep: the axis (SweepAxis.name)
    lab_timing: bool | None = None  # sweep square: timed by the lab's doubling rule
    elapsed_s: float | None = None  # sweep: its wall time
    executor: str | None = None  # where a spread run's cells ran ("local: cpu worker 0, ...", "slurm")
    against: dict[str, Any] | None = None  # compare --against: the verdicts and the run they were against
    interrupted: bool | None = None  # a partial run, saved on Ctrl-C
    time_limits: str | None = None  # judge: the limits, in one line
    launcher: list[str] | None = None  # judge: the words put before the program
    args: list[str] | None = None  # judge: how the program takes its files
    passed: int | None = None  # judge: the cases passed
    judged: int | None = None  # judge: the cases judged
    sandbox: dict[str, Any] | None = None  # judge: how the cases were confined
    sandbox_limits: dict[str, Any] | None = None  # judge: the sandbox's limits, in words
    inputs: str | None = None  # judge: the suite's inputs or fresh ones
    seeds: dict[str, Any] | None = None  # judge on fresh inputs: each case's seed
    grade: int | None = None  # judge of all of t01-t30: the course's grade (results.course_grade)
    grade_rule: str | None = None
    judge_cost: dict[str, Any] | None = None  # judge of one program: its phases and ratio (results.judge_cost)
    other: dict[str, Any] = field(default_factory=dict)  # keys this version does not know, kept as they were

    @classmethod
    def of(cls, settings: RunSettings | dict[str, Any] | None) -> RunSettings:
        """The record itself, or the record of a settings dict (a run's record as it crosses processes)."""
        if isinstance(settings, RunSettings):
            return settings
        return cls.from_dict(settings or {})

    def to_dict(self) -> dict[str, Any]:
        """The settings as saved: the fields that are set, then the unknown keys."""
        known = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "other"}
        return {**{name: value for name, value in known.items() if value is not None}, **self.other}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSettings:
        names = {f.name for f in fields(cls)} - {"other"}
        return cls(**{k: v for k, v in data.items() if k in names},
                   other={k: v for k, v in data.items() if k not in names})
