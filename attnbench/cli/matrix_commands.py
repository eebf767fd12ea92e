"""Commands over many cells: compare, sweep, and report over saved results."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, TypeVar

import click

from attnbench import api
from attnbench.api import programs as api_programs
from attnbench.cli.options import (
    command_line,
    complete_cases,
    complete_variants,
    file_stem,
    notice,
    once,
    percent,
    placement_from,
    placement_options,
    refuse_what_would_be_ignored,
    timing_from,
    timing_options,
    tolerance,
    with_options,
)
from attnbench.errors import UsageError
from attnbench.files import DEFAULT_RESULTS_DIR, check_output_path, check_results_folder
from attnbench.output.render.markdown import lab_report_lines
from attnbench.output.render.matrix_run import (
    device_words,
    print_exit_status,
    print_matrix,
    print_problems,
    result_json,
    save_run,
)
from attnbench.output.render.terminal import MatrixProgress, console, print_line, print_table
from attnbench.output.tables import result_tables

Outcome = TypeVar("Outcome")

save_options = [
    click.option("--results-dir", default=DEFAULT_RESULTS_DIR, show_default=True, type=click.Path(file_okay=False),
                 help="Folder for the saved JSON, CSV and Markdown."),
    click.option("--name", default=None, callback=file_stem, help="File stem for the saved results [default: date_kind_gpu_inputs]."),
    click.option("--no-save", is_flag=True, help="Do not save the results."),
    click.option("--plot", is_flag=True, help="Also write PNG plots next to the results (needs matplotlib)."),
    click.option("--same-within", default="2%", show_default=True, callback=percent,
                 help="Differences smaller than this are SAME whatever the noise."),
    click.option("--json", "as_json", is_flag=True,
                 help="Print the run as JSON (the records of the saved JSON file) instead of the tables."),
]


def _run_saving_partial(title: str, call: Callable[[MatrixProgress], Outcome], results_dir: str, name: str | None,
                        no_save: bool, selector: str | None, as_json: bool) -> Outcome:
    """Run a matrix; on Ctrl-C (here or spread out), save what was measured before exiting 130. With --json,
    stdout gets what was measured as JSON, as the judge's does (it got the "saved" lines, no JSON)."""
    try:
        with MatrixProgress(title) as listener:
            return call(listener)
    except api.MatrixInterrupted as exc:
        partial = exc.partial
        if partial is not None and partial.cells:
            if not no_save:
                save_run(partial, results_dir, name, selector, False, json_on_stdout=as_json)
            if as_json:
                click.echo(result_json(partial))
        raise


def _render_compare(outcome: api.CompareOutcome, same_within: float, results_dir: str, name: str | None,
                    no_save: bool, plot: bool, as_json: bool = False, ladder_asked: bool = False) -> None:
    """The matrix, the ladder, the problems, the saved files, the verdicts against the saved run; then exit.
    With `as_json`, stdout carries only the run's JSON (the saved file's records); the rest goes to stderr."""
    result = outcome.result
    if as_json:
        print_problems(result)
        if not no_save:
            save_run(result, results_dir, name, outcome.save_selector, plot, json_on_stdout=True)
        for note in outcome.report.notes if outcome.report is not None else ():
            notice(note)
        click.echo(result_json(result))
        if outcome.exit_status and not outcome.is_sweep:
            print_exit_status(outcome.exit_status, result, outcome.report)
        sys.exit(outcome.exit_status)
    if outcome.is_sweep:  # a resumed sweep
        title = f"sweep over {result.settings.sweep} on {device_words(result)}"
    else:
        title = f"compare on {device_words(result)}, speedups over {result.baseline}"
    print_matrix(result, result.baseline, same_within, title)
    for case, steps in outcome.ladder.items():
        print_table(result_tables.ladder_table(f"ladder on {case}", steps))
    if ladder_asked and not outcome.ladder:  # the option printed nothing and said nothing
        notice("--ladder: no ladder view: no case has two timed variants of the ladder (`attnbench list` gives its "
               "order) to set one against the other")
    print_problems(result)
    if not no_save:
        save_run(result, results_dir, name, outcome.save_selector, plot)
    report = outcome.report
    if report is not None:
        print_table(result_tables.against_table(report))
        for note in report.notes:
            notice(note)
        print_line(report.summary())
    if outcome.exit_status and not outcome.is_sweep:
        print_exit_status(outcome.exit_status, result, report)
    sys.exit(outcome.exit_status)


@click.command()
@once("--variants", "-v", "variant_selector", shell_complete=complete_variants,
      help="Comma list of variants; `all` (every GPU variant), `ladder`, `torch` (the PyTorch peer).")
@once("--cases", "-c", "case_selector", shell_complete=complete_cases,
      help="Comma list of suite cases, suite groups (all, known, course, square, ...) or input files.")
@once("--baseline", "-b", shell_complete=complete_variants,
      help="Variant the speedups are against [default: the first].")
@with_options(timing_options)
@tolerance("--atol", api.COURSE_ATOL, "Absolute tolerance of the check.")
@tolerance("--rtol", 0.0, "Relative tolerance of the check.")
@once("--against", "against_path", type=click.Path(dir_okay=False),
              help="A saved results JSON: compare every common cell with it and count regressions.")
@click.option("--fail-slower", default=None, callback=percent,
              help="With --against: a SLOWER cell is a regression only if slower by more than this too (e.g. 5%).")
@click.option("--allow-other-gpu", is_flag=True, help="With --against: compare with a run from another GPU.")
@click.option("--allow-other-inputs", is_flag=True, help="With --against: compare although input bytes differ.")
@click.option("--ladder", "show_ladder", is_flag=True,
              help="Also print the ladder view: each step against the one before, beside report 004's claims.")
@with_options(placement_options)
@click.option("--sandbox", "sandbox_mode", type=click.Choice(api_programs.SANDBOX_MODES), default="auto",
              show_default=True,
              help="How exe: programs are confined, as judge's --sandbox: auto (bubblewrap where it works, else said "
                   "once), required (exit 3 when none can be made) or none.")
@click.option("--resume", "resume_folder", default=None, type=click.Path(file_okay=False, exists=True),
              help="Finish a Slurm run (compare or sweep) from its jobs folder: collect, resubmit lost jobs, save.")
@with_options(save_options)
def compare(variant_selector: str | None, case_selector: str | None, baseline: str | None, device: int,
            atol: float, rtol: float, against_path: str | None, fail_slower: float | None, allow_other_gpu: bool,
            allow_other_inputs: bool, show_ladder: bool, sandbox_mode: str, resume_folder: str | None, results_dir: str,
            name: str | None, no_save: bool, plot: bool, same_within: float, as_json: bool, **timing: object) -> None:
    """Compare variants (and the torch peer) over testcases: a checked, timed matrix with speedups.

    Every cell's output is checked against the float64 reference first (the course rule, --atol);
    a wrong cell shows its failure and gets no time. Speedups are against --baseline, with their
    uncertainty and a SAME / FASTER / SLOWER verdict from the measured noise, and a geometric mean
    per variant. The run is saved under --results-dir as JSON (with metadata), CSV and Markdown.

    With --against: each common cell is compared with the saved run; without --variants/--cases
    the saved run's are used. A regression is a cell SLOWER beyond the noise (and, with
    --fail-slower, by more than that). A saved run from another GPU, or with other input bytes,
    is refused unless allowed.

    With --gpus all (or 0,1): one worker process per GPU of this host, each case (all its variants)
    on one GPU, largest cases first; each cell records its GPU. With --executor slurm: Slurm jobs of
    about a minute each, submitted as one array through submitit; --resume FOLDER finishes such a
    run. Ctrl-C saves what was measured.

    Exit status: 0 when every cell is correct and none regressed; 1 when any cell is wrong, impossible, suspect or
    failed or any regressed (the counts are printed and saved); 2 for unusable options or results files;
    3 no GPU or no Slurm, or --sandbox required for an exe: program and no sandbox here; 130 interrupted.

    \b
    Examples:
      attnbench compare --variants naive,splitq,bankfree,torch --cases t10,t11,t22,t29,t30
      attnbench compare --variants ladder --cases known --baseline kernels --ladder --plot
      attnbench compare --against docs/results/2026-11-26_h100_final_default_peers_t01-t30.json --fail-slower 5%
      attnbench compare -v ladder -c course --gpus all
      attnbench compare -v ladder -c course --executor slurm --partition nvidia --gres gpu:1
    """
    placement = placement_from(timing, results_dir)
    refuse_what_would_be_ignored(click.get_current_context())
    if resume_folder is not None and (variant_selector or case_selector or against_path):
        raise click.UsageError("--resume takes the variants and cases from the jobs folder; "
                               "drop --variants, --cases and --against")
    if resume_folder is None and against_path is None and not (variant_selector and case_selector):
        raise click.UsageError("give --variants and --cases (or --against a saved run to repeat it)")
    if not no_save:
        check_results_folder(results_dir)  # before the first measurement, not after it
    _refuse_plots_without_matplotlib(plot)
    plan = api.plan_compare(api.CompareOptions(
        variants=variant_selector, cases=case_selector, baseline=baseline, timing=timing_from(timing), device=device,
        atol=atol, rtol=rtol, same_within=same_within, against=against_path, fail_slower=fail_slower,
        allow_other_gpu=allow_other_gpu, allow_other_inputs=allow_other_inputs, ladder=show_ladder,
        resume=resume_folder, command=command_line(), sandbox=sandbox_mode, **placement))
    outcome = _run_saving_partial("compare", lambda listener: plan.run(listener, notice), results_dir, name, no_save,
                                  plan.save_selector, as_json)
    _render_compare(outcome, same_within, results_dir, name, no_save, plot, as_json, show_ladder)


def _refuse_plots_without_matplotlib(plot: bool) -> None:
    """--plot where matplotlib is not installed: PlotsUnavailable (exit 3) before the first measurement. The run
    went on for its whole length, then said "no plots written" in a warning and exited 0."""
    if plot:
        from attnbench.output.plots.figures import pyplot

        pyplot()


@click.command()
@click.argument("what", type=click.Choice(api.SWEEP_AXIS_WORDS))
@click.option("--variants", "-v", "variant_selector", required=True, shell_complete=complete_variants,
              help="Comma list of variants (and `torch`), as for compare.")
@click.option("--sizes", default="all", show_default=True,
              help="square: the lab's sizes to run: all, a comma list, or a-b for the lab's sizes in [a, b].")
@click.option("--lab-timing", is_flag=True,
              help="square: time by the lab's rule (double the passes until one batch takes 0.1 s) instead of ours.")
@click.option("--values", default=None,
              help="N or d sweeps: a comma list, or a..b for powers of two ["
                   + "; ".join(f"{a.name}: {a.default_values}" for a in api.SWEEP_AXES if a.default_values) + "].")
@click.option("--batch", "-B", type=click.IntRange(1), default=None,
              help="N or d sweeps: batch size [default: B*N*d near 16 Mi elements].")
@click.option("--seq-len", "-N", type=click.IntRange(1), default=2048, show_default=True, help="d sweeps: N.")
@click.option("--head-dim", "-d", type=click.IntRange(1), default=64, show_default=True, help="N sweeps: d.")
@click.option("--baseline", "-b", default=None, help="Variant the speedups are against [default: none].")
@with_options(timing_options)
@with_options(placement_options)
@with_options(save_options)
def sweep(what: str, variant_selector: str, sizes: str, lab_timing: bool, values: str | None, batch: int | None,
          seq_len: int, head_dim: int, baseline: str | None, device: int, results_dir: str, name: str | None,
          no_save: bool, plot: bool, same_within: float, as_json: bool, **timing: object) -> None:
    """Sweep sizes: the square-attention lab's harness, or N or d of the (B, N, d) workload.

    `square` runs the lab's 102 sizes (Q, K, V all n x n; 4n^3 FLOPs), checks each output by the
    lab's rule (sum |Y - Y_ref| <= 100 n^2 FLT_EPSILON against a float64 reference, stored after the
    first run), and prints the lab's report lines and Average line, timed by our engine or, with
    --lab-timing, by the lab's doubling rule. `N` and `d` sweep one dimension with seeded inputs.
    Results are saved as for compare. Exit status: 1 when any cell is wrong, impossible, suspect or failed (the
    counts are printed), 2 for bad options.

    \b
    Examples:
      attnbench sweep square --variants gemm
      attnbench sweep square --variants tiled,torch --sizes 63-1025 --lab-timing
      attnbench sweep N --variants splitq,bankfree --values 128..32768 --head-dim 64
      attnbench sweep d --variants naive,torch --values 16,32,64,128 --seq-len 1024
      attnbench sweep square --variants gemm --gpus all
    """
    axis = api.sweep_axis(what).name
    _refuse_options_of_other_axes(click.get_current_context(), axis)
    refuse_what_would_be_ignored(click.get_current_context())
    placement = placement_from(timing, results_dir)
    if not no_save:
        check_results_folder(results_dir)  # before the first measurement, not after it
    _refuse_plots_without_matplotlib(plot)
    timing_options_ = timing_from(timing)

    def call(listener: MatrixProgress) -> api.ResultSet:
        return api.sweep(what, variant_selector, sizes=sizes, values=values, batch=batch, seq_len=seq_len,
                         head_dim=head_dim, baseline=baseline, lab_timing=lab_timing, timing=timing_options_,
                         device=device, same_within=same_within, listener=listener, command=command_line(),
                         notice=notice, **placement)

    result = _run_saving_partial(f"sweep {axis}", call, results_dir, name, no_save, axis, as_json)
    if as_json:
        print_problems(result)
        if not no_save:
            save_run(result, results_dir, name, axis, plot, json_on_stdout=True)
        click.echo(result_json(result))
        sys.exit(api.exit_status(result))
    if axis == "square":
        for variant in result.variant_names:
            click.echo(f"# {variant}")
            for line in lab_report_lines(result, variant):
                click.echo(line)
    print_matrix(result, baseline, same_within, f"sweep over {axis} on {device_words(result)}")
    print_problems(result)
    elapsed = result.settings.elapsed_s or 0.0
    console.print(f"sweep of {len(result.case_labels)} input(s) x {len(result.variant_names)} variant(s) took "
                  f"{elapsed:.1f} s", highlight=False)
    if not no_save:
        save_run(result, results_dir, name, axis if axis != "square" else "square", plot)
    sys.exit(api.exit_status(result))


# The sweep options each axis reads; one given for another axis was ignored without a word (square --values 5
# ran all 102 sizes).
_AXIS_OPTIONS = {"square": ("sizes", "lab_timing"), "N": ("values", "batch", "head_dim"),
                 "d": ("values", "batch", "seq_len")}


def _refuse_options_of_other_axes(ctx: click.Context, axis: str) -> None:
    ignored = [param.opts[0] for param in ctx.command.params
               if any(param.name in names for names in _AXIS_OPTIONS.values()) and param.name not in _AXIS_OPTIONS[axis]
               and ctx.get_parameter_source(param.name) not in (click.core.ParameterSource.DEFAULT, None)]
    if ignored:
        raise click.UsageError(f"sweep {axis} does not use {', '.join(ignored)}; drop "
                               f"{'it' if len(ignored) == 1 else 'them'} (see `attnbench sweep --help`)")


_NOT_MARKDOWN = (".html", ".htm", ".csv", ".json", ".pdf", ".png")  # formats the report is not written in


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--output", "-o", default=None, type=click.Path(dir_okay=False),
              help="The Markdown file [default: <first result>_report.md beside it]; plots go beside it.")
@click.option("--ladder/--no-ladder", default=None,
              help="Include the ladder section [default: when the results hold two or more ladder variants].")
@click.option("--no-plots", is_flag=True, help="Tables only, no PNG plots.")
@click.option("--same-within", default="2%", show_default=True, callback=percent,
              help="Differences smaller than this are SAME whatever the noise.")
def report(results: tuple[str, ...], output: str | None, ladder: bool | None, no_plots: bool, same_within: float) -> None:
    """Write one Markdown report from saved results: environment, tables, the ladder, plots.

    The plots (TFLOP/s against size for sweeps, the ladder as bars next to report 004's claims, the
    variants against the device's measured ceilings) are PNG files beside the report; without
    matplotlib the report says so and has tables only.

    \b
    Examples:
      attnbench report docs/results/2026-11-26_h100_final_default_peers_t01-t30.json
      attnbench report attnbench-results/*.json -o attnbench-results/report.md --ladder
    """
    from attnbench.output.render.report import write_report

    if output is not None:  # as given: Path() drops a trailing slash, and `-o rep/` wrote a file named rep
        check_output_path(output)
        if Path(output).suffix.lower() in _NOT_MARKDOWN:  # `-o report.html` got Markdown under an HTML name
            raise UsageError(f"{output}: the report is Markdown, not {Path(output).suffix.lstrip('.').upper()}; "
                             "give -o a .md name")
    loaded = api.results_for_report(results, notice)
    first = Path(results[0])
    out = Path(output) if output else first.with_name(f"{first.stem}_report.md")
    outcome = write_report(loaded, out, ladder, not no_plots, same_within)
    print_line(f"report {outcome.path}" + (f", plots {', '.join(p.name for p in outcome.plots)}" if outcome.plots else ""))
    for note in outcome.notes:
        notice(note)


COMMANDS = (compare, sweep, report)
