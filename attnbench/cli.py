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
from attnbench.variants import REGISTRY, Variant, default_variant, get_variant
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
def list_variants() -> None:
    """List the built-in variants in ladder order, with what each adds and what it accepts.

    \b
    Example:
      attnbench list
    """
    table = Table(title="attnbench variants (ladder order)")
    for column in ("variant", "report", "technique", "constraints"):
        table.add_column(column)
    for variant in REGISTRY.values():
        table.add_row(variant.name, variant.report, variant.technique, variant.constraints.describe())
    console.print(table)
