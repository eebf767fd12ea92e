"""attnbench.output.export: the saved formats; the CSV's header and values pinned against a saved copy."""

from pathlib import Path

from attnbench.output import export as saving
from attnbench.output.export import EXPORTERS, Exporter, csv_export
from attnbench.output.export.csv_columns import CSV_COLUMNS, CsvColumn
from attnbench.output.export.csv_export import CsvExporter
from attnbench.output.export.markdown_export import MarkdownExporter
from attnbench.results.floor import PhysicalFloor
from attnbench.results.resultset import IMPOSSIBLE, Cell, ResultSet, load
from tests.synthetic import COURSE_SHAPES, measurement, result_set

PINNED_CSV = Path(__file__).resolve().parents[2] / "data" / "export_pinned.csv"


def _floor(seconds: float) -> PhysicalFloor:
    return PhysicalFloor(seconds, "memory", 1 << 20, 4.8e12, "datasheet", 1 << 30, 1.9e15, "a test rate",
                         "NVIDIA H200", False)


def pinned_result() -> ResultSet:
    """Every kind of cell the CSV writes: timed (with clocks, a ceiling, a floor), wrong, impossible, refused,
    failed, one measured on an input the result does not list, and one with a verdict against a saved run."""
    times = {"naive": {"t10": 5.0, "t11": 7.0}, "bankfree": {"t10": 1.25, "t11": None}}
    against = {"saved": "earlier", "saved_path": None, "summary": "against earlier: SAME 1, SLOWER 1", "cells": [
        {"variant": "naive", "case": "t10", "verdict": "SAME", "change": 0.0125, "regression": False,
         "saved_ms": 4.94, "now_ms": 5.0, "change_text": "+1.2%", "note": ""},
        {"variant": "bankfree", "case": "t10", "verdict": "SLOWER", "change": 0.5, "regression": True,
         "saved_ms": 0.83, "now_ms": 1.25, "change_text": "+50%", "note": ""}]}
    result = result_set(times, {k: COURSE_SHAPES[k] for k in ("t10", "t11")}, baseline="naive",
                        settings={"against": against})
    timed = result.cell("naive", "t10").measurement
    timed.kernel.clocks_mhz = [1755.0] * 50
    timed.ceiling = {"name": "fp32 fma", "fraction": 0.25, "measured": True}
    timed.floor = _floor(1e-4)
    moved = result.cell("bankfree", "t10").measurement
    moved.kernel.clocks_mhz = [1980.0] * 25 + [1500.0] * 25
    impossible = measurement("naive", "t22", COURSE_SHAPES["t22"], 1e-6)
    impossible.floor = _floor(1e-3)
    result.cells.append(Cell("naive", "t22", IMPOSSIBLE, impossible.impossible_reason() or "", impossible,
                             {"passed": True, "max_abs_error": 0.0, "rel_l2_error": 0.0}))
    result.cells.append(Cell("naive", "t29", "refused", "naive needs N <= 16384, and the case has N=32768"))
    result.cells.append(Cell("bankfree", "t29", "error", "bankfree: launching kernel k failed: out of resources"))
    return result


def test_the_csv_header_is_the_saved_one():
    header = CsvExporter().render(pinned_result()).splitlines()[0]
    assert header == PINNED_CSV.read_text().splitlines()[0]


def test_the_csv_rows_are_the_saved_ones_value_for_value():
    assert CsvExporter().render(pinned_result()) == PINNED_CSV.read_text()


def test_every_format_writes_what_it_renders(tmp_path):
    result = pinned_result()
    assert [exporter.suffix for exporter in EXPORTERS] == [".json", ".csv", ".md"]
    for exporter in EXPORTERS:
        path = tmp_path / f"r{exporter.suffix}"
        exporter.write(result, path)
        assert path.read_text() == exporter.render(result)
    assert load(tmp_path / "r.json").to_dict() == result.to_dict()


class _PlainText(Exporter):
    suffix = ".txt"

    def render(self, result: ResultSet) -> str:
        return f"{result.name}: {len(result.cells)} cells\n"


def test_save_writes_every_registered_format_and_only_those(tmp_path, monkeypatch):
    monkeypatch.setattr(saving, "EXPORTERS", (*EXPORTERS, _PlainText()))
    paths = saving.save(pinned_result(), tmp_path, "pinned")
    assert [p.name for p in paths] == ["pinned.json", "pinned.csv", "pinned.md", "pinned.txt"]
    assert (tmp_path / "pinned.txt").read_text() == "pinned: 7 cells\n"  # the JSON names the result
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)


def test_each_csv_column_is_declared_once_with_a_hint():
    names = [column.name for column in CSV_COLUMNS]
    assert len(names) == len(set(names))
    assert all(column.hint for column in CSV_COLUMNS)


def test_one_declaration_adds_a_column_to_the_header_and_every_row(monkeypatch):
    peak = CsvColumn("peak_tflops", lambda row: row.cell.measurement and row.cell.measurement.peak_flops / 1e12,
                     "TFLOP/s")
    monkeypatch.setattr(csv_export, "CSV_COLUMNS", (*CSV_COLUMNS, peak))
    lines = CsvExporter().render(pinned_result()).splitlines()
    pinned = PINNED_CSV.read_text().splitlines()
    assert lines[0] == pinned[0] + ",peak_tflops"
    assert lines[1] == pinned[1] + ",66.9" and lines[-1] == pinned[-1] + ","


def test_the_markdown_page_ends_with_what_each_csv_column_holds():
    page = MarkdownExporter().render(pinned_result())
    legend = page.split("## The CSV's columns\n\n")[1]
    assert "| ms | median_ms, mean_ms, stdev_ms, min_ms, max_ms, p20_ms, p80_ms, floor_ms |" in legend
    assert "| TFLOP/s | tflops |" in legend and "| MHz | sm_clock_mhz, sm_clock_min_mhz, sm_clock_max_mhz |" in legend
    listed = [name for line in legend.splitlines()[2:] for name in line.split(" | ")[1].rstrip(" |").split(", ")]
    assert sorted(listed) == sorted(column.name for column in CSV_COLUMNS)


def test_a_csv_cell_holding_a_control_character_is_written_escaped():
    """ATTNBENCH_GIT_COMMIT (or a message quoting a user's path) holding an escape code reached the CSV raw."""
    result = pinned_result()
    result.metadata["git"] = {"commit": "\x1b]0;pwned\x07abc", "dirty": None, "source": "ATTNBENCH_GIT_COMMIT"}
    result.cells[0].message = "bad\x1b[2Jpath"
    text = CsvExporter().render(result)
    assert "\x1b" not in text and "\x07" not in text and "\\x1b]0;pwned\\x07abc" in text
