"""The roof of each cell of a compare: each input's work, the card's time for it on each resource, which
resource bounds it, and the share of that roof each variant's median reached (`results.roof`)."""

from __future__ import annotations

from typing import Callable, Sequence

from attnbench.cases.testcase import Shape

from attnbench.output.tables.result_tables import is_program_cell, status_text
from attnbench.output.tables.table_model import DIM, Column, TableModel, Text
from attnbench.results.resultset import Cell, ResultSet
from attnbench.results.roof import EXPONENTIALS, MEMORY, PRODUCTS, CardPeaks, Roof, card_named, roof_of


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us"


def _reached(cell: Cell | None, roof: Roof) -> Text:
    """'55% (2.62 TB/s)', or the cell's status where it has no kernel median."""
    if cell is None or is_program_cell(cell):  # a program's time is its process's, not a pass's
        return Text("-", DIM)
    status = status_text(cell)
    if status is not None:
        return status
    assert cell.measurement is not None
    return Text(roof.share_text(cell.measurement.kernel.median * 1e-3))


def result_card(result: ResultSet) -> CardPeaks | None:
    """The card a result was measured on, when `card_peaks.toml` has it."""
    gpu = result.metadata.get("gpu") or {}
    return card_named(gpu["name"]) if gpu.get("name") else None


def roof_table(result: ResultSet, card: CardPeaks | None = None) -> TableModel | None:
    """Each input's roof on the result's card (or `card`) and the share each variant reached; None when the
    card is not in `card_peaks.toml`."""
    card = card or result_card(result)
    if card is None:
        return None
    inputs = [(c.label, c.shape) for c in (result.case(label) for label in result.case_labels) if c is not None]
    return inputs_roof_table(card, inputs, result.variant_names, result.cell)


def inputs_roof_table(card: CardPeaks, inputs: Sequence[tuple[str, Shape]], variants: Sequence[str] = (),
                      cell_of: Callable[[str, str], Cell | None] = lambda variant, case: None) -> TableModel:
    """Each input's work and roof on `card`, with one column per variant (`cell_of(variant, input)`) giving
    the share of the roof its median reached."""
    table = TableModel(f"The roof of each cell on {card.label} ({card.peaks_text()})",
                       [Column("input"), Column("moved", right=True), Column("GFLOP", right=True),
                        Column("exponentials", right=True), Column(card.resource_label(MEMORY), right=True),
                        Column(card.resource_label(PRODUCTS), right=True), Column("exp", right=True),
                        Column("bound by"), *(Column(v, right=True) for v in variants)])
    for label, shape in inputs:
        roof = roof_of(shape.B, shape.N, shape.d, card)
        times = roof.seconds_by_resource
        table.add_row(label, f"{roof.work.bytes / 1e6:,.1f} MB", f"{roof.work.flops / 1e9:,.4g}",
                      f"{roof.work.exponentials:.3g}", _us(times[MEMORY]), _us(times[PRODUCTS]),
                      _us(times[EXPONENTIALS]), card.resource_label(roof.bound),
                      *(_reached(cell_of(v, label), roof) for v in variants))
    return table
