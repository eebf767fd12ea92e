"""What the check of a cell's timed samples saw: every sample on a fresh input, every output checked.

`bench.fresh_samples` runs the samples; this is the record a measurement (and a saved cell) carries. The verdict
and the sentences are made from the fields, never the other way round.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from attnbench.results.run_warnings import RunWarning, WarningKind


@dataclass(frozen=True)
class WorstElement:
    """The element of a checked row farthest from the exact value (NaN counts as infinitely far)."""

    item: int
    row: int
    column: int
    got: float
    want: float
    error: float

    def text(self) -> str:
        return f"O[{self.item}, {self.row}, {self.column}] = {self.got:.6g}, exact {self.want:.6g} (|error| {self.error:.3g})"


@dataclass(frozen=True)
class SampleErrors:
    """One sample's check: the whole output scanned for NaN and Inf, and rows drawn after the launch computed
    exactly and held to the tolerance."""

    nonfinite: int  # NaN or Inf elements in the whole output (the poison is NaN: an unwritten element is one)
    first_nonfinite: int | None  # its flat index (item, row, column in row-major order)
    rows_checked: int
    failing_rows: list[int]  # flat row indices (item * N + row) with an element outside the tolerance, the first 8
    failing_row_count: int
    failing_elements: int
    worst: WorstElement | None  # over the checked rows

    @property
    def passed(self) -> bool:
        return self.nonfinite == 0 and self.failing_elements == 0

    @classmethod
    def from_row_results(cls, nonfinite: int, first_nonfinite: int | None, rows: np.ndarray, results: np.ndarray,
                         N: int) -> "SampleErrors":
        """From the exact rows' per-row results (rows x 5: failing elements, worst column, its |error| (inf for
        NaN), the value there, the exact value there), as our check kernel and the host's check give them."""
        failing = np.flatnonzero(results[:, 0] > 0) if len(rows) else np.zeros(0, dtype=np.int64)
        worst = None
        if len(rows):
            at = int(np.argmax(results[:, 2]))
            row = int(rows[at])
            worst = WorstElement(row // N, row % N, int(results[at, 1]), float(results[at, 3]), float(results[at, 4]),
                                 float(results[at, 2]))
        return cls(int(nonfinite), first_nonfinite if nonfinite else None, int(len(rows)),
                   [int(rows[i]) for i in failing[:8]], int(failing.size), int(results[:, 0].sum()) if len(rows) else 0,
                   worst)

    @classmethod
    def from_dict(cls, data: dict) -> "SampleErrors":
        worst = data.get("worst")
        return cls(data["nonfinite"], data.get("first_nonfinite"), data["rows_checked"], list(data["failing_rows"]),
                   data["failing_row_count"], data["failing_elements"], WorstElement(**worst) if worst else None)


# Which launch a failure came from: a warm-up pass, a timed sample, one of the two launches of one fresh input
# (the determinism check), the launch on a fresh input whose output was not poisoned first, or that input launched
# again with zeros in the output (a finite wrong answer where the last launch left the right one).
WARMUP, TIMED, REPEAT, UNPOISONED, STALE = "warmup", "timed", "repeat", "unpoisoned", "stale"
_LAUNCH_WORDS = {WARMUP: "warm-up pass {n} (on a fresh input)", TIMED: "timed sample {n} (on a fresh input)",
                 REPEAT: "launch {n} of one fresh input launched twice (the output poisoned before each)",
                 UNPOISONED: "the launch on a fresh input with the output not poisoned first",
                 STALE: "the last input launched again with zeros written over its output first"}


@dataclass(frozen=True)
class SampleFailure:
    """The first launch whose output failed its check (the cell stops there)."""

    sample: int  # 1-based within its kind
    kind: str  # WARMUP, TIMED, REPEAT, UNPOISONED or STALE
    N: int
    d: int
    errors: SampleErrors

    @property
    def warmup(self) -> bool:
        return self.kind == WARMUP

    def describe(self) -> str:
        e = self.errors
        which = _LAUNCH_WORDS.get(self.kind, "launch {n}").format(n=self.sample)
        parts = []
        if e.nonfinite:
            first = e.first_nonfinite or 0
            item, rest = divmod(first, self.N * self.d)
            parts.append(f"{e.nonfinite} NaN or Inf elements in the output (the first O[{item}, {rest // self.d}, "
                         f"{rest % self.d}]: unwritten elements keep the NaN poison)")
        if e.failing_elements:
            rows = ", ".join(f"({r // self.N}, {r % self.N})" for r in e.failing_rows)
            more = f" and {e.failing_row_count - len(e.failing_rows)} more" if e.failing_row_count > len(e.failing_rows) else ""
            parts.append(f"{e.failing_row_count} of {e.rows_checked} rows checked exactly were wrong (item, row: "
                         f"{rows}{more})")
        if e.worst is not None and e.worst.error > 0:
            parts.append(f"worst {e.worst.text()}")
        return f"{which}: " + "; ".join(parts)

    @classmethod
    def from_dict(cls, data: dict) -> "SampleFailure":
        return cls(data["sample"], data["kind"], data["N"], data["d"], SampleErrors.from_dict(data["errors"]))


@dataclass(frozen=True)
class ClockDisagreement:
    """The CUDA events said one thing and the host's wall clock another, on every sample cross-checked."""

    event_ms: float  # the smallest event time among the cross-checked samples
    wall_ms: float  # the wall time of that sample
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
class DifferingRows:
    """One fresh input launched twice gave outputs that differ in these rows (flat indices, the first 8)."""

    rows: list[int]
    count: int
    N: int
    remedy: str = ("a race or an uninitialised read in the kernel: run it under compute-sanitizer "
                   "(--tool racecheck, --tool initcheck)")

    def warning(self) -> RunWarning:
        named = ", ".join(f"({r // self.N}, {r % self.N})" for r in self.rows)
        more = f" and {self.count - len(self.rows)} more" if self.count > len(self.rows) else ""
        return RunWarning(WarningKind.NONDETERMINISTIC,
                          f"the same fresh input launched twice gave different bits in {self.count} output rows "
                          f"(item, row: {named}{more})", self.remedy)

    @classmethod
    def from_dict(cls, data: dict) -> "DifferingRows":
        return cls(list(data["rows"]), data["count"], data["N"], data.get("remedy", cls.remedy))


@dataclass(frozen=True)
class TimedCheck:
    """The check of one cell's samples: how many ran, on fresh inputs, how many rows each was checked on, and
    the failure that ended them (None: every one passed)."""

    samples: int  # launches checked: the warm-up passes, the timed samples and the four after them
    fresh_inputs: int  # of them on an input no launch had seen (all but the second launches of two inputs)
    rows_per_sample: int  # rows computed exactly after each (all the rows when the case has fewer)
    rows: int  # rows in the output
    atol: float
    rtol: float
    failure: SampleFailure | None = None
    clock_warning: ClockDisagreement | None = None
    differing: DifferingRows | None = None  # the determinism check's finding (a warning, not a verdict)
    wall_checked: int = 0  # samples cross-checked by the host's wall clock
    max_abs_error: float = 0.0  # the largest |out - exact| over every row checked
    legacy_failure: str | None = None  # a result saved before fresh samples: its verified passes' failure
    # the failure is rounding-sized: what in the variant's arithmetic explains it (`ErrorBound.explanation`)
    precision: str | None = None

    @property
    def passed(self) -> bool:
        return self.failure is None and self.legacy_failure is None

    def describe(self) -> str:
        """What was seen, in one sentence."""
        if self.failure is not None and self.precision is not None and self.failure.errors.worst is not None:
            errors = self.failure.errors
            which = _LAUNCH_WORDS.get(self.failure.kind, "launch {n}").format(n=self.failure.sample)
            return (f"off by {errors.worst.error:.3g} at its worst element ({errors.worst.text()}), which "
                    f"{self.precision}; {errors.failing_row_count} of {errors.rows_checked} rows checked exactly were "
                    f"outside {self.tolerance_text()} ({which})")
        if self.failure is not None:
            return f"a launch did not compute the answer: {self.failure.describe()}, outside {self.tolerance_text()}"
        if self.legacy_failure is not None:
            return f"the verified passes after the samples failed ({self.legacy_failure.replace('_', ' ')})"
        return (f"{self.samples} passes, each on a fresh input, each output scanned for NaN and Inf and "
                f"{self.rows_per_sample} rows checked exactly within {self.tolerance_text()}")

    def tolerance_text(self) -> str:
        return f"|out - exact| <= {self.atol:g}" + (f" + {self.rtol:g}*|exact|" if self.rtol else "")

    def warnings(self) -> list[RunWarning]:
        return [w.warning() for w in (self.clock_warning, self.differing) if w is not None]

    def to_dict(self) -> dict:
        data = asdict(self)
        data["passed"] = self.passed
        if self.failure is not None:
            data["failure"]["warmup"] = self.failure.warmup
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "TimedCheck":
        if "passes" in data:  # saved before fresh samples (schema 3-4): the verified passes' record
            return cls(len(data["passes"]), 0, 0, 0, data["atol"], data["rtol"],
                       legacy_failure=data.get("failure"))
        failure, clock, differing = data.get("failure"), data.get("clock_warning"), data.get("differing")
        return cls(data["samples"], data["fresh_inputs"], data["rows_per_sample"], data["rows"], data["atol"],
                   data["rtol"], SampleFailure.from_dict(failure) if failure else None,
                   ClockDisagreement.from_dict(clock) if clock else None,
                   DifferingRows.from_dict(differing) if differing else None, data.get("wall_checked", 0),
                   data.get("max_abs_error", 0.0), precision=data.get("precision"))
