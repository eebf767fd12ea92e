"""A matrix run (compare or sweep) on the terminal: its tables, its wrong cells and warnings, the files
it is saved to, and the line that explains a failing exit status."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from attnbench.analysis.against import AgainstReport
from attnbench.analysis.view import MatrixView, failures
from attnbench.errors import PlotsUnavailable
from attnbench.output.render.terminal import console, err_console, print_line, print_table, print_warnings, printable
from attnbench.output.tables import result_tables
from attnbench.results.metadata import gpu_label
from attnbench.results.resultset import ResultSet


def device_words(result: ResultSet) -> str:
    """The device(s) of a run, in words: 'NVIDIA H200', or '2 GPUs (NVIDIA H200 x2)'."""
    gpus = result.metadata.get("gpus") or []
    if len(gpus) < 2:
        return gpu_label(result.metadata)
    names = [g.get("name") or "?" for g in gpus]
    return f"{len(gpus)} GPUs (" + ", ".join(f"{n} x{names.count(n)}" for n in dict.fromkeys(names)) + ")"


def print_matrix(result: ResultSet, baseline: str | None, same_within: float, title: str) -> None:
    """The run's tables under its title, the correctness table when any cell failed, the clock note."""
    console.print(f"[bold]{title}[/bold]", highlight=False, soft_wrap=True)
    view = MatrixView(result, baseline, same_within)
    bad = failures(result)
    for table in result_tables.matrix_tables(view, with_correctness=bad > 0):
        print_table(table)
    clock = result_tables.clock_note(result)
    if clock is not None:
        console.print(clock, highlight=False, soft_wrap=True, style="dim")


def print_problems(result: ResultSet) -> None:
    """Wrong and failed cells, refused ones with why (a table says only "refused"), then warnings grouped one
    line per kind."""
    for cell in result_tables.failed_cells(result):  # a program's own words are in the text: no markup read
        err_console.print(f"[red]{cell.status.upper()}[/red] {escape(printable(result_tables.failure_text(cell)))}",
                          highlight=False, markup=True, soft_wrap=True)
    for reason, cases in result_tables.grouped_refusals(result):
        err_console.print(escape(printable(f"refused: {reason} ({result_tables.places_text(cases)})")),
                          highlight=False, soft_wrap=True, style="dim")
    for warning, where in result_tables.grouped_warnings(result):
        print_warnings([f"{warning.sentence()} [{result_tables.places_text(where)}]"])


def save_run(result: ResultSet, results_dir: str | Path, name: str | None, selector: str | None,
             plot: bool, json_on_stdout: bool = False) -> None:
    """Save the run's JSON, CSV and Markdown (and its plots, when asked) and say where (on stderr when
    stdout carries the JSON)."""
    from attnbench.output.export import save
    from attnbench.output.plots.result_plots import PLOT_SUFFIXES

    # with --plot the stem names no existing plot-named file either: `--name c2` drew over the user's c2_roofline.png
    paths = save(result, results_dir, name, selector, PLOT_SUFFIXES if plot else ())
    for path in paths:
        print_line(f"saved {path}", err=json_on_stdout)
    if plot:
        from attnbench.output.plots.result_plots import plots_for

        try:
            written = plots_for(result, paths[0].parent, paths[0].stem)
        except PlotsUnavailable as exc:
            print_warnings([f"{exc}; no plots written"])
        else:
            for path in written:
                print_line(f"plot {path}", err=json_on_stdout)


def print_exit_status(status: int, result: ResultSet, report: AgainstReport | None) -> None:
    """Why a compare exits non-zero: its failed cells and, against a saved run, its regressions."""
    err_console.print(f"exit status {status}: {failures(result)} wrong, impossible, suspect or failed cell(s)"
                      + (f", {report.regressions} regression(s)" if report is not None else ""),
                      highlight=False, soft_wrap=True)


def result_json(result: ResultSet) -> str:
    """`--json`: the run as its saved JSON file holds it (strict JSON, the same records)."""
    from attnbench.results.resultset import dumps

    return dumps(result)
