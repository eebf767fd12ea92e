"""The ladder view: each optimisation step's time and its speedup over the step before, next to
what report 004 claimed for the same step.

Ladder order is registry order (`attnbench list`). The claims are report 004's 'Computing (s)' on a
GTX 1080 (allocation, copies and kernels of one run), kept in report_claims.json with their source;
their absolute values do not compare with kernel times on another GPU, but the direction and size of
each step's speedup do, and that is what the view sets side by side.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN, TimeComparison, Verdict, compare_stats
from attnbench.kernels.catalogue import LADDER_VARIANTS, REGISTRY
from attnbench.locations import package_file
from attnbench.results.resultset import Cell, ResultSet

CLAIMS_FILE = package_file("report_claims.json")


@dataclass(frozen=True)
class Claims:
    source: str
    device: str
    metric_meaning: str
    steps: dict[str, dict[str, float]]  # case -> variant -> seconds
    notes: dict[str, str]

    def seconds(self, case: str, variant: str) -> float | None:
        return self.steps.get(case, {}).get(variant)


@lru_cache(maxsize=1)
def load_claims() -> Claims:
    data = json.loads(CLAIMS_FILE.read_text(encoding="utf-8"))
    return Claims(data["source"], data["device"], data.get("metric_meaning", ""), data["steps"], data.get("notes", {}))


def is_ladder_variant(name: str) -> bool:
    claims = load_claims()
    return name in LADDER_VARIANTS or any(name in steps for steps in claims.steps.values())


def ladder_order(names: list[str]) -> list[str]:
    """The ladder variants among `names`, in registry order (unregistered ones by the reports' order)."""
    registry = list(REGISTRY)
    fallback = ["cpu", *LADDER_VARIANTS]

    def key(name: str) -> tuple[int, int]:
        if name in registry:
            return (0, registry.index(name))
        return (1, fallback.index(name) if name in fallback else len(fallback))

    return sorted((n for n in names if is_ladder_variant(n)), key=key)


def has_ladder(result: ResultSet) -> bool:
    """Two or more ladder variants timed on a common input."""
    steps = ladder_order(result.variant_names)
    return any(sum(1 for v in steps if (c := result.cell(v, case)) is not None and c.ok) >= 2
               for case in result.case_labels)


@dataclass
class LadderStep:
    case: str
    variant: str
    cell: Cell | None
    previous: str | None  # the step this one is measured against
    vs_previous: TimeComparison | None
    claimed_s: float | None
    claimed_speedup: float | None  # report 004: previous step's seconds over this step's

    @property
    def kernel_ms(self) -> float | None:
        return self.cell.stats.median if self.cell is not None and self.cell.ok and self.cell.stats else None

    @property
    def tflops(self) -> float | None:
        return self.cell.measurement.tflops if self.cell is not None and self.cell.ok and self.cell.measurement else None

    @property
    def compute_s(self) -> float | None:
        return self.cell.measurement.compute_s if self.cell is not None and self.cell.ok and self.cell.measurement else None

    @property
    def agreement(self) -> str:
        """Whether the measured step goes the way report 004's did: 'agrees', 'differs' or '-'."""
        if self.vs_previous is None or self.claimed_speedup is None or self.vs_previous.uncertain:
            return "-"
        band = self.vs_previous.band
        if self.claimed_speedup > 1 + band:
            claimed = Verdict.FASTER
        elif self.claimed_speedup < 1 / (1 + band):
            claimed = Verdict.SLOWER
        else:
            claimed = Verdict.SAME
        return "agrees" if claimed is self.vs_previous.verdict else "differs"


def ladder_steps(result: ResultSet, same_within: float = DEFAULT_SAME_WITHIN) -> dict[str, list[LadderStep]]:
    """For each input, the ladder's steps with their speedup over the previous timed step."""
    claims = load_claims()
    order = ladder_order(result.variant_names)
    found: dict[str, list[LadderStep]] = {}
    for case in result.case_labels:
        steps: list[LadderStep] = []
        previous: Cell | None = None
        for name in order:
            cell = result.cell(name, case)
            if cell is None:
                continue
            comparison = None
            claimed_speedup = None
            claimed = claims.seconds(case, name)
            if previous is not None and cell.ok and previous.stats is not None and cell.stats is not None:
                comparison = compare_stats(previous.stats, cell.stats, same_within)
            if previous is not None and claimed is not None:
                before = claims.seconds(case, previous.variant)
                claimed_speedup = before / claimed if before is not None else None
            steps.append(LadderStep(case, name, cell, previous.variant if previous else None, comparison, claimed,
                                    claimed_speedup))
            if cell.ok:
                previous = cell
        if sum(1 for s in steps if s.kernel_ms is not None) >= 2:
            found[case] = steps
    return found
