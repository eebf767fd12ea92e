"""A class's scoreboard: one row per submission, one entry per case, ranks, and its saved form.

The model is data only: ranking is `attnbench.analysis.ranking`, judging is `attnbench.judge.classroom`,
drawing is `attnbench.output.tables.scoreboard_table`. Its JSON is strict (no NaN or Infinity: times that do not
exist are null).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnbench import strict_json
from attnbench.errors import ResultsError
from attnbench.results.course_grade import COURSE_CASES, course_grade, grades_cases
from attnbench.results.judge_cost import JudgeCost

# Format history: 1, the first (rows, entries with every run's time, ranks with ties, GPU groups); entries' kernel
# times (kernel_runs_s, kernel_note) are optional fields of 1, absent from older boards; each row's "grade" (the
# course's, derived from its entries: written, never read back) was added without a new version; "phases" (the
# judge's cost, attnbench.results.judge_cost) added later, optional: older boards read without it; entries'
# "program_s" and rows' "warm_ups_s" (every run of the program the judge made, for that cost) added later still,
# optional: an older board's entry reads its passed runs as its program time, its row no warm-up; rows'
# "not_judged" (why a built row was not run: a CUDA program where no GPU is) added later, optional: "" when absent;
# rows' "fillers_s" (a rerun round's runs of the cases the row does not rerun, their verdicts thrown away) added
# later, optional: 0 when absent.
SCOREBOARD_VERSION = 1
PASS = "PASS"
# A built row the judge did not run, and why (a CUDA program where no NVIDIA GPU is): neither passed nor failed,
# not ranked, no grade.
NOT_JUDGED = "NOT JUDGED"


@dataclass
class CaseEntry:
    """One submission on one case: the verdict of its first run, and every run's process time."""

    verdict: str
    message: str = ""
    runs_s: list[float] = field(default_factory=list)  # the first run, then any reruns (passed runs only)
    device: str | None = None  # the GPU kind that ran its first run, where a class spread over several
    # Its kernels' busy time after each passed run, from a second, untimed run with the kernel-records collector
    # (--kernel-time); the program could forge it (attnbench.results.kernel_time). Why none, when none was recorded.
    kernel_runs_s: list[float] = field(default_factory=list)
    kernel_note: str = ""
    # Every run of the program this entry took, passed or not (the first, then any reruns): the programs' own
    # time in the judge's cost (attnbench.results.judge_cost), which a failed run must not book to the judge.
    program_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    @property
    def kernel_s(self) -> float | None:
        """The case's kernel time: the median of its recorded runs' busy spans."""
        return statistics.median(self.kernel_runs_s) if self.kernel_runs_s else None

    @property
    def time_s(self) -> float | None:
        """The case's time: the median of its runs (one run, or the median of three for a rerun row)."""
        return statistics.median(self.runs_s) if self.runs_s else None


@dataclass
class SubmissionRow:
    """One submission: how it was built, where it ran, its entries, and its rank once ranked."""

    name: str
    source: str  # the folder or file the submission came from
    built: bool
    build_message: str = ""  # the compiler's first error lines when the build failed, else a short note
    gpu: str | None = None  # the GPU its cases ran on ("this machine's CPU" without one)
    entries: dict[str, CaseEntry] = field(default_factory=dict)
    rank: int | None = None
    tied: bool = False  # shares its rank with another row (times within the noise)
    reruns: int = 0  # how many times each case was run in all (1, or 3 for the top rows)
    gpu_note: str = ""  # where its cases ran on several GPU kinds: which, and that `gpu` (the most) ranks it
    warm_ups_s: float = 0.0  # its warm-up runs' time, every round's (the programs' time in the judge's cost)
    # why it was not run, the host's doing (NOT_JUDGED: a CUDA program where no GPU is, a build failed for want of a
    # header this host's toolkit lacks): then it has no entries, no rank, no grade
    not_judged: str = ""
    fillers_s: float = 0.0  # its rerun rounds' filler runs (the cases it does not rerun, run in their places)

    @property
    def passed(self) -> int:
        return sum(entry.passed for entry in self.entries.values())

    @property
    def total_s(self) -> float:
        """The total time of the cases it passed."""
        return sum(entry.time_s or 0.0 for entry in self.entries.values() if entry.passed)

    @property
    def program_s(self) -> float:
        """Every run of its program the judge made: its cases' runs, passed or not, its warm-ups and its fillers."""
        return sum(entry.program_s for entry in self.entries.values()) + self.warm_ups_s + self.fillers_s

    @property
    def kernel_total_s(self) -> float | None:
        """The total kernel time of the cases it passed; None unless every one of them has one."""
        passed = [entry.kernel_s for entry in self.entries.values() if entry.passed]
        return sum(passed) if passed and None not in passed else None  # type: ignore[arg-type]


@dataclass
class Scoreboard:
    """Every submission judged on the same cases, ranked by the rule in `settings`."""

    cases: list[str]
    rows: list[SubmissionRow]
    metadata: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False
    path: Path | None = None
    cost: JudgeCost | None = None  # the judge's phases and its ratio to the programs' runs, once it ends

    @property
    def gpu_kinds(self) -> list[str]:
        """The GPU kinds the judged rows ran on, in first-seen order (more than one: ranked apart)."""
        return list(dict.fromkeys(row.gpu for row in self.rows if row.entries and row.gpu))

    @property
    def graded(self) -> bool:
        """Whether the rows have the course's grade: every one of t01-t30 judged under a time limit (settings'
        `ungraded` says why not, absent from boards saved before it), the run not interrupted."""
        return grades_cases(self.cases) and not self.interrupted and not self.settings.get("ungraded")

    def grade(self, row: SubmissionRow) -> int | None:
        """The row's course grade (attnbench.results.course_grade), or None on a partial run."""
        if not self.graded or row.not_judged:
            return None
        return course_grade({case: row.entries[case].verdict if row.built and case in row.entries else "not run"
                             for case in COURSE_CASES})

    def to_dict(self) -> dict[str, Any]:
        return {"version": SCOREBOARD_VERSION, "kind": "scoreboard", "cases": self.cases,
                "metadata": self.metadata, "settings": self.settings, "interrupted": self.interrupted,
                "phases": self.cost.to_dict() if self.cost is not None else None,
                "rows": [{**asdict(row), "passed": row.passed, "total_s": row.total_s, "grade": self.grade(row),
                          "kernel_total_s": row.kernel_total_s,
                          "entries": {case: {**asdict(entry), "time_s": entry.time_s, "kernel_s": entry.kernel_s}
                                      for case, entry in row.entries.items()}} for row in self.rows]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scoreboard:
        if data.get("kind") != "scoreboard" or data.get("version") != SCOREBOARD_VERSION:
            raise ResultsError(f"not a scoreboard of version {SCOREBOARD_VERSION}")
        rows = []
        for raw in data["rows"]:
            entries = {case: CaseEntry(e["verdict"], e.get("message", ""), list(e.get("runs_s", [])), e.get("device"),
                                       list(e.get("kernel_runs_s", [])), e.get("kernel_note", ""),
                                       float(e.get("program_s", sum(e.get("runs_s", [])))))
                       for case, e in raw["entries"].items()}
            rows.append(SubmissionRow(raw["name"], raw["source"], raw["built"], raw.get("build_message", ""),
                                      raw.get("gpu"), entries, raw.get("rank"), raw.get("tied", False),
                                      raw.get("reruns", 0), raw.get("gpu_note", ""), float(raw.get("warm_ups_s", 0.0)),
                                      str(raw.get("not_judged", "")), float(raw.get("fillers_s", 0.0))))
        cost = JudgeCost.from_dict(data["phases"]) if data.get("phases") else None
        return cls(list(data["cases"]), rows, dict(data.get("metadata", {})), dict(data.get("settings", {})),
                   bool(data.get("interrupted", False)), cost=cost)

    def to_json(self) -> str:
        return strict_json.dumps(self.to_dict())


def load_scoreboard(path: str | Path) -> Scoreboard:
    """A saved scoreboard; one line naming the file when it is not one."""
    try:
        return Scoreboard.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except RecursionError:  # JSON nested past Python's limit: `judge --history` ended in a traceback
        raise ResultsError(f"{path}: not a saved scoreboard (its JSON nests deeper than Python reads)") from None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError, ResultsError) as exc:
        raise ResultsError(f"{path}: not a saved scoreboard ({exc})") from None
