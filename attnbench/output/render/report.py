"""`attnbench report`: one Markdown document from saved results, with its tables and plots.

It is the document a report's author would otherwise write by hand: where it was measured, each
run's tables (time, TFLOP/s, speedup with uncertainty, correctness), the square lab's report lines,
the ladder next to report 004's claims, the precision ladder (worst error against speed) where variants of
several arithmetics ran, and the plots beside the document as PNG files.
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass, field
from pathlib import Path

from attnbench.analysis.ladder import has_ladder
from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN
from attnbench.cases.suite import refuse_suite_file
from attnbench.errors import OutputError, PlotsUnavailable
from attnbench.files import check_output_path, is_special, write_text
from attnbench.kernels.user import refuse_kernel_source
from attnbench.output.plots import result_plots as plotting
from attnbench.output.plots.precision_ladder import error_vs_speed, has_precision_ladder
from attnbench.output.plots.roofline import roofline_plot
from attnbench.output.render.markdown import ladder_section, result_section
from attnbench.results.resultset import ResultKind, ResultSet


@dataclass
class ReportOutcome:
    path: Path
    plots: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _how_timed(results: list[ResultSet]) -> str:
    """What the times are, for the runs this report holds: CUDA events only where a GPU timed kernels (a run with
    no GPU timed host passes by the wall clock). A judge's program runs once a case and is checked after it
    ran, so the benchmarks' promise (checked before timed, noise beside each time, no time for a wrong output)
    is said of them alone: a judge-only report made it of rows showing "NO OUTPUT ... 5.451 s"."""
    benchmarks = [r for r in results if r.kind is not ResultKind.JUDGE]
    kinds = []
    if any(r.metadata.get("gpu") for r in benchmarks):
        kinds.append("kernel times are medians of CUDA-event samples (the L2 cache flushed before each unless the run "
                     "says otherwise)")
    if any(not r.metadata.get("gpu") for r in benchmarks):
        kinds.append("host variants' times (no GPU) are medians of the host's wall clock around each pass")
    sentences = []
    if kinds:
        text = "; ".join(kinds) + (", each printed with its relative noise; every output was checked against a "
                                   "float64 reference before it was timed, and a wrong output has no time")
        sentences.append(text[0].upper() + text[1:] + ".")
    if len(benchmarks) < len(results):
        sentences.append("Judged programs are timed by the wall clock from launch to exit, one run a case (no noise), "
                         "and checked against a float64 reference after it: a failed case keeps its run's time.")
    return " ".join(sentences)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
REPORT_TITLE = "# attnbench report"


def _refuse_replacing_what_is_no_report(out: Path) -> None:
    """The document may replace an older report (a report made again) or an empty file, never another file:
    `-o notes.md`, `-o hw4.c` or `-o` a saved results JSON of the folder wrote the report over it with exit 0."""
    if not out.is_file() or is_special(out):  # a folder or a device is check_output_path's to judge
        return
    try:
        with out.open("rb") as handle:
            head = handle.read(len(REPORT_TITLE))
    except OSError:
        return  # what cannot be read is the write's to report
    if head and head != REPORT_TITLE.encode():
        raise OutputError(f"{out}: exists and is no attnbench report, which the report would replace; give -o "
                          "another name")
PLOT_KINDS = ("throughput", "ceilings", "roofline", "precision")


def _refuse_replacing_what_is_no_plot(out: Path, sections: int) -> None:
    """A plot may replace an older plot of the same name (a report made again), never another file: `-o notes.md`
    wrote its roofline over the user's own `notes_1_roofline.png` that was no PNG (a file it did not write)."""
    names = [f"{out.stem}_{index}_{kind}.png" for index in range(1, sections + 1) for kind in PLOT_KINDS]
    names += [f"{out.stem}_ladder_{index}.png" for index in range(1, sections + 1)]
    for path in (out.parent / name for name in names):
        if not os.path.lexists(path):
            continue
        try:
            with path.open("rb") as handle:
                is_plot = path.is_file() and not path.is_symlink() and handle.read(8) == PNG_SIGNATURE
        except OSError:
            is_plot = False
        if not is_plot:
            raise OutputError(f"{path}: the report's plot of this name would replace it, and it is no PNG plot; "
                              "give -o another name, or --no-plots")


def write_report(results: list[ResultSet], out: Path, ladder: bool | None = None, plots: bool = True,
                 same_within: float = DEFAULT_SAME_WITHIN) -> ReportOutcome:
    """Write the Markdown report to `out` and its plots beside it. The path is checked before any plot is
    drawn, so an error names `out`, not a plot's derived name."""
    outcome = ReportOutcome(out)
    folder = out.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{out}: cannot make its folder: {exc.strerror or exc}") from None
    check_output_path(out, [r.path for r in results if r.path is not None])  # never over a file it reads
    refuse_suite_file(out, "the report")
    refuse_kernel_source(out, "the report")
    _refuse_replacing_what_is_no_report(out)
    can_plot = plots
    if plots and is_special(out):  # /dev/stdout: plots "beside it" were PNG files written into /dev
        can_plot = False
        outcome.notes.append(f"no plots: {out} is not a file, so no folder beside it holds them "
                             "(give -o a file, or --no-plots)")
    if can_plot:
        try:
            plotting.pyplot()
        except PlotsUnavailable as exc:
            can_plot = False
            outcome.notes.append(str(exc))
    if can_plot:
        _refuse_replacing_what_is_no_plot(out, len(results))
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    names = ", ".join(f"`{r.path.name if r.path else r.name}`" for r in results)
    parts = [
        REPORT_TITLE,
        f"Made by `attnbench report` on {date} from {len(results)} result file(s): {names}. {_how_timed(results)} Noise is the half-width of the median's 95% confidence interval; speedups carry both "
        "noises; SAME / FASTER / SLOWER are called only beyond both noises plus "
        f"{100 * same_within:g}% for run-to-run drift.",
    ]
    for index, result in enumerate(results, 1):
        section = result_section(result, f"{index}. ", same_within, level=3)
        if can_plot and result.kind is not ResultKind.JUDGE:  # a judge has process times only: no plots
            stem = f"{out.stem}_{index}"
            images = []
            listed = set(result.variant_names)
            drawn = any(c.ok and c.variant in listed for c in result.cells)  # the plots draw the listed variants only
            if result.kind is ResultKind.SWEEP and drawn:  # a file listing no variant drew an empty plot, with
                # matplotlib's "No artists with labels" warning printed raw
                images.append(("Throughput against size", plotting.throughput_vs_size(result, folder / f"{stem}_throughput.png")))
            if drawn:  # an ok cell of a variant the file does not list (a hand-edited file) left it nothing, and a traceback
                images.append(("Against the ceilings", plotting.ceilings_chart(result, folder / f"{stem}_ceilings.png")))
                images.append(("Roofline", roofline_plot([result], folder / f"{stem}_roofline.png")))
            if has_precision_ladder(result):
                images.append(("Precision ladder: worst error against speed",
                                error_vs_speed(result, folder / f"{stem}_precision.png")))
            for title, path in images:
                outcome.plots.append(path)
                section.append(f"![{title}]({path.name})")
        parts.append("\n\n".join(section))
    want_ladder = ladder if ladder is not None else any(has_ladder(r) for r in results)
    if want_ladder:
        text, found = ladder_section(results, same_within)
        parts.append(text)
        if can_plot:
            for index, (result, steps_by_case) in enumerate(found, 1):
                gpu = (result.metadata.get("gpu") or {}).get("name", "CPU")
                path = plotting.ladder_bars(steps_by_case, folder / f"{out.stem}_ladder_{index}.png", gpu)
                outcome.plots.append(path)
                parts.append(f"![The ladder, {result.name}]({path.name})")
    if outcome.notes:
        parts.append("Notes: " + "; ".join(outcome.notes) + ".")
    text = "\n\n".join(parts) + "\n"
    write_text(out, text)
    return outcome
