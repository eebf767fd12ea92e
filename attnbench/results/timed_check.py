"""What the verified passes after a cell's samples saw: did a timed pass compute the answer, in the samples' time?

`bench.timed_check` runs them; this is the record a measurement (and a saved cell) carries. The verdict
and the sentences are made from the fields, never the other way round.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from attnbench.results.run_warnings import RunWarning, WarningKind

# Why the timed passes failed, as data: the sentence is rendered from the record.
WRONG_VALUES, SKIPPED_WORK = "wrong_values", "skipped_work"


@dataclass(frozen=True)
class VerifiedPass:
    """One timed pass on a changed input, checked on the device or read back and checked on the host."""

    kinds: list[str]  # what was changed, relative to the input the samples ran on
    poisoned: bool  # the output was filled with NaN before it
    time_ms: float  # by the samples' clock, with their L2 policy
    wall_ms: float  # the host's wall clock around it, the whole context synchronised before and after
    failing: int  # elements outside the tolerance of the expected output (NaN and Inf included)
    nonfinite: int
    max_abs_error: float  # over the finite elements
    attempt: int = 1  # a pass over the time limit is redone on a fresh change: 2, 3
    checked_on: str = "host"  # "device": against the first output kept there; "host": read back

    @classmethod
    def from_dict(cls, data: dict) -> "VerifiedPass":
        return cls(list(data["kinds"]), bool(data["poisoned"]), data["time_ms"], data["wall_ms"], data["failing"],
                   data["nonfinite"], data["max_abs_error"], data.get("attempt", 1), data.get("checked_on", "host"))


@dataclass(frozen=True)
class ClockDisagreement:
    """The CUDA events said one thing and the host's wall clock another, on every pass cross-checked."""

    event_ms: float  # the smallest event time among the cross-checked passes
    wall_ms: float  # the wall time of that pass
    limit_ms: float  # the most wall time the rule allows for that event time
    remedy: str = ("the kernel may launch work the timing events do not wait for (another stream, or work "
                   "left running): time it with nsys, or make every launch join the timed stream")

    def warning(self) -> RunWarning:
        return RunWarning(WarningKind.CLOCK_DISAGREEMENT,
                          f"the host's wall clock saw {self.wall_ms:.3f} ms around a synchronised pass that the CUDA "
                          f"events timed at {self.event_ms:.3f} ms (at most {self.limit_ms:.3f} ms expected)",
                          self.remedy)

    def sentence(self) -> str:
        return self.warning().sentence()

    @classmethod
    def from_dict(cls, data: dict) -> "ClockDisagreement":
        return cls(data["event_ms"], data["wall_ms"], data["limit_ms"], data.get("remedy", cls.remedy))


@dataclass(frozen=True)
class TimedCheck:
    """The verified passes of one cell, the rules they were held to, and what failed (None: nothing)."""

    passes: list[VerifiedPass]
    elements: int
    atol: float
    rtol: float
    expected_from: str  # what the expected output was derived from
    median_ms: float  # the samples' median and slowest, which the time limit is made from
    max_sample_ms: float
    time_limit_ms: float | None  # None: the time rule does not apply (attnbench's own host variant)
    failure: str | None = None  # WRONG_VALUES or SKIPPED_WORK
    clock_warning: ClockDisagreement | None = None
    rule: str = ""  # the time rule in words

    @property
    def passed(self) -> bool:
        return self.failure is None

    def describe(self) -> str:
        """What was seen, in one sentence."""
        if self.failure == WRONG_VALUES:
            worst = next(p for p in self.passes if p.failing)
            number = 1 if worst.poisoned else 2
            nan = f" ({worst.nonfinite} NaN or Inf)" if worst.nonfinite else ""
            return (f"the timed passes did not produce the checked output: after the samples, verified pass {number} "
                    f"({'output poisoned with NaN, ' if worst.poisoned else ''}{', '.join(worst.kinds)}) gave "
                    f"{worst.failing} of {self.elements} elements outside {self.tolerance_text()}{nan}")
        if self.failure == SKIPPED_WORK:
            over = [p for p in self.passes if self.time_limit_ms is not None and p.time_ms > self.time_limit_ms]
            fastest = min(p.time_ms for p in over)
            ratio = fastest / self.median_ms if self.median_ms > 0 else float("inf")
            return (f"the timed passes were {ratio:.0f}x faster than a pass that had to compute ({self.median_ms:.4g} ms "
                    f"against {fastest:.4g} ms on a changed input, over the limit of {self.time_limit_ms:.4g} ms "
                    f"on every one of {max(p.attempt for p in over)} attempts): the samples skipped work")
        return (f"{len(self.passes)} timed passes on changed inputs gave the expected output within "
                f"{self.tolerance_text()} in the samples' time")

    def tolerance_text(self) -> str:
        rule = f"|out - expected| <= {self.atol:g}" + (f" + {self.rtol:g}*|expected|" if self.rtol else "")
        return f"{rule} of {self.expected_from}"

    def to_dict(self) -> dict:
        data = asdict(self)
        data["passed"] = self.passed
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "TimedCheck":
        warning = data.get("clock_warning")
        return cls([VerifiedPass.from_dict(p) for p in data["passes"]], data["elements"], data["atol"], data["rtol"],
                   data["expected_from"], data["median_ms"], data["max_sample_ms"], data.get("time_limit_ms"),
                   data.get("failure"), ClockDisagreement.from_dict(warning) if warning else None,
                   data.get("rule", ""))
