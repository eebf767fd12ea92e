"""Result printers, one class per format: JSON (the saved schema), CSV (full precision), Markdown.

The Markdown sections are shared with `attnbench report`, which stitches several results and their
plots into one document.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Iterable

from attnbench.compare import MatrixView, relative_noise_text
from attnbench.metadata import gpu_label
from attnbench.results import ERROR, OK, REFUSED, WRONG, Cell, ResultSet, dumps
from attnbench.testcase import atomic_write
from attnbench.verdict import DEFAULT_SAME_WITHIN


def _write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda f: f.write(text.encode()))


class JsonExporter:
    """The versioned results schema (see attnbench.results)."""

    suffix = ".json"

    def render(self, result: ResultSet) -> str:
        return dumps(result)

    def write(self, result: ResultSet, path: Path) -> None:
        _write_text(path, self.render(result))


CSV_COLUMNS = (
    "kind", "variant", "case", "B", "N", "d", "status", "median_ms", "mean_ms", "stdev_ms", "min_ms", "max_ms",
    "p20_ms", "p80_ms", "noise", "samples", "outliers", "converged", "tflops", "peak_fraction", "compute_s",
    "compile_s", "baseline", "speedup", "speedup_error", "verdict", "check_passed", "max_abs_error",
    "rel_l2_error", "message", "input_sha256", "gpu", "commit", "date",
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


class CsvExporter:
    """One row per cell, every number at full precision."""

    suffix = ".csv"

    def rows(self, result: ResultSet, same_within: float = DEFAULT_SAME_WITHIN) -> Iterable[dict[str, Any]]:
        view = MatrixView(result, same_within=same_within)
        git = result.metadata.get("git") or {}
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
                    "outliers": k.outliers, "converged": k.converged, "tflops": m.tflops,
                    "peak_fraction": m.peak_fraction, "compute_s": m.compute_s, "compile_s": m.compile_s,
                })
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

    def write(self, result: ResultSet, path: Path) -> None:
        _write_text(path, self.render(result))


# -- Markdown ------------------------------------------------------------------------------------------
def md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(header: list[str], rows: list[list[str]], align_right_from: int = 1) -> str:
    lines = ["| " + " | ".join(md_escape(h) for h in header) + " |"]
    lines.append("|" + "|".join(" --- " if i < align_right_from else " ---: " for i in range(len(header))) + "|")
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def format_ms(value: float) -> str:
    if value >= 100:
        return f"{value:.1f} ms"
    if value >= 1:
        return f"{value:.3f} ms"
    return f"{value:.4f} ms"


def _status_text(cell: Cell | None) -> str | None:
    if cell is None:
        return "-"
    if cell.status == WRONG:
        return "WRONG"
    if cell.status == REFUSED:
        return "refused"
    if cell.status == ERROR:
        return "ERROR"
    return None


def time_text(cell: Cell | None) -> str:
    if cell is not None and cell.status == OK and cell.measurement is None:  # a whole program: process time only
        return f"process {cell.extra.get('process_s', 0.0):.3f} s"
    status = _status_text(cell)
    if status is not None:
        return status
    assert cell is not None and cell.stats is not None
    return f"{format_ms(cell.stats.median)} {relative_noise_text(cell.stats.noise)}"


def tflops_text(cell: Cell | None) -> str:
    if cell is not None and cell.status == OK and cell.measurement is None:  # a whole program: no kernel time
        return "-"
    status = _status_text(cell)
    if status is not None:
        return status
    assert cell is not None and cell.measurement is not None
    return f"{cell.measurement.tflops:.3g}"


def speedup_text(view: MatrixView, variant: str, case: str) -> str:
    """'1.52 ± 0.03x FASTER', or the cell's status when it has no speed."""
    comparison = view.comparison(variant, case)
    if comparison is not None:
        return f"{comparison.describe_speedup()} {comparison.verdict.value}"
    cell = view.result.cell(variant, case)
    if cell is not None and cell.status == OK and cell.measurement is None:
        return "- (a program: no kernel time)"
    return _status_text(cell) or "- (no baseline time)"


def environment_lines(result: ResultSet) -> list[str]:
    """Where and how a result was measured, as Markdown bullet lines."""
    meta = result.metadata
    gpu = meta.get("gpu") or {}
    git = meta.get("git") or {}
    state = meta.get("gpu_state") or {}
    lines = []
    if gpu:
        lines.append(
            f"- GPU: {gpu.get('name')} (compute {gpu.get('compute_capability')}, {gpu.get('sm_count')} SMs, "
            f"{gpu.get('sm_clock_mhz', 0):.0f} MHz boost, L2 {gpu.get('l2_bytes', 0) / 2**20:.0f} MiB, "
            f"FP32 peak {gpu.get('fp32_peak_tflops', 0):.1f} TFLOP/s)"
        )
        lines.append(f"- driver {gpu.get('driver_version')}, CUDA {gpu.get('cuda_version')}, nvcc {meta.get('nvcc_version')}, "
                     f"pycuda {meta.get('pycuda_version')}")
        if state:
            lines.append(f"- clocks at the end: SM {state.get('sm_clock_mhz')} of {state.get('max_sm_clock_mhz')} MHz, "
                         f"memory {state.get('memory_clock_mhz')} MHz, {state.get('power_w')} W, "
                         f"{state.get('temperature_c')} C ({state.get('source')})")
    else:
        lines.append("- no GPU (host variants only)")
    software = f"numpy {meta.get('numpy_version')}, Python {meta.get('python_version')}"
    if meta.get("torch_version"):
        software += f", torch {meta.get('torch_version')}"
    lines.append(f"- {software}; CPU {meta.get('cpu')} ({meta.get('cpu_count')} threads)")
    commit = git.get("commit")
    commit_text = f"{commit[:12]}{' (with uncommitted changes)' if git.get('dirty') else ''}" if commit else "unknown"
    lines.append(f"- attnbench {meta.get('attnbench_version')}, commit {commit_text}, {meta.get('date')}")
    policy = result.policy
    if result.kind == "judge":
        lines.append(f"- timing: {policy.get('timing')}; {result.settings.get('time_limits')}")
    elif policy and not gpu:
        lines.append("- timing: host wall time per pass (the cpu variant: its first pass, plus --reps passes if asked)")
    elif policy:
        if policy.get("reps"):
            sampling = f"{policy['reps']} samples"
        else:
            sampling = (f"samples until noise < {100 * policy.get('target_noise', 0):g}% (at least {policy.get('min_samples')} "
                        f"and {policy.get('min_time_s')} s, at most {policy.get('timeout_s')} s)")
        flush = "L2 flushed before each sample" if policy.get("flush_l2") else "L2 not flushed (--hot)"
        lines.append(f"- timing: kernel time from CUDA events, {policy.get('warmup')} warm-up passes, {sampling}, {flush}")
    if result.settings.get("lab_timing"):
        lines.append("- timing: the square-attention lab's rule (double the passes until one batch takes 0.1 s)")
    if meta.get("command"):
        lines.append(f"- command: `{meta['command']}`")
    return lines


def matrix_sections(result: ResultSet, same_within: float = DEFAULT_SAME_WITHIN, level: int = 3) -> str:
    """Kernel time, TFLOP/s, speedup and correctness tables of a result set, in Markdown."""
    view = MatrixView(result, same_within=same_within)
    h = "#" * level
    cases, variants = result.case_labels, result.variant_names
    parts = []
    by_case = result.kind == "sweep" and len(cases) > len(variants)  # sweeps: one row per size
    if by_case:
        header = ["input", *[f"{v} time" for v in variants], *[f"{v} TFLOP/s" for v in variants]]
        rows = [[c, *[time_text(result.cell(v, c)) for v in variants], *[tflops_text(result.cell(v, c)) for v in variants]]
                for c in cases]
        parts.append(f"{h} Kernel time (median ± noise) and TFLOP/s\n\n" + md_table(header, rows))
        geo = [[v, f"{view.geomean_tflops(v):.3g}" if view.geomean_tflops(v) else "-"] for v in variants]
        parts.append("Geometric mean TFLOP/s over the inputs:\n\n" + md_table(["variant", "TFLOP/s"], geo))
    else:
        rows = [[v, *[time_text(result.cell(v, c)) for c in cases]] for v in variants]
        parts.append(f"{h} Kernel time (median ± noise)\n\n" + md_table(["variant", *cases], rows))
        rows = []
        for v in variants:
            geo = view.geomean_tflops(v)
            rows.append([v, *[tflops_text(result.cell(v, c)) for c in cases], f"{geo:.3g}" if geo else "-"])
        parts.append(f"{h} TFLOP/s (4·B·N²·d / kernel time)\n\n" + md_table(["variant", *cases, "geomean"], rows))
    others = [v for v in variants if v != view.baseline]
    if view.baseline is not None and others:
        title = (f"{h} Speedup over {view.baseline} (± one standard deviation; verdict from the noise, "
                 f"SAME within {100 * same_within:g}%)\n\n")
        geomeans = [view.geomean_speedup(v) for v in others]
        geo_texts = [g.describe() if g else "-" for g in geomeans]
        if by_case:
            rows = [[c, *[speedup_text(view, v, c) for v in others]] for c in cases]
            rows.append(["geomean", *geo_texts])
            parts.append(title + md_table(["input", *others], rows))
        else:
            rows = [[v, *[speedup_text(view, v, c) for c in cases], geo] for v, geo in zip(others, geo_texts)]
            parts.append(title + md_table(["variant", *cases, "geomean"], rows))
    parts.append(correctness_section(result, level))
    notes = notes_section(result)
    if notes:
        parts.append(notes)
    return "\n\n".join(parts)


def _check_text(cell: Cell | None) -> str:
    if cell is None or cell.status == REFUSED:
        return "-" if cell is None else "refused"
    if cell.status == ERROR:
        return "ERROR"
    check = cell.check or {}
    verdict = "pass" if check.get("passed") else "FAIL"
    parts = [verdict]
    if "max_abs_error" in check and check["max_abs_error"] is not None:
        parts.append(f"max {check['max_abs_error']:.2g}")
    if "rel_l2_error" in check and check["rel_l2_error"] is not None:
        parts.append(f"relL2 {check['rel_l2_error']:.2g}")
    if "l1_error" in check:
        parts.append(f"Σ|err| {check['l1_error']:.2g} of {check['bound']:.2g}")
    return ", ".join(parts)


def correctness_section(result: ResultSet, level: int = 3) -> str:
    h = "#" * level
    cases, variants = result.case_labels, result.variant_names
    rule = result.settings.get("check_rule", "")
    title = f"{h} Correctness (checked before timing{': ' + rule if rule else ''})\n\n"
    if result.kind == "sweep" and len(cases) > len(variants):
        rows = [[c, *[_check_text(result.cell(v, c)) for v in variants]] for c in cases]
        return title + md_table(["input", *variants], rows)
    rows = [[v, *[_check_text(result.cell(v, c)) for c in cases]] for v in variants]
    return title + md_table(["variant", *cases], rows)


def notes_section(result: ResultSet) -> str:
    """Wrong, failed and refused cells with their reasons, and the measurement warnings."""
    lines = []
    for cell in result.cells:
        if cell.status in (WRONG, ERROR):
            lines.append(f"- **{cell.status.upper()}** {cell.variant} on {cell.case}: {cell.message}")
    refused: dict[str, list[str]] = {}
    for cell in result.cells:
        if cell.status == REFUSED:
            refused.setdefault(cell.message.split(", and the case")[0], []).append(cell.case)
    for reason, labels in refused.items():
        lines.append(f"- refused: {reason} ({', '.join(labels)})")
    warnings: dict[str, list[str]] = {}
    for cell in result.cells:
        if cell.measurement is not None:
            for warning in cell.measurement.warnings + cell.measurement.kernel.warnings:
                warnings.setdefault(warning, []).append(f"{cell.variant}/{cell.case}")
    for warning, where in warnings.items():
        shown = ", ".join(where[:6]) + (f" and {len(where) - 6} more" if len(where) > 6 else "")
        lines.append(f"- warning ({shown}): {warning}")
    return "Notes:\n\n" + "\n".join(lines) if lines else ""


def lab_section(result: ResultSet) -> str:
    """The square-attention lab's report lines per variant, for square sweeps."""
    from attnbench.sweep import lab_report_lines

    if result.settings.get("sweep") != "square":
        return ""
    blocks = []
    for variant in result.variant_names:
        lines = lab_report_lines(result, variant)
        blocks.append(f"`{variant}`, in the lab's report format:\n\n```\n" + "\n".join(lines) + "\n```")
    return "\n\n".join(blocks)


def judge_section(result: ResultSet, level: int = 2) -> str:
    """The judge's scoreboard: one row per case with its verdict, process time and limit."""
    rows = []
    for cell in result.cells:
        case = result.case(cell.case)
        shape = f"{case.shape.B} x {case.shape.N} x {case.shape.d}" if case else "-"
        wall, limit = cell.extra.get("wall_s"), cell.extra.get("limit_s")
        rows.append([cell.case, shape, f"{cell.extra.get('verdict', cell.status)} {cell.message}".strip(),
                     "-" if wall is None else f"{wall:.3f} s", "-" if limit is None else f"{limit:g} s"])
    passed = sum(cell.status == "ok" for cell in result.cells)
    table = md_table(["case", "B x N x d", "result", "process time", "limit"], rows, align_right_from=3)
    return f"{'#' * level} Scoreboard\n\n{table}\n\n{passed} of {len(result.cells)} cases passed"


def markdown_document(result: ResultSet, same_within: float = DEFAULT_SAME_WITHIN) -> str:
    kind = {"sweep": "Sweep", "judge": "Judge"}.get(result.kind, "Compare")
    parts = [f"# {kind}: {result.name}", "\n".join(environment_lines(result))]
    if result.kind == "judge":
        return "\n\n".join([*parts, judge_section(result)]) + "\n"
    lab = lab_section(result)
    if lab:
        parts.append(lab)
    parts.append(matrix_sections(result, same_within, level=2))
    from attnbench.ladder import has_ladder

    if has_ladder(result):
        from attnbench.report import ladder_section

        parts.append(ladder_section([result], same_within, level=2)[0])
    return "\n\n".join(parts) + "\n"


class MarkdownExporter:
    """A Markdown page: environment, then time, TFLOP/s, speedup and correctness tables."""

    suffix = ".md"

    def render(self, result: ResultSet) -> str:
        return markdown_document(result, result.settings.get("same_within", DEFAULT_SAME_WITHIN))

    def write(self, result: ResultSet, path: Path) -> None:
        _write_text(path, self.render(result))


EXPORTERS = (JsonExporter(), CsvExporter(), MarkdownExporter())
