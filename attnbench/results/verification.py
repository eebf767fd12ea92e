"""The outcome of checking an output against a reference: the verdict and every error metric."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Mismatch:
    """One failing element: its (batch, row, column) position and the two values."""

    batch: int
    row: int
    col: int
    got: float
    want: float

    def __str__(self) -> str:
        return f"(batch {self.batch}, row {self.row}, col {self.col}): got {self.got:.6g}, want {self.want:.6g}"


@dataclass
class VerifyReport:
    """The verdict and every metric of one comparison."""

    passed: bool
    atol: float
    rtol: float
    elements: int
    failing: int
    nan_count: int
    inf_count: int
    max_abs_error: float
    max_rel_error: float
    rel_l2_error: float
    worst: Mismatch | None
    first_failures: list[Mismatch] = field(default_factory=list)

    def rule(self) -> str:
        if self.rtol:
            return f"|out - ref| <= {self.atol:g} + {self.rtol:g}*|ref|"
        return f"|out - ref| <= {self.atol:g}"

    def to_dict(self) -> dict:
        return asdict(self)
