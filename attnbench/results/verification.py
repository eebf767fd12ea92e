"""The outcome of checking an output against a reference: the verdict and every error metric."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Mismatch:
    """One failing element: its flat index, its (batch, row, column) when the shape is known, the values."""

    batch: int | None
    row: int | None
    col: int | None
    got: float
    want: float
    index: int = -1  # flat element index

    def __str__(self) -> str:
        where = (f"(batch {self.batch}, row {self.row}, col {self.col})" if self.batch is not None
                 else f"(element {self.index})")
        return f"{where}: got {self.got:.6g}, want {self.want:.6g}"

    @classmethod
    def from_dict(cls, data: dict) -> "Mismatch":
        return cls(data.get("batch"), data.get("row"), data.get("col"), data["got"], data["want"],
                   data.get("index", -1))


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
    l1_error: float = 0.0  # sum of |out - ref| over the finite elements (the square lab's rule)
    positions: str = "batch, row, col"  # or "flat": the shape was not known

    def rule(self) -> str:
        if self.rtol:
            return f"|out - ref| <= {self.atol:g} + {self.rtol:g}*|ref|"
        return f"|out - ref| <= {self.atol:g}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "VerifyReport":
        fields = dict(data)
        fields["worst"] = Mismatch.from_dict(data["worst"]) if data.get("worst") else None
        fields["first_failures"] = [Mismatch.from_dict(m) for m in data.get("first_failures", [])]
        return cls(**{k: v for k, v in fields.items() if k in cls.__dataclass_fields__})
