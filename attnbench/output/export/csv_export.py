"""The CSV format: one row per cell, every number at full precision."""

from __future__ import annotations

import csv
import io
from typing import Any, Iterable

from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN
from attnbench.analysis.view import MatrixView
from attnbench.output.export.exporter import Exporter
from attnbench.results.metadata import gpu_label
from attnbench.results.resultset import ResultSet


CSV_COLUMNS = (
    "kind", "variant", "case", "B", "N", "d", "status", "median_ms", "mean_ms", "stdev_ms", "min_ms", "max_ms",
    "p20_ms", "p80_ms", "noise", "samples", "outliers", "converged", "tflops", "peak_fraction", "ceiling",
    "ceiling_fraction", "floor_ms", "sm_clock_mhz", "sm_clock_min_mhz", "sm_clock_max_mhz", "clock_moved_median",
    "compute_s",
    "compile_s", "baseline", "speedup", "speedup_error", "verdict", "check_passed", "max_abs_error",
    "rel_l2_error", "message", "input_sha256", "gpu", "commit", "date", "against", "against_verdict",
    "against_change", "against_regression",
)


def _csv_value(value: Any) -> str:
    """Full precision: repr of a float round-trips exactly."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


class CsvExporter(Exporter):
    """One row per cell, every number at full precision."""

    suffix = ".csv"

    def rows(self, result: ResultSet, same_within: float = DEFAULT_SAME_WITHIN) -> Iterable[dict[str, Any]]:
        view = MatrixView(result, same_within=same_within)
        git = result.metadata.get("git") or {}
        against = result.settings.get("against") or {}
        against_cells = {(c["variant"], c["case"]): c for c in against.get("cells", [])}
        for cell in result.cells:
            case = result.case(cell.case)
            shape = case.shape if case else (cell.measurement.shape if cell.measurement else None)
            row: dict[str, Any] = {
                "kind": result.kind, "variant": cell.variant, "case": cell.case,
                "B": shape.B if shape else None, "N": shape.N if shape else None, "d": shape.d if shape else None,
                "status": cell.status, "message": cell.message,
                "input_sha256": case.input_sha256 if case else None,
                "gpu": gpu_label(result.metadata), "commit": git.get("commit"),
                "date": result.metadata.get("date"), "baseline": view.baseline,
            }
            if cell.check:
                row["check_passed"] = cell.check.get("passed")
                row["max_abs_error"] = cell.check.get("max_abs_error")
                row["rel_l2_error"] = cell.check.get("rel_l2_error")
            m = cell.measurement
            if m is not None:
                k = m.kernel
                row.update({
                    "median_ms": k.median, "mean_ms": k.mean, "stdev_ms": k.stdev, "min_ms": k.min, "max_ms": k.max,
                    "p20_ms": k.quantile(0.2), "p80_ms": k.quantile(0.8), "noise": k.noise, "samples": k.count,
                    "outliers": k.outliers, "converged": k.converged, "tflops": None if m.impossible else m.tflops,
                    "peak_fraction": m.peak_fraction, "compute_s": m.compute_s, "compile_s": m.compile_s,
                    "floor_ms": m.floor.seconds * 1e3 if m.floor is not None else None,
                    "sm_clock_mhz": k.clock.median if k.clock else None,
                    "sm_clock_min_mhz": k.clock.low if k.clock else None,
                    "sm_clock_max_mhz": k.clock.high if k.clock else None,
                    "clock_moved_median": (k.clock_warning is not None) if k.clock else None,
                    "ceiling": m.ceiling["name"] if m.ceiling else None,
                    "ceiling_fraction": m.ceiling["fraction"] if m.ceiling else None,
                })
            verdict = against_cells.get((cell.variant, cell.case))
            if verdict is not None:
                row.update({"against": against["saved"], "against_verdict": verdict["verdict"],
                            "against_change": verdict["change"], "against_regression": verdict["regression"]})
            comparison = view.comparison(cell.variant, cell.case)
            if comparison is not None:
                row.update({"speedup": comparison.speedup, "speedup_error": comparison.speedup_error,
                            "verdict": comparison.verdict.value})
            yield row

    def render(self, result: ResultSet) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row in self.rows(result):
            writer.writerow([_csv_value(row.get(column)) for column in CSV_COLUMNS])
        return buffer.getvalue()
