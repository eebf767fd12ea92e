"""Commands about one case or one output: gen, cases, run, verify, list."""

from __future__ import annotations

import sys

import click

from attnbench import api, strict_json
from attnbench.api import explain as api_explain
from attnbench.cli.options import (
    complete_cases,
    complete_variants,
    error_line,
    notice,
    once,
    timing_from,
    timing_options,
    tolerance,
    with_options,
)
from attnbench.output.render.terminal import print_line, print_table, print_warnings, progress_bar
from attnbench.output.tables import listing_tables, run_tables


@click.command()
@click.argument("names", nargs=-1, required=True, shell_complete=complete_cases)
@click.option("--no-reference", is_flag=True, help="Write only the input, not the float64 reference.")
@click.option("--force", is_flag=True, help="Regenerate even if the files exist.")
def gen(names: tuple[str, ...], no_reference: bool, force: bool) -> None:
    """Generate suite testcases (input and float64 reference) from their recorded seeds.

    NAMES are case names or groups (course, known, square, largehead, singlehead, odd, all).

    \b
    Example:
      attnbench gen t02 t29
    """
    for case in api.generate(names, reference=not no_reference, force=force, progress=progress_bar,
                             notice=notice):
        print_line(listing_tables.generated_line(case, not no_reference))


@click.command()
@click.argument("selector", default="all", shell_complete=complete_cases)
@click.option("--wide", is_flag=True, help="Also show the notes column.")
@click.option("--json", "as_json", is_flag=True, help="Print the cases as JSON, one record each.")
def cases(selector: str, wide: bool, as_json: bool) -> None:
    """List suite cases: shape, provenance and whether they are generated.

    \b
    Example:
      attnbench cases course
    """
    chosen = api.suite_cases(selector)
    if as_json:
        click.echo(strict_json.dumps([listing_tables.case_record(case) for case in chosen]))
        return
    print_table(listing_tables.cases_table(chosen), wide=wide or None)


@click.command()
@click.argument("case", shell_complete=complete_cases)
@click.argument("out", type=click.Path(dir_okay=False))
@once("--variant", "-v", "variant_name", help="Variant name (see `attnbench list`).", shell_complete=complete_variants)
@click.option("--accuracy", type=click.Choice(["float32", "course"]), default=None,
              help="Without --variant: the fastest built-in at this accuracy. float32 (the default): the course "
                   "rule and relL2 <= 1e-5; course: the course rule with margin (half its tolerance).")
@with_options(timing_options)
@click.option("--check", is_flag=True, help="Verify the output against the float64 reference.")
@tolerance("--atol", api.COURSE_ATOL, "Absolute tolerance for --check.")
@tolerance("--rtol", 0.0, "Relative tolerance for --check.")
@click.option("--json", "as_json", is_flag=True, help="Print the measurement as JSON.")
@click.option("--no-pipeline", is_flag=True,
              help="Read the whole input, then copy, compute, copy back and write one after another "
                   "(default for GPU variants: stream the file through pinned buffers, overlapping all of them).")
def run(case: str, out: str, variant_name: str | None, accuracy: str | None, device: int, check: bool, atol: float,
        rtol: float, as_json: bool, no_pipeline: bool, **timing: object) -> None:
    """Run one variant on a testcase, write the output and report the times.

    CASE is a suite name (t29) or the path of a course input file. Exit status 1 when the output is
    wrong (NaN or Inf, or --check fails) or the kernel median is below the physical floor of the shape on
    this GPU (IMPOSSIBLE: the timed passes cannot have done the work).

    \b
    Examples:
      attnbench run t29 out.bin --variant bankfree --check
      attnbench run my_case.in out.bin --reps 20 --json
      attnbench run t22 out.bin --variant tf32x3 --no-pipeline
      attnbench run t22 out.bin --accuracy course --check
    """
    outcome = api.run(case, variant_name, out, check=check, atol=atol, rtol=rtol, timing=timing_from(timing),
                      device=device, pipeline=not no_pipeline, progress=progress_bar, notice=notice,
                      accuracy=accuracy)
    measurement, verification = outcome.measurement, outcome.measurement.verification
    if as_json:
        click.echo(strict_json.dumps(measurement.to_dict()))
    else:
        print_table(run_tables.measurement_table(measurement))
        print_warnings([warning.sentence() for warning in measurement.all_warnings()])
        if verification is not None and not verification.passed:
            print_table(run_tables.verify_table(verification, f"check of {out}"))
    for problem in outcome.problems:
        error_line(problem)
    sys.exit(outcome.exit_status)


@click.command()
@click.argument("out", type=click.Path(dir_okay=False))
@click.argument("ref", shell_complete=complete_cases)
@once("--case", help="Testcase (suite name or input file) that gives B, N, d.", shell_complete=complete_cases)
@tolerance("--atol", api.COURSE_ATOL, "Absolute tolerance.")
@tolerance("--rtol", 0.0, "Relative tolerance.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(out: str, ref: str, case: str | None, atol: float, rtol: float, as_json: bool) -> None:
    """Check an output file against a reference: exit 0 on pass, 1 on fail, 2 on a bad or missing file.

    REF is a reference output file or a suite name (its float64 reference, made once and stored). The
    rule is the course's unless changed: every element within --atol (+ --rtol * |ref|) of the
    reference. Failures are named by (batch, row, column) when B, N, d are known (--case, an input
    file beside REF with the same name and .in, or a suite REF), else by flat element index.

    \b
    Examples:
      attnbench verify out.bin t02
      attnbench verify out.bin expected.out --case my_case.in
    """
    report, ref_path = api.verify(out, ref, case=case, atol=atol, rtol=rtol, progress=progress_bar, notice=notice)
    if as_json:
        click.echo(strict_json.dumps(report.to_dict()))
    else:
        print_table(run_tables.verify_table(report, f"{out} against {ref_path}"))
    sys.exit(0 if report.passed else 1)


@click.command(name="list")
@click.option("--resources/--no-resources", default=True, show_default=True,
              help="Compile each variant with nvcc -Xptxas -v and show registers, shared memory and spills.")
@click.option("--head-dim", "-d", type=click.IntRange(1), default=64, show_default=True,
              help="Head dimension to compile for (figures depend on d).")
@click.option("--wide", is_flag=True, help="Also show each variant's technique and constraints.")
@click.option("--json", "as_json", is_flag=True, help="Print the variants as JSON, one record each.")
def list_variants(resources: bool, head_dim: int, wide: bool, as_json: bool) -> None:
    """List the built-in variants in ladder order, then yours (attnbench.toml), with what each adds and takes.

    A variant's flavours follow it, named as --variants takes them (qreg:fastmath).

    With nvcc present, each kernel's registers, shared memory (static + dynamic) and spill bytes are shown
    for the GPU found (sm_90 when there is none).

    \b
    Example:
      attnbench list --head-dim 32
    """
    listing = api_explain.variant_listing(head_dim, resources, progress=progress_bar)
    if as_json:
        click.echo(strict_json.dumps({"arch": listing.arch if listing.figures else None, "variants": [
            listing_tables.variant_record(variant, listing.figures) for variant in listing.variants]}))
    else:
        print_table(listing_tables.variants_table(listing.variants, listing.figures, listing.arch, head_dim),
                    wide=wide or None)
    if listing.uncompiled:  # a kernel with an error showed "-", as a peer does, and nothing said why
        notice(f"nvcc could not compile {', '.join(listing.uncompiled)} for {listing.arch} at d = {head_dim}, so "
               f"no figures: `attnbench info --variant {listing.uncompiled[0]}` shows nvcc's error")


COMMANDS = (gen, cases, run, verify, list_variants)
