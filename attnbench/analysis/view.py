"""Reading a matrix: speedups against a baseline with their uncertainty, verdicts, geometric means,
and the exit status a run earns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnbench.analysis.verdict import (
    DEFAULT_SAME_WITHIN,
    GeometricMean,
    TimeComparison,
    compare_stats,
    geometric_mean,
    geometric_mean_speedup,
)
from attnbench.results.kernel_time import kernel_time_of
from attnbench.results.resultset import ERROR, FAILED, IMPOSSIBLE, OK, REFUSED, SUSPECT, WRONG, Cell, ResultSet

if TYPE_CHECKING:
    from attnbench.analysis.against import AgainstReport

@dataclass
class MatrixView:
    """Speedups against a baseline, verdicts and geometric means, for display and export."""

    result: ResultSet
    baseline: str | None = None
    same_within: float = DEFAULT_SAME_WITHIN

    def __post_init__(self) -> None:
        if self.baseline is None:
            self.baseline = self.result.baseline
        if self.baseline is not None and self.baseline not in self.result.variant_names:
            self.baseline = None

    def comparison(self, variant: str, case: str) -> TimeComparison | None:
        """This cell against the baseline's cell on the same input, when both were timed on the same
        GPU model (a run spread over several GPUs records each cell's)."""
        if self.baseline is None:
            return None
        base, cell = self.result.cell(self.baseline, case), self.result.cell(variant, case)
        if base is None or cell is None or not base.ok or not cell.ok:
            return None
        if gpu_model(self.result, base) != gpu_model(self.result, cell):
            return None
        assert base.stats is not None and cell.stats is not None
        return compare_stats(base.stats, cell.stats, self.same_within)

    def missing_reason(self, variant: str, case: str) -> str | None:
        """Why two timed cells have no verdict (they ran on different GPU models); None otherwise."""
        if self.baseline is None:
            return None
        base, cell = self.result.cell(self.baseline, case), self.result.cell(variant, case)
        if base is None or cell is None or not base.ok or not cell.ok:
            return None
        base_model, model = gpu_model(self.result, base), gpu_model(self.result, cell)
        if base_model == model:
            return None
        return f"- (no verdict: {self.baseline} ran on {base_model}, this cell on {model})"

    def speedups(self, variant: str) -> list[TimeComparison]:
        found = (self.comparison(variant, case) for case in self.result.case_labels)
        return [c for c in found if c is not None]

    def geomean_speedup(self, variant: str) -> GeometricMean | None:
        return geometric_mean_speedup(self.speedups(variant))

    def geomean_tflops(self, variant: str) -> float | None:
        values = [c.measurement.tflops for c in self.result.cells if c.variant == variant and c.ok and c.measurement]
        values += [k["tflops"] for c in self.result.cells if c.variant == variant and c.status == OK
                   for k in [c.extra.get("kernel") or {}] if k.get("tflops")]  # a program's, from its kernel time
        return geometric_mean(values)

    def program_speedup(self, variant: str, case: str) -> float | None:
        """A whole program's speedup over the baseline on one input, from its kernels' busy time (one recorded
        run, so no noise and no verdict) against the baseline's median kernel time; None without both."""
        if self.baseline is None:
            return None
        base, cell = self.result.cell(self.baseline, case), self.result.cell(variant, case)
        program = kernel_time_of(cell.extra) if cell is not None and cell.status == OK else None
        if base is None or base.status != OK or program is None or program.busy_s <= 0:
            return None
        base_s = (base.measurement.kernel.median / 1e3 if base.measurement is not None
                  else getattr(kernel_time_of(base.extra), "busy_s", None))  # a program as the baseline: its kernels
        return base_s / program.busy_s if base_s else None

    def counts(self, variant: str) -> dict[str, int]:
        found = {OK: 0, WRONG: 0, REFUSED: 0, ERROR: 0, IMPOSSIBLE: 0, SUSPECT: 0}
        for cell in self.result.cells:
            if cell.variant == variant:
                found[cell.status] += 1
        return found


def gpu_model(result: ResultSet, cell: Cell) -> str | None:
    """The GPU model a cell was measured on: its own record, else the run's GPU."""
    own = cell.extra.get("gpu") if cell.extra else None
    if isinstance(own, dict) and own.get("name"):
        return str(own["name"])
    return (result.metadata.get("gpu") or {}).get("name")


def failures(result: ResultSet) -> int:
    """Cells whose output was wrong, that failed to run, or whose time was impossible."""
    return sum(1 for c in result.cells if c.status in FAILED)


def exit_status(result: ResultSet, report: "AgainstReport | None" = None) -> int:
    """1 when any cell is wrong, failed or impossible or any regressed against a saved run, else 0; the counts are
    printed and saved, not folded into the exit status."""
    regressions = report.regressions if report is not None else 0
    return 1 if failures(result) or regressions else 0
