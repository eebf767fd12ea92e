"""Terminal output: rich tables for measurements, verification and listings, and progress bars."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from attnbench.runner import Measurement
from attnbench.verify import VerifyReport

if TYPE_CHECKING:
    from attnbench.compare import AgainstReport, MatrixView
    from attnbench.results import Cell

console = Console()
err_console = Console(stderr=True)


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr; yields a function that advances it by n units."""
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total)
        yield lambda n: progress.advance(task, n)


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"


def milliseconds(value: float) -> str:
    return f"{value:.4f} ms" if value < 1 else f"{value:.3f} ms"


def measurement_table(m: Measurement) -> Table:
    """The table `attnbench run` prints: phase times, kernel statistics, throughput, check."""
    k = m.kernel
    table = Table(title=f"{m.variant} on {m.case} ({m.shape}) — {m.device}", show_header=True)
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("notes")
    table.add_row("input", seconds(m.input_s), "reading the testcase file")
    on_host = m.peak_flops is None
    compute_note = "the host computation" if on_host else "device allocation + host-to-device + kernels + device-to-host"
    table.add_row("compute", seconds(m.compute_s), compute_note)
    table.add_row("output", seconds(m.output_s), "writing the output file")
    table.add_row("total", seconds(m.total_s), f"compile {m.compile_s:.3f} s not included")
    timed = "pass" if on_host else "kernel"
    samples = f"{k.count} sample{'s' if k.count != 1 else ''}"
    table.add_row(f"{timed} median", milliseconds(k.median), samples)
    table.add_row(f"{timed} min / max", f"{milliseconds(k.min)} / {milliseconds(k.max)}", "")
    table.add_row(f"{timed} stddev", milliseconds(k.stdev), f"noise {100 * k.noise:.2f}%, {k.outliers} outliers")
    peak = f"{100 * m.peak_fraction:.1f}% of FP32 peak" if m.peak_fraction is not None else ""
    table.add_row("TFLOP/s", f"{m.tflops:.3f}", f"4*B*N*N*d / kernel median; {peak}".rstrip("; "))
    if m.verification is not None:
        v = m.verification
        verdict = "[green]PASS[/green]" if v.passed else "[red]FAIL[/red]"
        table.add_row("check", verdict, f"{v.rule()}; max abs {v.max_abs_error:.3g}, relL2 {v.rel_l2_error:.3g}")
    return table


def print_warnings(warnings: list[str]) -> None:
    for warning in warnings:
        err_console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)


def verify_table(report: VerifyReport, title: str) -> Table:
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    verdict = "[green]PASS[/green]" if report.passed else "[red]FAIL[/red]"
    table.add_row("verdict", f"{verdict} ({report.rule()})")
    table.add_row("max abs error", f"{report.max_abs_error:.6g}")
    table.add_row("max relative error", f"{report.max_rel_error:.6g}")
    table.add_row("relative L2 error", f"{report.rel_l2_error:.6g}")
    table.add_row("NaN / Inf", f"{report.nan_count} / {report.inf_count}")
    table.add_row("failing elements", f"{report.failing} of {report.elements}")
    if report.worst is not None:
        table.add_row("worst element", str(report.worst))
    for i, mismatch in enumerate(report.first_failures):
        table.add_row("first failures" if i == 0 else "", str(mismatch))
    return table


# -- compare and sweep ---------------------------------------------------------------------------------
def cell_line(cell: "Cell") -> str:
    """One finished cell, as the matrix prints it while it runs."""
    if cell.ok and cell.measurement is not None:
        k = cell.measurement.kernel
        return (f"{cell.variant} on {cell.case}: {milliseconds(k.median)} ±{100 * k.noise:.1f}% "
                f"({k.count} samples), {cell.measurement.tflops:.3g} TFLOP/s")
    return f"{cell.variant} on {cell.case}: {cell.status.upper()} {cell.message}"


class MatrixProgress:
    """The compare/sweep progress: one bar over all cells weighted by their FLOPs (for the ETA),
    transient bars for generating inputs and references, and a line per finished cell."""

    def __init__(self, title: str, quiet: bool = False) -> None:
        self.title = title
        self.quiet = quiet
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[cells]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=err_console,
            transient=True,
        )
        self._task: TaskID | None = None
        self._done = 0
        self._total = 0

    def __enter__(self) -> "MatrixProgress":
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def start(self, total_cells: int, total_work: float) -> None:
        self._total = total_cells
        self._task = self._progress.add_task(self.title, total=max(total_work, 1.0), cells=f"0/{total_cells} cells")

    @contextmanager
    def progress(self, description: str, total: int) -> Iterator[Callable[[int], None]]:
        task = self._progress.add_task(description, total=total, cells="")
        try:
            yield lambda n: self._progress.advance(task, n)
        finally:
            self._progress.remove_task(task)

    def cell_started(self, variant: str, case: str) -> None:
        if self._task is not None:
            self._progress.update(self._task, description=f"{variant} on {case}")

    def cell_finished(self, cell: "Cell", work: float) -> None:
        self._done += 1
        if self._task is not None:
            self._progress.update(self._task, advance=work, cells=f"{self._done}/{self._total} cells")
        if not self.quiet and cell.status != "refused":
            self._progress.console.print(escape(cell_line(cell)), highlight=False)


def _matrix_cell_text(view: "MatrixView", variant: str, case: str) -> str:
    cell = view.result.cell(variant, case)
    if cell is None:
        return "-"
    if cell.status == "refused":
        return "[dim]refused[/dim]"
    if cell.status == "wrong":
        return "[red]WRONG[/red]"
    if cell.status == "error":
        return "[red]ERROR[/red]"
    if cell.measurement is None:  # a whole program: process time only
        return f"process {cell.extra.get('process_s', 0.0):.3f} s\n[dim]no kernel time[/dim]"
    assert cell.measurement is not None
    k = cell.measurement.kernel
    lines = [f"{milliseconds(k.median)} ±{100 * k.noise:.1f}%", f"{cell.measurement.tflops:.3g} TFLOP/s"]
    if variant == view.baseline:
        lines.append("[dim]baseline[/dim]")
    else:
        comparison = view.comparison(variant, case)
        if comparison is not None:
            colour = {"FASTER": "green", "SLOWER": "red"}.get(comparison.verdict.value, "")
            verdict = f"[{colour}]{comparison.verdict.value}[/{colour}]" if colour else comparison.verdict.value
            lines.append(f"{comparison.describe_speedup()} {verdict}")
    return "\n".join(lines)


def matrix_table(view: "MatrixView", title: str) -> Table:
    """Variants x inputs: time ± noise, TFLOP/s, speedup over the baseline with its verdict; geomeans."""
    result = view.result
    table = Table(title=title, show_lines=True)
    table.add_column("variant")
    for case in result.case_labels:
        table.add_column(case, justify="right")
    table.add_column("geomean", justify="right")
    for variant in result.variant_names:
        geo_tflops = view.geomean_tflops(variant)
        geo = [f"{geo_tflops:.3g} TFLOP/s" if geo_tflops else "-"]
        speedup = view.geomean_speedup(variant) if variant != view.baseline else None
        if speedup is not None:
            geo.append(f"{speedup.describe()}")
        table.add_row(variant, *[_matrix_cell_text(view, variant, c) for c in result.case_labels], "\n".join(geo))
    return table


def sweep_table(view: "MatrixView", title: str) -> Table:
    """Inputs x variants for sweeps: time ± noise and TFLOP/s, one row per size."""
    result = view.result
    table = Table(title=title)
    table.add_column("input")
    table.add_column("B, N, d", justify="right")
    for variant in result.variant_names:
        table.add_column(variant, justify="right")
    for label in result.case_labels:
        case = result.case(label)
        shape = f"{case.shape.B}, {case.shape.N}, {case.shape.d}" if case else ""
        cells = [_matrix_cell_text(view, v, label).replace("\n", "  ") for v in result.variant_names]
        table.add_row(label, shape, *cells)
    return table


def against_table(report: "AgainstReport") -> Table:
    """Each cell against the saved run: saved and current medians, change, verdict."""
    table = Table(title=f"against {report.saved_name}")
    for column in ("variant", "input", "saved", "now", "change", "verdict", "note"):
        table.add_column(column, justify="right" if column in ("saved", "now", "change") else "left")
    for row in report.rows:
        saved = milliseconds(row.saved.stats.median) if row.saved is not None and row.saved.ok and row.saved.stats else "-"
        now = milliseconds(row.current.stats.median) if row.current is not None and row.current.ok and row.current.stats else "-"
        change = row.comparison.describe_change() if row.comparison is not None else ""
        colour = "red" if row.regression or row.outcome in ("NOW WRONG", "STILL WRONG") else (
            "green" if row.outcome in ("FASTER", "FIXED") else "")
        outcome = row.outcome + (" (regression)" if row.regression else "")
        verdict = f"[{colour}]{escape(outcome)}[/{colour}]" if colour else escape(outcome)
        table.add_row(row.variant, row.case, saved, now, change, verdict, escape(row.note))
    return table


def ladder_tables(steps_by_case: dict, claims_device: str) -> list[Table]:
    """The ladder view per input: each step's time, its speedup over the step before, report 004's."""
    tables = []
    for case, steps in steps_by_case.items():
        table = Table(title=f"ladder on {case}; report 004's computing time on a {claims_device} beside it")
        for column in ("step", "time", "TFLOP/s", "vs step before", "004 time", "004 speedup", "direction"):
            table.add_column(column, justify="left" if column in ("step", "direction") else "right")
        for s in steps:
            claimed = f"{s.claimed_s:.3f} s" if s.claimed_s is not None else "-"
            claimed_speedup = f"{s.claimed_speedup:.2f}x" if s.claimed_speedup is not None else "-"
            if s.kernel_ms is None:
                status = s.cell.status.upper() if s.cell is not None else "-"
                table.add_row(s.variant, status, "-", "-", claimed, claimed_speedup, "-")
                continue
            measured = (f"{s.vs_previous.describe_speedup()} {s.vs_previous.verdict.value}" if s.vs_previous
                        else "first step")
            table.add_row(s.variant, milliseconds(s.kernel_ms), f"{s.tflops:.3g}", measured, claimed, claimed_speedup,
                          s.agreement)
        tables.append(table)
    return tables
