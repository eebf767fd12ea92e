"""The CSV's columns, each declared once beside the value it reads from the result model, with a hint.

A row reads one `CellRow`: a cell with its result, its input, its comparison with the baseline and its
verdict against a saved run. A column is a name, how it reads a row, and a hint saying what its numbers
are (a unit such as "ms" or "TFLOP/s", or "fraction": 0.25 is 25%), as NVBench's summary values carry
one. The header is the columns' names in the order below: adding a value to the model and one `CsvColumn`
here adds it to the CSV, and its hint to the legend the Markdown page prints (`csv_legend`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from attnbench.analysis.verdict import TimeComparison
from attnbench.analysis.view import MatrixView
from attnbench.cases.inputs import CaseInfo
from attnbench.cases.testcase import Shape
from attnbench.output.tables.table_model import TableModel, columns
from attnbench.results.clocks import ClockSummary
from attnbench.results.measurement import Measurement
from attnbench.results.metadata import gpu_label
from attnbench.results.resultset import Cell, ResultSet


@dataclass(frozen=True)
class CellRow:
    """What one CSV row reads: a cell, where it sits and how it compares."""

    result: ResultSet
    cell: Cell
    case: CaseInfo | None  # None when the result does not list the cell's input
    baseline: str | None
    comparison: TimeComparison | None  # against the baseline's cell on the same input
    against: dict | None  # the saved run's name and its verdict on this cell, when measured against one

    @property
    def shape(self) -> Shape | None:
        """The input's shape, or the measurement's when the result does not list the input."""
        if self.case is not None:
            return self.case.shape
        return self.cell.measurement.shape if self.cell.measurement is not None else None


def cell_rows(result: ResultSet, same_within: float) -> Iterator[CellRow]:
    """One row per cell, in the result's order."""
    view = MatrixView(result, same_within=same_within)
    against = result.settings.against or {}
    verdicts = {(c["variant"], c["case"]): {**c, "saved": against["saved"]} for c in against.get("cells", [])}
    for cell in result.cells:
        yield CellRow(result, cell, result.case(cell.case), view.baseline,
                      view.comparison(cell.variant, cell.case), verdicts.get((cell.variant, cell.case)))


Read = Callable[[CellRow], Any]


@dataclass(frozen=True)
class CsvColumn:
    """One CSV column: its name, how it reads a row (None: an empty field), and what its values are."""

    name: str
    read: Read
    hint: str


def _measured(read: Callable[[Measurement], Any]) -> Read:
    """A value of the cell's measurement; None when the cell was not timed."""
    return lambda row: read(row.cell.measurement) if row.cell.measurement is not None else None


def _clock(read: Callable[[ClockSummary], Any]) -> Read:
    """A value of the SM clock the samples ran at; None when not timed or the clock is unknown."""
    def value(m: Measurement) -> Any:
        clock = m.kernel.clock
        return read(clock) if clock is not None else None
    return _measured(value)


def _shape(read: Callable[[Shape], int]) -> Read:
    return lambda row: read(row.shape) if row.shape is not None else None


def _checked(key: str) -> Read:
    """A metric of the check of the cell's output."""
    return lambda row: row.cell.check.get(key) if row.cell.check else None


def _compared(read: Callable[[TimeComparison], Any]) -> Read:
    return lambda row: read(row.comparison) if row.comparison is not None else None


def _against(key: str) -> Read:
    return lambda row: row.against[key] if row.against is not None else None


CSV_COLUMNS: tuple[CsvColumn, ...] = (
    CsvColumn("kind", lambda row: row.result.kind, "compare, sweep or judge"),
    CsvColumn("variant", lambda row: row.cell.variant, "name"),
    CsvColumn("case", lambda row: row.cell.case, "name"),
    CsvColumn("B", _shape(lambda shape: shape.B), "count"),
    CsvColumn("N", _shape(lambda shape: shape.N), "count"),
    CsvColumn("d", _shape(lambda shape: shape.d), "count"),
    CsvColumn("status", lambda row: row.cell.status, "ok, wrong, refused, error or impossible"),
    CsvColumn("median_ms", _measured(lambda m: m.kernel.median), "ms"),
    CsvColumn("mean_ms", _measured(lambda m: m.kernel.mean), "ms"),
    CsvColumn("stdev_ms", _measured(lambda m: m.kernel.stdev), "ms"),
    CsvColumn("min_ms", _measured(lambda m: m.kernel.min), "ms"),
    CsvColumn("max_ms", _measured(lambda m: m.kernel.max), "ms"),
    CsvColumn("p20_ms", _measured(lambda m: m.kernel.quantile(0.2)), "ms"),
    CsvColumn("p80_ms", _measured(lambda m: m.kernel.quantile(0.8)), "ms"),
    CsvColumn("noise", _measured(lambda m: m.kernel.noise), "fraction of the median"),
    CsvColumn("samples", _measured(lambda m: m.kernel.count), "count"),
    CsvColumn("outliers", _measured(lambda m: m.kernel.outliers), "count"),
    CsvColumn("converged", _measured(lambda m: m.kernel.converged), "true/false"),
    CsvColumn("tflops", _measured(lambda m: None if m.impossible else m.tflops), "TFLOP/s"),
    CsvColumn("peak_fraction", _measured(lambda m: m.peak_fraction), "fraction"),
    CsvColumn("ceiling", _measured(lambda m: m.ceiling["name"] if m.ceiling else None), "name"),
    CsvColumn("ceiling_fraction", _measured(lambda m: m.ceiling["fraction"] if m.ceiling else None), "fraction"),
    CsvColumn("floor_ms", _measured(lambda m: m.floor.seconds * 1e3 if m.floor is not None else None), "ms"),
    CsvColumn("sm_clock_mhz", _clock(lambda clock: clock.median), "MHz"),
    CsvColumn("sm_clock_min_mhz", _clock(lambda clock: clock.low), "MHz"),
    CsvColumn("sm_clock_max_mhz", _clock(lambda clock: clock.high), "MHz"),
    CsvColumn("clock_moved_median",
              _measured(lambda m: (m.kernel.clock_warning is not None) if m.kernel.clock else None), "true/false"),
    CsvColumn("compute_s", _measured(lambda m: m.compute_s), "s"),
    CsvColumn("compile_s", _measured(lambda m: m.compile_s), "s"),
    CsvColumn("baseline", lambda row: row.baseline, "name"),
    CsvColumn("speedup", _compared(lambda c: c.speedup), "times the baseline's speed"),
    CsvColumn("speedup_error", _compared(lambda c: c.speedup_error), "times the baseline's speed"),
    CsvColumn("verdict", _compared(lambda c: c.verdict.value), "FASTER, SAME or SLOWER"),
    CsvColumn("check_passed", _checked("passed"), "true/false"),
    CsvColumn("max_abs_error", _checked("max_abs_error"), "absolute error"),
    CsvColumn("rel_l2_error", _checked("rel_l2_error"), "fraction"),
    CsvColumn("message", lambda row: row.cell.message, "text"),
    CsvColumn("input_sha256", lambda row: row.case.input_sha256 if row.case else None, "sha256"),
    CsvColumn("gpu", lambda row: gpu_label(row.result.metadata), "name"),
    CsvColumn("commit", lambda row: (row.result.metadata.get("git") or {}).get("commit"), "git commit"),
    CsvColumn("date", lambda row: row.result.metadata.get("date"), "ISO 8601"),
    CsvColumn("against", _against("saved"), "name"),
    CsvColumn("against_verdict", _against("verdict"), "FASTER, SAME, SLOWER or a change of status"),
    CsvColumn("against_change", _against("change"), "fraction (+0.10: 10% slower)"),
    CsvColumn("against_regression", _against("regression"), "true/false"),
    CsvColumn("course_grade", lambda row: row.result.settings.grade, "judge of t01-t30: the program's grade of 60"),
)



def csv_legend() -> TableModel:
    """What the CSV's values are: each hint with the columns that carry it, in the CSV's order."""
    by_hint: dict[str, list[str]] = {}
    for column in CSV_COLUMNS:
        by_hint.setdefault(column.hint, []).append(column.name)
    table = TableModel("The CSV's columns", columns("what the values are", "columns"))
    for hint, names in by_hint.items():
        table.add_row(hint, ", ".join(names))
    return table
