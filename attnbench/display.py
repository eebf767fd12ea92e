"""Terminal output: rich tables for measurements, verification and listings, and progress bars."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from attnbench.runner import Measurement
from attnbench.verify import VerifyReport

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
    table.add_row("kernel median" if not on_host else "pass median", milliseconds(k.median), f"{k.count} samples")
    table.add_row("kernel min / max", f"{milliseconds(k.min)} / {milliseconds(k.max)}", "")
    table.add_row("kernel stddev", milliseconds(k.stdev), f"noise {100 * k.noise:.2f}%, {k.outliers} outliers")
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
