"""The command line: wires testcases, variants, the runner and the printers together."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
import numpy as np
from rich.markup import escape
from rich.table import Table

from attnbench import __version__, suite
from attnbench.display import console, err_console, measurement_table, print_warnings, progress_bar, verify_table
from attnbench.errors import AttnbenchError, TestcaseError
from attnbench.testcase import Shape, Testcase, read_output, read_shape, read_testcase, write_output
from attnbench.timing import TimingPolicy
from attnbench.variants import Variant, default_variant, get_variant
from attnbench.verify import COURSE_ATOL, VerifyReport, compare_outputs


class AttnbenchGroup(click.Group):
    """Turns expected failures into one sentence and an exit code, never a traceback."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except AttnbenchError as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
            ctx.exit(exc.exit_code)
        except OSError as exc:
            where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
            err_console.print(f"[red]error:[/red] {escape(where + str(exc.strerror or exc))}", highlight=False)
            ctx.exit(1)
        except KeyboardInterrupt:
            err_console.print("interrupted; no partial output was left behind")
            ctx.exit(130)
        except Exception as exc:
            if type(exc).__module__.startswith("pycuda"):
                err_console.print(f"[red]error:[/red] CUDA: {escape(str(exc))}", highlight=False)
                ctx.exit(3)
            raise


@click.group(cls=AttnbenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="attnbench")
def main() -> None:
    """Run, verify, time and compare CUDA attention kernels on course-style testcases.

    \b
    Example:
      attnbench run t29 out.bin --variant bankfree --check
    """


# -- helpers ------------------------------------------------------------------------------------
def _generate_with_progress(case: suite.SuiteCase) -> None:
    with progress_bar(f"generating {case.name}", 3 * case.shape.elements) as advance:
        suite.generate_input(case, advance)


def _reference_with_progress(case: suite.SuiteCase) -> Path:
    if not suite.has_reference(case):
        with progress_bar(f"float64 reference of {case.name}", case.shape.B * case.shape.N) as advance:
            suite.generate_reference(case, advance)
    return suite.reference_path(case)


def _reference_for(resolved: suite.ResolvedCase, testcase: Testcase) -> np.ndarray:
    """The reference output: the suite's stored one, or float64 computed now for a user's file."""
    if resolved.suite_case is not None:
        return read_output(_reference_with_progress(resolved.suite_case), testcase.shape)
    from attnbench.reference import reference_output

    shape = testcase.shape
    with progress_bar(f"float64 reference of {resolved.label}", shape.B * shape.N) as advance:
        return reference_output(testcase, advance)


def _open_gpu(device: int):
    from attnbench.gpu import Gpu

    return Gpu(device)


def _choose_variant(name: str | None, shape: Shape) -> Variant:
    if name:
        variant = get_variant(name)
    else:
        from attnbench.gpu import gpu_probe

        reason = gpu_probe()
        variant = default_variant(shape, gpu_usable=reason is None)
        if reason is not None:
            err_console.print(f"note: {reason}; running the cpu variant", highlight=False, markup=False)
    variant.require(shape)
    return variant


def _policy(variant: Variant, warmup: int | None, reps: int | None, hot: bool, timeout: float, noise: float) -> TimingPolicy:
    if variant.backend == "cpu":  # a host pass is the slow part; one timed pass unless asked for more
        return TimingPolicy(warmup=warmup or 0, reps=reps or 1, flush_l2=False)
    return TimingPolicy(
        warmup=2 if warmup is None else warmup,
        reps=reps,
        flush_l2=not hot,
        timeout_s=timeout,
        target_noise=noise / 100,
    )


timing_options = [
    click.option("--warmup", type=click.IntRange(0), default=None, help="Untimed passes first [GPU: 2, cpu: 0]."),
    click.option("--reps", type=click.IntRange(1), default=None, help="Fixed sample count (default: sample until the noise is low)."),
    click.option("--hot", is_flag=True, help="Do not flush the L2 cache before each timed pass."),
    click.option("--timeout", type=float, default=10.0, show_default=True, help="Seconds at most for adaptive sampling."),
    click.option("--noise", "noise", type=float, default=1.0, show_default=True, help="Target relative noise, percent."),
    click.option("--device", type=click.IntRange(0), default=0, show_default=True, help="CUDA device index."),
]


def with_options(options):
    def decorate(f):
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


# -- commands -----------------------------------------------------------------------------------
@main.command()
@click.argument("names", nargs=-1, required=True)
@click.option("--no-reference", is_flag=True, help="Write only the input, not the float64 reference.")
@click.option("--force", is_flag=True, help="Regenerate even if the files exist.")
def gen(names: tuple[str, ...], no_reference: bool, force: bool) -> None:
    """Generate suite testcases (input and float64 reference) from their recorded seeds.

    NAMES are case names or groups (course, known, square, largehead, singlehead, odd, all).

    \b
    Example:
      attnbench gen t02 t29
    """
    for case in suite.cases_in(",".join(names)):
        if force or not suite.is_generated(case):
            _generate_with_progress(case)
        if not no_reference and (force or not suite.has_reference(case)):
            suite.reference_path(case).unlink(missing_ok=True)
            _reference_with_progress(case)
        ref = "" if no_reference else f", reference {suite.reference_path(case)}"
        console.print(f"{case.name} ({case.shape}): input {suite.input_path(case)}{ref}", highlight=False)


@main.command()
@click.argument("selector", default="all")
def cases(selector: str) -> None:
    """List suite cases: shape, provenance and whether they are generated.

    \b
    Example:
      attnbench cases course
    """
    table = Table(title="attnbench suite")
    for column in ("name", "B", "N", "d", "group", "provenance", "GFLOP", "on disk", "note"):
        table.add_column(column, justify="right" if column in ("B", "N", "d", "GFLOP") else "left")
    for case in suite.cases_in(selector):
        s = case.shape
        disk = "input+ref" if suite.has_reference(case) and suite.is_generated(case) else (
            "input" if suite.is_generated(case) else "-"
        )
        table.add_row(case.name, str(s.B), str(s.N), str(s.d), case.group, case.provenance,
                      f"{s.flops / 1e9:.3g}", disk, case.note)
    console.print(table)


@main.command()
@click.argument("case")
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--variant", "-v", "variant_name", default=None, help="Variant name (see `attnbench list`).")
@with_options(timing_options)
@click.option("--check", is_flag=True, help="Verify the output against the float64 reference.")
@click.option("--atol", type=float, default=COURSE_ATOL, show_default=True, help="Absolute tolerance for --check.")
@click.option("--rtol", type=float, default=0.0, show_default=True, help="Relative tolerance for --check.")
@click.option("--json", "as_json", is_flag=True, help="Print the measurement as JSON.")
def run(case: str, out: str, variant_name: str | None, warmup: int | None, reps: int | None, hot: bool,
        timeout: float, noise: float, device: int, check: bool, atol: float, rtol: float, as_json: bool) -> None:
    """Run one variant on a testcase, write the output and report the times.

    CASE is a suite name (t29) or the path of a course input file.

    \b
    Examples:
      attnbench run t29 out.bin --variant bankfree --check
      attnbench run my_case.in out.bin --reps 20 --json
    """
    from attnbench.runner import execute

    resolved = suite.resolve(case, _generate_with_progress)
    shape = resolved.shape
    variant = _choose_variant(variant_name, shape)
    gpu = _open_gpu(device) if variant.backend != "cpu" else None
    start = time.perf_counter()
    testcase = read_testcase(resolved.path)
    input_s = time.perf_counter() - start
    output, measurement = execute(variant, testcase, resolved.label,
                                  gpu, _policy(variant, warmup, reps, hot, timeout, noise))
    measurement.input_s = input_s
    start = time.perf_counter()
    write_output(out, output)
    measurement.output_s = time.perf_counter() - start
    if check:
        measurement.verification = compare_outputs(output, _reference_for(resolved, testcase), atol, rtol)
    if as_json:
        click.echo(json.dumps(measurement.to_dict(), indent=1))
    else:
        console.print(measurement_table(measurement))
        print_warnings(measurement.warnings + measurement.kernel.warnings)
        if measurement.verification is not None and not measurement.verification.passed:
            console.print(verify_table(measurement.verification, f"check of {out}"))
    if measurement.verification is not None and not measurement.verification.passed:
        sys.exit(1)


def _shape_for_verify(ref: str, case: str | None) -> tuple[Path, Shape]:
    """The reference file and the shape that gives positions their (batch, row, column)."""
    if case is not None:
        resolved = suite.resolve(case, _generate_with_progress)
        shape = resolved.shape
    else:
        shape = None
    ref_path = Path(ref)
    if not ref_path.exists() and ref in suite.SUITE:
        suite_case = suite.SUITE[ref]
        if not suite.is_generated(suite_case):
            _generate_with_progress(suite_case)
        return _reference_with_progress(suite_case), suite_case.shape
    if shape is None:
        sibling = ref_path.with_suffix(".in")
        if sibling.exists():
            shape = read_shape(sibling)
        else:
            raise TestcaseError(
                f"{ref}: cannot tell B, N, d for this reference; pass --case with the testcase name or input file"
            )
    return ref_path, shape


@main.command()
@click.argument("out", type=click.Path(dir_okay=False))
@click.argument("ref")
@click.option("--case", default=None, help="Testcase (suite name or input file) that gives B, N, d.")
@click.option("--atol", type=float, default=COURSE_ATOL, show_default=True, help="Absolute tolerance.")
@click.option("--rtol", type=float, default=0.0, show_default=True, help="Relative tolerance.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(out: str, ref: str, case: str | None, atol: float, rtol: float, as_json: bool) -> None:
    """Check an output file against a reference: exit 0 on pass, 1 on fail.

    REF is a reference output file or a suite name (its float64 reference). The rule is the course's
    unless changed: every element within --atol (+ --rtol * |ref|) of the reference.

    \b
    Examples:
      attnbench verify out.bin t02
      attnbench verify out.bin expected.out --case my_case.in
    """
    ref_path, shape = _shape_for_verify(ref, case)
    report = compare_outputs(read_output(out, shape), read_output(ref_path, shape), atol, rtol)
    _print_report(report, f"{out} against {ref_path}", as_json)
    sys.exit(0 if report.passed else 1)


def _print_report(report: VerifyReport, title: str, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=1))
    else:
        console.print(verify_table(report, title))


@main.command(name="list")
@click.option("--resources/--no-resources", default=True, show_default=True,
              help="Compile each variant with nvcc -Xptxas -v and show registers, shared memory and spills.")
@click.option("--head-dim", "-d", type=int, default=64, show_default=True,
              help="Head dimension to compile for (figures depend on d).")
def list_variants(resources: bool, head_dim: int) -> None:
    """List the built-in variants in ladder order, then yours (attnbench.toml), with what each adds and takes.

    With nvcc present, each kernel's registers, shared memory (static + dynamic) and spill bytes are shown
    for the GPU found (sm_90 when there is none).

    \b
    Example:
      attnbench list --head-dim 32
    """
    from attnbench.resources import nvcc_path, report_all
    from attnbench.variants import all_variants

    variants = all_variants()
    figures = {}
    arch = "sm_90"
    if resources and nvcc_path():
        from attnbench.gpu import gpu_probe

        if gpu_probe() is None:
            arch = _open_gpu(0).arch
        figures = report_all([v for v in variants if v.backend == "gpu"], head_dim, arch)
    title = "attnbench variants (ladder order)" + (f"; ptxas figures for {arch}" if figures else "")
    table = Table(title=title)
    for column in ("variant", "report", "technique", "constraints"):
        table.add_column(column)
    if figures:
        for column in ("kernel (d)", "regs", "smem B", "spill B"):
            table.add_column(column, justify="right" if column != "kernel (d)" else "left")
    for variant in variants:
        row = [variant.name, variant.report, variant.technique, variant.constraints.describe()]
        if figures:
            shape, kernels = figures.get(variant.name, (None, {}))
            # Launch order; shared memory is the static part plus the dynamic part the registry asks for.
            launches = {launch.kernel: launch for launch in variant.launches}
            ordered = [kernels[name] for name in launches if name in kernels]
            smem = [k.static_smem + (launches[k.kernel].smem(shape) if shape else 0) for k in ordered]
            row += ["\n".join(f"{k.kernel} ({shape.d})" for k in ordered) or "-",
                    "\n".join(str(k.registers) for k in ordered) or "-",
                    "\n".join(map(str, smem)) or "-",
                    "\n".join(str(k.spills) for k in ordered) or "-"]
        table.add_row(*row)
    console.print(table)


# -- compare, sweep, report -----------------------------------------------------------------------
def _command_line() -> str | None:
    """The command as typed, for saved results (None when not run as `attnbench`)."""
    import shlex

    program = Path(sys.argv[0]).name if sys.argv else ""
    if program in ("attnbench", "__main__.py"):
        return " ".join(["attnbench", *map(shlex.quote, sys.argv[1:])])
    return None


def _percent(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    from attnbench.verdict import parse_percent

    try:
        return parse_percent(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _gpu_policy_dict(warmup: int | None, reps: int | None, hot: bool, timeout: float, noise: float) -> dict:
    from dataclasses import asdict

    policy = asdict(TimingPolicy(warmup=2 if warmup is None else warmup, reps=reps, flush_l2=not hot,
                                 timeout_s=timeout, target_noise=noise / 100))
    policy["host_variants"] = "one timed pass unless --reps (the cpu variant is slow)"
    return policy


def _open_gpu_for(variants: list[Variant], device: int):
    """Check the torch peer first (one sentence if missing), then open the GPU if any variant needs it."""
    if any(v.backend == "torch" for v in variants):
        from attnbench.torch_peer import import_torch

        import_torch()
    if any(v.backend in ("gpu", "torch") for v in variants):
        return _open_gpu(device)
    return None


def _save_outputs(result, results_dir: str, name: str | None, selector: str | None, plot: bool) -> None:
    from attnbench import results as results_module

    paths = results_module.save(result, results_dir, name, selector)
    for path in paths:
        console.print(f"saved {path}", highlight=False, soft_wrap=True)
    if plot:
        from attnbench.errors import PlotsUnavailable
        from attnbench.plots import plots_for

        try:
            written = plots_for(result, paths[0].parent, paths[0].stem)
        except PlotsUnavailable as exc:
            err_console.print(f"[yellow]warning:[/yellow] {escape(str(exc))}; no plots written", highlight=False)
        else:
            for path in written:
                console.print(f"plot {path}", highlight=False, soft_wrap=True)


def _print_cell_problems(result) -> None:
    from attnbench.results import ERROR, WRONG

    for cell in result.cells:
        if cell.status in (WRONG, ERROR):
            err_console.print(f"[red]{cell.status.upper()}[/red] {escape(cell.variant)} on {escape(cell.case)}: "
                              f"{escape(cell.message)}", highlight=False)
    seen: set[str] = set()
    for cell in result.cells:
        if cell.measurement is not None:
            for warning in cell.measurement.warnings + cell.measurement.kernel.warnings:
                if warning not in seen:
                    seen.add(warning)
                    print_warnings([f"{cell.variant} on {cell.case}: {warning}"])


save_options = [
    click.option("--results-dir", default="results", show_default=True, type=click.Path(file_okay=False),
                 help="Folder for the saved JSON, CSV and Markdown."),
    click.option("--name", default=None, help="File stem for the saved results [default: date_kind_gpu_inputs]."),
    click.option("--no-save", is_flag=True, help="Do not save the results."),
    click.option("--plot", is_flag=True, help="Also write PNG plots next to the results (needs matplotlib)."),
    click.option("--same-within", default="2%", show_default=True, callback=_percent,
                 help="Differences smaller than this are SAME whatever the noise."),
]


@main.command()
@click.option("--variants", "-v", "variant_selector", default=None,
              help="Comma list of variants; `all` (every GPU variant), `ladder`, `torch` (the PyTorch peer).")
@click.option("--cases", "-c", "case_selector", default=None,
              help="Comma list of suite cases, suite groups (all, known, course, square, ...) or input files.")
@click.option("--baseline", "-b", default=None, help="Variant the speedups are against [default: the first].")
@with_options(timing_options)
@click.option("--atol", type=float, default=COURSE_ATOL, show_default=True, help="Absolute tolerance of the check.")
@click.option("--rtol", type=float, default=0.0, show_default=True, help="Relative tolerance of the check.")
@click.option("--against", "against_path", default=None, type=click.Path(dir_okay=False),
              help="A saved results JSON: compare every common cell with it and count regressions.")
@click.option("--fail-slower", default=None, callback=_percent,
              help="With --against: a SLOWER cell is a regression only if slower by more than this too (e.g. 5%).")
@click.option("--allow-other-gpu", is_flag=True, help="With --against: compare with a run from another GPU.")
@click.option("--allow-other-inputs", is_flag=True, help="With --against: compare although input bytes differ.")
@click.option("--ladder", "show_ladder", is_flag=True,
              help="Also print the ladder view: each step against the one before, beside report 004's claims.")
@with_options(save_options)
def compare(variant_selector: str | None, case_selector: str | None, baseline: str | None, warmup: int | None,
            reps: int | None, hot: bool, timeout: float, noise: float, device: int, atol: float, rtol: float,
            against_path: str | None, fail_slower: float | None, allow_other_gpu: bool, allow_other_inputs: bool,
            show_ladder: bool, results_dir: str, name: str | None, no_save: bool, plot: bool,
            same_within: float) -> None:
    """Compare variants (and the torch peer) over testcases: a checked, timed matrix with speedups.

    Every cell's output is checked against the float64 reference first (the course rule, --atol);
    a wrong cell shows its failure and gets no time. Speedups are against --baseline, with their
    uncertainty and a SAME / FASTER / SLOWER verdict from the measured noise, and a geometric mean
    per variant. The run is saved under --results-dir as JSON (with metadata), CSV and Markdown.

    With --against: each common cell is compared with the saved run; without --variants/--cases
    the saved run's are used. A regression is a cell SLOWER beyond the noise (and, with
    --fail-slower, by more than that). A saved run from another GPU, or with other input bytes,
    is refused unless allowed.

    Exit status: 0 when every cell is correct and none regressed; otherwise the number of wrong
    or failed cells plus regressions, capped at 255. Unusable options or results files: 2.

    \b
    Examples:
      attnbench compare --variants naive,splitq,bankfree,torch --cases t10,t11,t22,t29,t30
      attnbench compare --variants ladder --cases known --baseline kernels --ladder --plot
      attnbench compare --against results/2026-11-21_compare_h200_t10-t30.json --fail-slower 5%
    """
    from attnbench import compare as matrix
    from attnbench import results as results_module
    from attnbench.display import MatrixProgress, against_table, matrix_table
    from attnbench.inputs import inputs_for

    saved = results_module.load(against_path) if against_path else None
    if saved is not None:
        saved_variants, saved_cases = matrix.common_selection(saved)
        variant_selector = variant_selector or saved_variants
        case_selector = case_selector or saved_cases
    if not variant_selector or not case_selector:
        raise click.UsageError("give --variants and --cases (or --against a saved run to repeat it)")
    variants = matrix.variants_for(variant_selector)
    inputs = inputs_for(case_selector)
    names = [v.name for v in variants]
    if baseline is None:
        timed = [v.name for v in variants if v.backend != "program"]  # a program has no kernel time to compare
        baseline = saved.baseline if saved is not None and saved.baseline in names else (timed or names)[0]
    elif baseline not in names:
        raise click.UsageError(f"--baseline {baseline} is not among --variants ({', '.join(names)})")
    gpu = _open_gpu_for(variants, device)
    if saved is not None:  # refuse an incomparable saved run before spending time on the GPU
        facts = {"name": gpu.name, "sm_count": gpu.sm_count} if gpu is not None else None
        matrix.check_same_gpu(facts, saved, allow_other_gpu)
        matrix.check_same_inputs(matrix.expected_inputs(inputs), saved, allow_other_inputs)
    settings = matrix.MatrixSettings(
        policy=lambda v: _policy(v, warmup, reps, hot, timeout, noise),
        check=matrix.course_check(atol, rtol),
    )
    with MatrixProgress("compare") as listener:
        infos, cells = matrix.run_matrix(variants, inputs, gpu, settings, listener)
    result = results_module.assemble(
        "compare", variants, infos, cells, gpu, _gpu_policy_dict(warmup, reps, hot, timeout, noise), baseline,
        {"atol": atol, "rtol": rtol, "same_within": same_within, "check_rule": f"|out - ref| <= {atol:g}"
         + (f" + {rtol:g}*|ref|" if rtol else "") + " per element, float64 reference"},
        _command_line(),
    )
    view = matrix.MatrixView(result, baseline, same_within)
    from attnbench.display import sweep_table
    from attnbench.metadata import gpu_label

    title = f"compare on {gpu_label(result.metadata)}, speedups over {baseline}"
    # Many inputs read better as one row per input.
    console.print(matrix_table(view, title) if len(result.cases) <= 8 else sweep_table(view, title))
    if show_ladder:
        from attnbench.display import ladder_tables
        from attnbench.ladder import ladder_steps, load_claims

        for table in ladder_tables(ladder_steps(result, same_within), load_claims().device):
            console.print(table)
    _print_cell_problems(result)
    if not no_save:
        _save_outputs(result, results_dir, name, case_selector if "," not in case_selector else None, plot)
    report = None
    if saved is not None:
        notes = matrix.check_comparable(result, saved, allow_other_gpu, allow_other_inputs)
        report = matrix.against(result, saved, same_within, fail_slower, notes)
        console.print(against_table(report))
        for note in report.notes:
            err_console.print(f"note: {escape(note)}", highlight=False)
        console.print(report.summary(), highlight=False)
    status = matrix.exit_status(result, report)
    if status:
        err_console.print(f"exit status {status}: {matrix.failures(result)} wrong or failed cell(s)"
                          + (f", {report.regressions} regression(s)" if report is not None else ""), highlight=False)
    sys.exit(status)


SWEEP_KINDS = {"square": "square", "n": "N", "seq": "N", "d": "d", "head-dim": "d"}


@main.command()
@click.argument("what", type=click.Choice(["square", "N", "n", "seq", "d", "head-dim"]))
@click.option("--variants", "-v", "variant_selector", required=True,
              help="Comma list of variants (and `torch`), as for compare.")
@click.option("--sizes", default="all", show_default=True,
              help="square: the lab's sizes to run: all, a comma list, or a-b for the lab's sizes in [a, b].")
@click.option("--lab-timing", is_flag=True,
              help="square: time by the lab's rule (double the passes until one batch takes 0.1 s) instead of ours.")
@click.option("--values", default=None,
              help="N or d sweeps: a comma list, or a..b for powers of two [N: 128..32768; d: 16,32,48,64,80,96,128].")
@click.option("--batch", "-B", type=click.IntRange(1), default=None,
              help="N or d sweeps: batch size [default: B*N*d near 16 Mi elements].")
@click.option("--seq-len", "-N", type=click.IntRange(1), default=2048, show_default=True, help="d sweeps: N.")
@click.option("--head-dim", "-d", type=click.IntRange(1), default=64, show_default=True, help="N sweeps: d.")
@click.option("--baseline", "-b", default=None, help="Variant the speedups are against [default: none].")
@with_options(timing_options)
@with_options(save_options)
def sweep(what: str, variant_selector: str, sizes: str, lab_timing: bool, values: str | None, batch: int | None,
          seq_len: int, head_dim: int, baseline: str | None, warmup: int | None, reps: int | None, hot: bool,
          timeout: float, noise: float, device: int, results_dir: str, name: str | None, no_save: bool, plot: bool,
          same_within: float) -> None:
    """Sweep sizes: the square-attention lab's harness, or N or d of the (B, N, d) workload.

    `square` runs the lab's 102 sizes (Q, K, V all n x n; 4n^3 FLOPs), checks each output by the
    lab's rule (sum |Y - Y_ref| <= 100 n^2 FLT_EPSILON against a float64 reference, stored after the
    first run), and prints the lab's report lines and Average line, timed by our engine or, with
    --lab-timing, by the lab's doubling rule. `N` and `d` sweep one dimension with seeded inputs.
    Results are saved as for compare. Exit status: the number of wrong or failed cells (max 255).

    \b
    Examples:
      attnbench sweep square --variants gemm
      attnbench sweep square --variants tiled,torch --sizes 63-1025 --lab-timing
      attnbench sweep N --variants splitq,bankfree --values 128..32768 --head-dim 64
      attnbench sweep d --variants naive,torch --values 16,32,64,128 --seq-len 1024
    """
    from attnbench import compare as matrix
    from attnbench import results as results_module
    from attnbench import sweep as sweeps
    from attnbench.display import MatrixProgress, sweep_table

    axis = SWEEP_KINDS[what.lower()] if what.lower() in SWEEP_KINDS else what
    variants = matrix.variants_for(variant_selector)
    names = [v.name for v in variants]
    if baseline is not None and baseline not in names:
        raise click.UsageError(f"--baseline {baseline} is not among --variants ({', '.join(names)})")
    try:
        if axis == "square":
            inputs = sweeps.square_inputs(sweeps.parse_sizes(sizes))
        else:
            default = "128..32768" if axis == "N" else "16,32,48,64,80,96,128"
            inputs = sweeps.shape_inputs(axis, sweeps.parse_values(values or default), batch, seq_len, head_dim)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    gpu = _open_gpu_for(variants, device)
    timer = sweeps.LabTimer() if lab_timing else None
    check = sweeps.lab_check if axis == "square" else matrix.course_check()
    settings = matrix.MatrixSettings(policy=lambda v: _policy(v, warmup, reps, hot, timeout, noise), check=check,
                                     timer=timer)
    start = time.perf_counter()
    with MatrixProgress(f"sweep {axis}") as listener:
        infos, cells = matrix.run_matrix(variants, inputs, gpu, settings, listener)
    elapsed = time.perf_counter() - start
    rule = ("sum |Y - Y_ref| <= 100 n^2 FLT_EPSILON (the lab's rule), float64 reference" if axis == "square"
            else f"|out - ref| <= {COURSE_ATOL:g} per element, float64 reference")
    result = results_module.assemble(
        "sweep", variants, infos, cells, gpu, _gpu_policy_dict(warmup, reps, hot, timeout, noise), baseline,
        {"sweep": axis, "lab_timing": lab_timing, "same_within": same_within, "check_rule": rule,
         "elapsed_s": elapsed}, _command_line(),
    )
    view = matrix.MatrixView(result, baseline, same_within)
    if axis == "square":
        for variant in names:
            click.echo(f"# {variant}")
            for line in sweeps.lab_report_lines(result, variant):
                click.echo(line)
    else:
        console.print(sweep_table(view, f"sweep over {axis}"))
    if baseline is not None and axis == "square":
        console.print(sweep_table(view, f"speedups over {baseline}"))
    _print_cell_problems(result)
    console.print(f"sweep of {len(inputs)} input(s) x {len(variants)} variant(s) took {elapsed:.1f} s", highlight=False)
    if not no_save:
        _save_outputs(result, results_dir, name, f"{axis}" if axis != "square" else "square", plot)
    sys.exit(matrix.exit_status(result))


@main.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--output", "-o", default=None, type=click.Path(dir_okay=False),
              help="The Markdown file [default: <first result>_report.md beside it]; plots go beside it.")
@click.option("--ladder/--no-ladder", default=None,
              help="Include the ladder section [default: when the results hold two or more ladder variants].")
@click.option("--no-plots", is_flag=True, help="Tables only, no PNG plots.")
@click.option("--same-within", default="2%", show_default=True, callback=_percent,
              help="Differences smaller than this are SAME whatever the noise.")
def report(results: tuple[str, ...], output: str | None, ladder: bool | None, no_plots: bool, same_within: float) -> None:
    """Write one Markdown report from saved results: environment, tables, the ladder, plots.

    The plots (TFLOP/s against size for sweeps, the ladder as bars next to report 004's claims, the
    variants against the device's measured ceilings) are PNG files beside the report; without
    matplotlib the report says so and has tables only.

    \b
    Examples:
      attnbench report results/2026-11-21_compare_h200_t10-t30.json
      attnbench report results/*.json -o results/report.md --ladder
    """
    from attnbench import results as results_module
    from attnbench.report import write_report

    loaded = [results_module.load(path) for path in results]
    first = Path(results[0])
    out = Path(output) if output else first.with_name(f"{first.stem}_report.md")
    outcome = write_report(loaded, out, ladder, not no_plots, same_within)
    console.print(f"report {outcome.path}" + (f", plots {', '.join(p.name for p in outcome.plots)}" if outcome.plots else ""),
                  highlight=False)
    for note in outcome.notes:
        err_console.print(f"note: {escape(note)}", highlight=False)

from attnbench.cli_judge import judge, new  # noqa: E402  (commands for the user's own programs and kernels)

main.add_command(judge)
main.add_command(new)
