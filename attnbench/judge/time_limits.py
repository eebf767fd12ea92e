"""Seconds allowed per case: the course's (set for a GTX 1080), none, or a user's TOML file."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from attnbench.sandbox.process import ProgramError

COURSE_LIMITS_DEVICE = "GTX 1080"
COURSE_LIMITS_TEXT = "t01-t10 2 s, t11-t20 6 s, t21-t30 10 s"


def course_limit(label: str) -> float | None:
    """The course's whole-program limit for t01..t30 (seconds, on a GTX 1080), None for other cases."""
    match = re.fullmatch(r"t(\d\d)", label)
    if not match or not 1 <= int(match[1]) <= 30:
        return None
    number = int(match[1])
    return 2.0 if number <= 10 else 6.0 if number <= 20 else 10.0


@dataclass(frozen=True)
class TimeLimits:
    """Seconds allowed per case: the course's, none, or a user's file."""

    source: str  # "course", "none", or the file's path
    limits: dict[str, float] = field(default_factory=dict)
    default: float | None = None

    def limit_for(self, label: str) -> float | None:
        if self.source == "course":
            return course_limit(label)
        return self.limits.get(label, self.default)

    def describe(self) -> str:
        if self.source == "course":
            return f"the course's limits ({COURSE_LIMITS_TEXT}), set for a {COURSE_LIMITS_DEVICE}, not for this machine"
        if self.source == "none":
            return "no time limits"
        return f"limits from {self.source}"


def load_time_limits(spec: str) -> TimeLimits:
    """`course`, `none`, or a TOML file of `case = seconds` lines (and optionally `default = seconds`)."""
    if spec in ("course", "none"):
        return TimeLimits(spec)
    from attnbench.kernels.user import read_toml

    data = read_toml(Path(spec), ProgramError)
    limits: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ProgramError(f"{spec}: {key} = {value!r}: a limit is a positive number of seconds")
        limits[key] = float(value)
    default = limits.pop("default", None)
    return TimeLimits(spec, limits, default)


