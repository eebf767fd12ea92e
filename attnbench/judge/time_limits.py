"""Seconds allowed per case: the course's (suite.json records them, set for a GTX 1080), the 2024 course's on
its RTX 3070 (a shipped file), none, or a user's TOML file.

The 2024 course judged every program on two machines, a GTX 1080 (2 / 6 / 10 s) and an RTX 3070
(1 / 3 / 5 s), and took the better of the two for each student; attnbench judges on one machine at a time,
so the better-of-two is a TA's to take between two scoreboards."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

from attnbench import locations
from attnbench.cases.suite import SUITE, TIME_LIMITS_SET_FOR
from attnbench.sandbox.process import MAX_WAIT_S, ProgramError

# Ready limit files shipped with the suite: the name --time-limits takes, the file, and how it is described.
PRESETS = {"course-rtx3070": ("limits_rtx3070_2024.toml", "the 2024 course's limits on its RTX 3070 "
                              "(t01-t10 1 s, t11-t20 3 s, t21-t30 5 s; the course took the better of it and the "
                              "GTX 1080)")}


def course_limit(label: str) -> float | None:
    """The course's whole-program limit for a suite case (seconds, as suite.json records it), None for
    cases without one."""
    case = SUITE.get(label)
    return case.time_limit_s if case is not None else None


def _course_limits_text() -> str:
    """The limits as runs of cases: t01-t10 2 s, t11-t20 6 s, t21-t30 10 s."""
    limited = [(name, case.time_limit_s) for name, case in SUITE.items() if case.time_limit_s is not None]
    runs = [[name for name, _ in run] for _, run in groupby(limited, key=lambda item: item[1])]
    spans = [names[0] if len(names) == 1 else f"{names[0]}-{names[-1]}" for names in runs]
    return ", ".join(f"{span} {course_limit(names[0]):g} s" for span, names in zip(spans, runs))


COURSE_LIMITS_DEVICE = TIME_LIMITS_SET_FOR
COURSE_LIMITS_TEXT = _course_limits_text()
COURSE_LIMITS_BRIEF = "/".join(
    f"{seconds:g}" for seconds in dict.fromkeys(c.time_limit_s for c in SUITE.values() if c.time_limit_s)
) + f" s, set for a {COURSE_LIMITS_DEVICE}"  # 2/6/10 s, set for a GTX 1080


@dataclass(frozen=True)
class TimeLimits:
    """Seconds allowed per case: the course's, none, or a user's file."""

    source: str  # "course", "none", a preset's name (PRESETS), or the file's path
    limits: dict[str, float] = field(default_factory=dict)
    default: float | None = None

    def limit_for(self, label: str) -> float | None:
        if self.source == "course":
            return course_limit(label)
        return self.limits.get(label, self.default)

    def unlimited(self, labels: list[str]) -> list[str]:
        """The cases a user's file gives no limit (no line of theirs, no `default`): a typo (`tO1`) left a
        case unlimited without a word."""
        if self.source in ("course", "none") or self.source in PRESETS or self.default is not None:
            return []
        return [label for label in labels if label not in self.limits]

    def strangers(self, labels: list[str]) -> list[str]:
        """The names a user's file gives a limit that are no case judged here and no case of the suite: a typo
        (`tO1 = 2`) of a case that is judged is said by `unlimited`, one of a case that is not was said nowhere."""
        return [name for name in self.limits if name not in labels and name not in SUITE]

    def describe(self) -> str:
        if self.source == "course":
            return f"the course's limits ({COURSE_LIMITS_TEXT}), set for a {COURSE_LIMITS_DEVICE}, not for this machine"
        if self.source == "none":
            return "no time limits"
        if self.source in PRESETS:
            return f"{PRESETS[self.source][1]}, not for this machine"
        return f"limits from {self.source}"


def load_time_limits(spec: str) -> TimeLimits:
    """`course`, `none`, a preset (`course-rtx3070`), or a TOML file of `case = seconds` lines (and
    optionally `default = seconds`)."""
    if spec in ("course", "none"):
        return TimeLimits(spec)
    from attnbench.kernels.user import read_toml

    path = locations.shipped_limits(PRESETS[spec][0]) if spec in PRESETS else Path(spec)
    if spec not in PRESETS and not path.exists():
        raise ProgramError(f"{spec}: no such file, and not one of the limits attnbench knows: "
                           f"{', '.join(('course', 'none', *PRESETS))}")
    data = read_toml(path, ProgramError)
    limits: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_WAIT_S / 2:
            # NaN passed `value <= 0`, and a case's timeout (twice its limit) then ended the judge in a traceback
            raise ProgramError(f"{spec}: {key} = {value!r}: a limit is a positive number of seconds, at most "
                               f"{MAX_WAIT_S / 2:,.0f}")
        limits[key] = float(value)
    default = limits.pop("default", None)
    return TimeLimits(spec, limits, default)


