"""Commands that explain the numbers: `profile` (Nsight Compute counters), `info` (no GPU), `ceilings`, `roof`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from attnbench import strict_json
from attnbench.api import explain as api_explain
from attnbench.cli.options import command_line, complete_cases, complete_variants, error_line, file_stem, notice, once
from attnbench.files import DEFAULT_RESULTS_DIR, check_results_folder
from attnbench.output.export.profile_export import profile_stem, save_profile
from attnbench.output.render.terminal import console, print_table, progress_bar
from attnbench.output.tables.explain_tables import cache_line, ceilings_table, info_table, profile_tables
from attnbench.output.tables.roof_table import inputs_roof_table


# -- profile -----------------------------------------------------------------------------------------
@click.command()
@click.argument("case", shell_complete=complete_cases)
@click.option("--variant", "-v", "variant_names", multiple=True, required=True, shell_complete=complete_variants,
              help="A variant to profile; repeat for several, side by side.")
@click.option("--metrics", "raw_metrics", default=None, help="Extra raw ncu metric names, comma separated.")
@click.option("--device", type=click.IntRange(0), default=0, show_default=True, help="CUDA device index.")
@click.option("--warmup", type=click.IntRange(0), default=1, show_default=True, help="Passes before the profiled one.")
@click.option("--max-launches", type=click.IntRange(1), default=50, show_default=True,
              help="Profile at most this many kernel launches of the pass (the `kernels` variant makes thousands).")
@click.option("--json", "as_json", is_flag=True, help="Print the counters as JSON.")
@click.option("--save", is_flag=True, help="Save JSON, Markdown and each variant's raw ncu CSV under --results-dir.")
@click.option("--results-dir", default=DEFAULT_RESULTS_DIR, show_default=True, type=click.Path(file_okay=False))
@click.option("--name", default=None, callback=file_stem, help="File stem for --save [default: date_profile_gpu_case].")
def profile(case: str, variant_names: tuple[str, ...], raw_metrics: str | None, device: int, warmup: int,
            max_launches: int, as_json: bool, save: bool, results_dir: str, name: str | None) -> None:
    """Hardware counters of one pass after warm-up, under Nsight Compute, variants side by side.

    Each variant runs in its own process under `ncu --clock-control none`; only the pass after the
    warm-up is profiled. One table per kernel of the pass: duration, occupancy, SM / FMA / tensor / XU
    (MUFU) pipe utilisation, issue slots busy, DRAM bytes and throughput, L2 hit rate, shared-memory
    wavefronts and bank conflicts, global sectors per request, registers, shared memory, local (spill)
    traffic. Needs ncu and permission to read the GPU's counters (exit 3 otherwise).

    \b
    Examples:
      attnbench profile t30 --variant reglm --variant bankfree
      attnbench profile t29 -v float4 -v qreg --metrics smsp__inst_executed.sum --save
    """
    if raw_metrics is not None and not any(name.strip() for name in raw_metrics.split(",")):
        # `--metrics ""` (an unset variable) profiled without the extra metrics, and said nothing
        raise click.BadParameter('is empty (""): give ncu metric names, or leave --metrics out', param_hint="--metrics")
    if save:
        check_results_folder(results_dir)  # before the profiled passes, not after them
    run = api_explain.profile(case, variant_names, (raw_metrics or "").split(","), device=device, warmup=warmup,
                              max_launches=max_launches, command=command_line(), notice=notice)
    tables = profile_tables(run.profiles, run.metrics, run.case)
    document = run.to_dict()
    if as_json:
        click.echo(strict_json.dumps(document))
    else:
        for table in tables:
            print_table(table)
    if save:
        gpu = run.metadata["gpu"]
        stem = name or profile_stem(run.metadata, run.case, variant_names)
        title = f"Nsight Compute profile on {run.case} ({run.shape}) — {gpu['name']}"
        written = save_profile(document, run.profiles, tables, title, Path(results_dir), stem)
        notice(f"saved {written[0]}, {written[1].name} and the raw ncu CSV per variant")


# -- info --------------------------------------------------------------------------------------------
@click.command()
@click.option("--variant", "-v", "variant_name", required=True, help="Variant name (see `attnbench list`).",
              shell_complete=complete_variants)
@once("--case", "-c", help="Suite case or input file whose shape to use [default: t29].", shell_complete=complete_cases)
@click.option("--shape", "shape_text", default=None, help="B,N,d or BxNxd instead of a case, e.g. 4,32768,32.")
@click.option("--arch", default="sm_90", show_default=True,
              help="Compile for and model this GPU: sm_61, sm_80, sm_86, sm_89 or sm_90.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def info(variant_name: str, case: str | None, shape_text: str | None, arch: str, as_json: bool) -> None:
    """What a variant asks of the GPU for a shape, with no GPU: resources, geometry, occupancy, defines.

    ptxas's registers, shared memory and spills (nvcc -Xptxas -v for --arch), each launch's grid,
    block and dynamic shared memory, the waves over the SMs of a representative GPU of that
    architecture, the theoretical occupancy and what limits it, and the defines the shape selects.

    \b
    Examples:
      attnbench info --variant qreg --case t29
      attnbench info -v tf32x3 --shape 2,32768,64 --arch sm_80
    """
    if case is not None and shape_text is not None:
        raise click.UsageError("--case and --shape both give the shape; give one of them")
    shape = None
    if shape_text is not None:  # "" fell back to t29 with exit 0
        try:
            shape = api_explain.Shape.parse(shape_text)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--shape") from None
    report = api_explain.info(variant_name, case, shape, arch, progress=progress_bar)
    if as_json:
        click.echo(strict_json.dumps(report.to_dict()))
        _exit_if_misfit(report)
        return
    model = report.model
    print_table(info_table(f"{report.variant} on {report.case} ({report.shape}) — {model.arch}, modelled as "
                           f"{model.name} ({model.sm_count} SMs)", report.reports, model))
    console.print("defines: " + (", ".join(f"{k}={v}" for k, v in sorted(report.defines.items())) or "none"),
                  highlight=False)
    for note in report.notes:
        notice(note)
    _exit_if_misfit(report)


def _exit_if_misfit(report: api_explain.InfoReport) -> None:
    """A kernel that cannot launch on the architecture asked about is a failure, said per kernel: exit 1."""
    misfits = report.misfits()
    for line in misfits:
        error_line(line)
    if misfits:
        sys.exit(1)


# -- ceilings ----------------------------------------------------------------------------------------
@click.command()
@click.option("--device", type=click.IntRange(0), default=0, show_default=True, help="CUDA device index.")
@click.option("--refresh", is_flag=True, help="Measure again even if this GPU and driver are cached.")
@click.option("--json", "as_json", is_flag=True, help="Print the ceilings as JSON.")
def ceilings(device: int, refresh: bool, as_json: bool) -> None:
    """Measure this GPU's ceilings once (FFMA, TF32 mma.sync, MUFU ex2, DRAM copy) and cache them.

    The cache is per GPU name and driver, in the per-user cache folder (ATTNBENCH_CACHE overrides
    it). `run` and `compare` then give each variant's fraction of the ceiling it runs on, and `report`
    draws them on the roofline.

    \b
    Example:
      attnbench ceilings --refresh
    """
    found, cached = api_explain.ceilings(device, refresh)
    if as_json:
        click.echo(strict_json.dumps(found.to_dict()))
        return
    print_table(ceilings_table(found, "cached" if cached else "measured"))
    console.print(cache_line(found), highlight=False, soft_wrap=True)


# -- roof --------------------------------------------------------------------------------------------
@click.command()
@click.argument("cases", nargs=-1, shell_complete=complete_cases)
@click.option("--gpu", "gpu", default=None,
              help="The card: h200, h100-sxm, h100-pcie, a100, a100-40gb, rtx3070, gtx1080 (or its device name) "
                   "[default with --saved: the card it was measured on].")
@click.option("--saved", default=None, type=click.Path(dir_okay=False),
              help="A saved compare (JSON): its inputs, and the share of the roof each of its cells reached.")
def roof(cases: tuple[str, ...], gpu: str | None, saved: str | None) -> None:
    """The roof of each case on a card, and with --saved the share of it each cell reached (no GPU needed).

    A pass of (B, N, d) reads Q, K, V and writes O (16*B*N*d bytes of float32), computes 4*B*N*N*d FLOPs
    of products and B*N*N exponentials. On a card's peaks (memory bandwidth, dense FP16 tensor products,
    MUFU ex2: attnbench's card table, each with its datasheet) each takes a time; the largest is the
    roof and names what bounds the case (HBM, tensor or exp). A cell reaches roof / its median.

    \b
    Examples:
      attnbench roof t11 t29 t30 --gpu h200
      attnbench roof --saved attnbench-results/2026-11-29_compare_h200_t10-t30.json
    """
    report = api_explain.roofs(cases, gpu, saved)
    result = report.result
    if result is None:
        print_table(inputs_roof_table(report.card, report.inputs))
    else:
        print_table(inputs_roof_table(report.card, report.inputs, result.variant_names, result.cell))
    for source in report.card.sources:
        console.print(f"source: {source}", highlight=False, soft_wrap=True)


COMMANDS = (profile, info, ceilings, roof)
