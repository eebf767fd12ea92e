"""The precision ladder of a result set: each variant's worst error as a share of the tolerance against its
speed, and which variants no other beats on both (the Pareto front).

One point per variant, not per cell: the course rule is a per-cell rule that a variant passes only if it
passes on every case, so its worst cell is its error; its speed is the geometric mean over its timed cells,
the figure the tables already give. A variant whose every checked cell was WRONG has an error but no speed
(a wrong output is not timed); it keeps its error and no speed here, and its renderers say so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from attnbench.analysis.verdict import geometric_mean
from attnbench.results.resultset import WRONG, Cell, ResultSet


def error_share(cell: Cell | None) -> float | None:
    """The cell's worst element error as a share of its check's absolute tolerance (the course's 5e-3), where
    the check was an absolute one; None otherwise."""
    check = (cell.check if cell is not None else None) or {}
    if check.get("max_abs_error") is None or not check.get("atol") or check.get("rtol"):
        return None
    return float(check["max_abs_error"]) / float(check["atol"])


@dataclass(frozen=True)
class PrecisionPoint:
    """One variant on the ladder."""

    variant: str
    arithmetic: str  # as the variant's record names it ("" in results saved before it was recorded)
    worst_share: float  # the worst error over the tolerance across its checked cells (inf: a NaN or Inf)
    tflops: float | None  # geometric mean over its timed cells; None: none was timed
    checked: int  # cells with an error share
    timed: int  # cells timed (status ok)
    wrong: int  # cells that failed their check
    atol: float  # the tolerance the shares are of (the largest, should cells differ)
    pareto: bool = False  # no other timed variant is both at least as fast and at least as accurate

    @property
    def passes(self) -> bool:
        """Every checked cell within the tolerance."""
        return self.wrong == 0 and self.worst_share <= 1.0


def precision_points(result: ResultSet) -> list[PrecisionPoint]:
    """Every variant with at least one checked cell, in the result's order, the Pareto front marked."""
    arithmetic = {info.name: info.arithmetic for info in result.variants}
    points = []
    for variant in result.variant_names:
        cells = [c for c in result.cells if c.variant == variant]
        shares = [(share, c) for c in cells if (share := error_share(c)) is not None]
        if not shares:
            continue
        rates = [c.measurement.tflops for c in cells if c.ok and c.measurement is not None]
        points.append(PrecisionPoint(
            variant=variant,
            arithmetic=arithmetic.get(variant, ""),
            worst_share=max(share for share, _ in shares),
            tflops=geometric_mean(rates) if rates else None,
            checked=len(shares),
            timed=len(rates),
            wrong=sum(1 for c in cells if c.status == WRONG),
            atol=max(float(c.check["atol"]) for _, c in shares),  # type: ignore[index]
        ))
    return mark_pareto(points)


def spans_precisions(points: list[PrecisionPoint]) -> bool:
    """Whether the points hold two arithmetics or more: a ladder worth showing (results saved before the
    arithmetic was recorded hold none)."""
    return len({p.arithmetic for p in points if p.arithmetic}) >= 2


def mark_pareto(points: list[PrecisionPoint]) -> list[PrecisionPoint]:
    """The points with `pareto` set where no other timed point is at least as fast and as accurate, and
    better in one of the two. Points without a speed are never on the front."""
    timed = [p for p in points if p.tflops is not None]

    def beaten(p: PrecisionPoint) -> bool:
        return any(q.tflops >= p.tflops and q.worst_share <= p.worst_share  # type: ignore[operator]
                   and (q.tflops > p.tflops or q.worst_share < p.worst_share)  # type: ignore[operator]
                   for q in timed)

    return [replace(p, pareto=p.tflops is not None and not beaten(p)) for p in points]


def pareto_front(points: list[PrecisionPoint]) -> list[PrecisionPoint]:
    """The front's points from the most accurate to the least (so also from the slowest to the fastest)."""
    return sorted((p for p in points if p.pareto), key=lambda p: (p.worst_share, p.tflops))
