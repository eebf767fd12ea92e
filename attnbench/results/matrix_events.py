"""What a compare's or a sweep's listener hears while its cells run: one small frozen dataclass per thing that
happened, the same whatever executor ran the cells (in process, a GPU pool, Slurm). The terminal's
`MatrixProgress` dispatches on the event's type; none unpacks a payload by position. A bar's events carry the
job whose bar it is (None: the run's own), so that bars of jobs running at once are told apart."""

from __future__ import annotations

from dataclasses import dataclass

from attnbench.results.resultset import Cell


@dataclass(frozen=True)
class MatrixBegun:
    """The run begins: `cells` in all, `work` their FLOPs-weighted share of it (the ETA's scale)."""

    cells: int
    work: float


@dataclass(frozen=True)
class CellStarted:
    """A variant began on a case."""

    variant: str
    case: str


@dataclass(frozen=True)
class CellFinished:
    """A cell is in (measured, refused, failed or not run), with its share of the run's work."""

    cell: Cell
    work: float


@dataclass(frozen=True)
class BarOpened:
    """A bar of its own begins (generating an input, its reference, a long cpu pass): `total` steps."""

    description: str
    total: int
    job: int | None = None


@dataclass(frozen=True)
class BarAdvanced:
    """`n` more steps of a bar."""

    description: str
    n: int
    job: int | None = None


@dataclass(frozen=True)
class BarClosed:
    """A bar ends."""

    description: str
    job: int | None = None
