"""Commands that explain the numbers: `profile` (Nsight Compute counters), `info` (no GPU), `ceilings`."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import click
from rich.table import Table

from attnbench import suite
from attnbench.display import console, err_console
from attnbench.errors import ProfilerUnavailable
from attnbench.testcase import Shape
from attnbench.variants import get_variant


def _shape_of(case: str) -> tuple[str, Shape]:
    resolved = suite.resolve(case, suite.generate_input)
    return resolved.label, resolved.shape


# -- profile -----------------------------------------------------------------------------------------
@click.command()
@click.argument("case")
@click.option("--variant", "-v", "variant_names", multiple=True, required=True,
              help="A variant to profile; repeat for several, side by side.")
@click.option("--metrics", "raw_metrics", default=None, help="Extra raw ncu metric names, comma separated.")
@click.option("--device", type=click.IntRange(0), default=0, show_default=True, help="CUDA device index.")
@click.option("--warmup", type=click.IntRange(0), default=1, show_default=True, help="Passes before the profiled one.")
@click.option("--max-launches", type=click.IntRange(1), default=50, show_default=True,
              help="Profile at most this many kernel launches of the pass (the `kernels` variant makes thousands).")
@click.option("--json", "as_json", is_flag=True, help="Print the counters as JSON.")
@click.option("--save", is_flag=True, help="Save JSON, Markdown and each variant's raw ncu CSV under --results-dir.")
@click.option("--results-dir", default="results", show_default=True, type=click.Path(file_okay=False))
@click.option("--name", default=None, help="File stem for --save [default: date_profile_gpu_case].")
def profile(case: str, variant_names: tuple[str, ...], raw_metrics: str | None, device: int, warmup: int,
            max_launches: int, as_json: bool, save: bool, results_dir: str, name: str | None) -> None:
    """Hardware counters of one pass after warm-up, under Nsight Compute, variants side by side.

    Each variant runs in its own process under `ncu --clock-control none`; only the pass after the
    warm-up is profiled. One table per kernel of the pass: duration, occupancy, SM / FMA / tensor pipe
    utilisation, DRAM bytes and throughput, L2 hit rate, shared-memory wavefronts and bank conflicts,
    global sectors per request, registers, shared memory, local (spill) traffic. Needs ncu and
    permission to read the GPU's counters (exit 3 otherwise).

    \b
    Examples:
      attnbench profile t30 --variant reglm --variant bankfree
      attnbench profile t29 -v float4 -v qreg --metrics smsp__inst_executed.sum --save
    """
    from attnbench.bench.profile import profile_variant, require_ncu
    from attnbench.gpu import Gpu
    from attnbench.kernels.metrics import PROFILABLE_FROM, metric_table, raw_metric
    from attnbench.output.profiles import markdown, profile_tables, rich_table
    from attnbench.resources import compile_report

    label, shape = _shape_of(case)
    variants = [get_variant(v) for v in variant_names]
    for variant in variants:
        if variant.backend != "gpu":
            raise click.UsageError(f"{variant.name} is not a GPU variant of attnbench; profile takes GPU variants only")
        variant.require(shape)
    require_ncu()
    from attnbench.cli import _command_line
    from attnbench.metadata import collect

    gpu = Gpu(device)
    metadata = collect(gpu, command=_command_line())  # as compare saves it: GPU, driver, clocks, commit, ceilings
    facts = metadata["gpu"]
    arch, capability = gpu.arch, gpu.compute_capability
    gpu.close()  # the profiled passes run in their own processes
    if capability < PROFILABLE_FROM:
        raise ProfilerUnavailable(f"Nsight Compute does not profile {facts['name']} ({arch}); it needs sm_70 or newer")
    metrics = metric_table(arch) + [raw_metric(m.strip()) for m in (raw_metrics or "").split(",") if m.strip()]
    profiles = []
    for variant in variants:
        err_console.print(f"profiling {variant.name} on {label} under ncu ...", highlight=False)
        profiles.append(profile_variant(case, variant.name, metrics, device, warmup, max_launches))
        profiles[-1].spill_bytes = {k: r.spills for k, r in compile_report(variant, shape, arch).items()}
        if profiles[-1].unavailable:
            err_console.print(f"note: ncu has no {', '.join(profiles[-1].unavailable)} here; shown as -",
                              highlight=False)
    tables = profile_tables(profiles, metrics, label)
    document = {
        "kind": "profile", "version": 1, "case": label, "shape": {"B": shape.B, "N": shape.N, "d": shape.d},
        "metadata": metadata, "arch": arch,
        "metrics": {m.key: {"label": m.label, "ncu": list(m.ncu), "combine": m.combine, "unit": m.unit} for m in metrics},
        "variants": [p.to_dict(metrics) for p in profiles],
        "ncu_command": profiles[0].command[:profiles[0].command.index("--metrics") + 2] if profiles else [],
    }
    if as_json:
        click.echo(json.dumps(document, indent=1))
    else:
        for table in tables:
            console.print(rich_table(table))
    if save:
        from attnbench.metadata import gpu_short_name

        folder = Path(results_dir)
        folder.mkdir(parents=True, exist_ok=True)
        date = _dt.date.today().isoformat()
        stem = name or f"{date}_{gpu_short_name({'gpu': facts})}_profile_{label}_{'-'.join(variant_names)}"
        for p in profiles:
            csv_path = folder / f"{stem}_{p.variant}.ncu.csv"
            csv_path.write_text(p.csv_text)
            document["variants"][profiles.index(p)]["csv"] = csv_path.name
        (folder / f"{stem}.json").write_text(json.dumps(document, indent=1))
        (folder / f"{stem}.md").write_text(
            f"# Nsight Compute profile on {label} ({shape}) — {facts['name']}\n\n"
            + "\n\n".join(markdown(t) for t in tables) + "\n")
        err_console.print(f"saved {folder / stem}.json, .md and the raw ncu CSV per variant", highlight=False)


# -- info --------------------------------------------------------------------------------------------
def _fmt(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


@click.command()
@click.option("--variant", "-v", "variant_name", required=True, help="Variant name (see `attnbench list`).")
@click.option("--case", "-c", default=None, help="Suite case or input file whose shape to use [default: t29].")
@click.option("--shape", "shape_text", default=None, help="B,N,d instead of a case, e.g. 4,32768,32.")
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
    from attnbench.kernels.geometry import gpu_model, kernel_reports
    from attnbench.resources import compile_report, nvcc_path

    variant = get_variant(variant_name)
    if variant.backend != "gpu":
        raise click.UsageError(f"{variant.name} runs no kernel of attnbench; info takes GPU variants")
    model = gpu_model(arch)
    if shape_text:
        try:
            B, N, d = (int(x) for x in shape_text.split(","))
        except ValueError:
            raise click.BadParameter(f"{shape_text!r} is not B,N,d (three integers)", param_hint="--shape") from None
        if min(B, N, d) < 1:
            raise click.BadParameter("B, N and d must be at least 1", param_hint="--shape")
        label, shape = "given shape", Shape(B, N, d)
    else:
        label, shape = _shape_of(case or "t29")
    variant.require(shape)
    compile_arch = model.arch
    resources: dict = {}
    notes: list[str] = []
    if nvcc_path() is None:
        notes.append("nvcc is not on PATH: no ptxas figures; occupancy counts shared memory and threads only")
    else:
        resources = compile_report(variant, shape, compile_arch)
        if not resources:
            notes.append(f"nvcc could not compile cuda/{variant.source} for {compile_arch} (this nvcc may not "
                         "support it): occupancy counts shared memory and threads only")
    reports = kernel_reports(variant, shape, model, resources)
    defines = variant.defines(shape)
    if as_json:
        click.echo(json.dumps({
            "variant": variant.name, "case": label, "shape": {"B": shape.B, "N": shape.N, "d": shape.d},
            "arch": model.arch, "gpu_model": model.name, "sm_count": model.sm_count, "defines": defines,
            "kernels": [{
                "kernel": r.geometry.kernel, "grid": r.geometry.grid, "block": r.geometry.block,
                "dynamic_smem": r.geometry.dynamic_smem, "static_smem": r.static_smem,
                "smem_per_block": r.smem_per_block, "registers": r.registers, "spill_bytes": r.spills,
                "launches_per_pass": r.geometry.launches_per_pass, "blocks_per_sm": r.occupancy.blocks_per_sm,
                "occupancy": r.occupancy.fraction, "limiter": r.occupancy.limiter,
                "blocks_per_sm_by_limit": r.occupancy.by_limit,
                "waves": r.geometry.waves(model, r.occupancy.blocks_per_sm)} for r in reports],
            "notes": notes,
        }, indent=1))
        return
    title = f"{variant.name} on {label} ({shape}) — {model.arch}, modelled as {model.name} ({model.sm_count} SMs)"
    table = Table(title=title)
    table.add_column("")
    for r in reports:
        table.add_column(r.geometry.kernel, justify="right")
    rows = [
        ("registers / thread (ptxas)", [_fmt(r.registers) for r in reports]),
        ("spill bytes (ptxas)", [_fmt(r.spills) for r in reports]),
        ("static shared memory", [_fmt(r.static_smem) for r in reports]),
        ("dynamic shared memory", [_fmt(r.geometry.dynamic_smem) for r in reports]),
        ("grid", [str(r.geometry.grid) for r in reports]),
        ("block", [str(r.geometry.block) for r in reports]),
        ("blocks / launch", [_fmt(r.geometry.blocks) for r in reports]),
        ("launches / pass", [_fmt(r.geometry.launches_per_pass) for r in reports]),
        ("blocks / SM (limit)", [f"{r.occupancy.blocks_per_sm} ({r.occupancy.limiter})" for r in reports]),
        ("theoretical occupancy", [f"{100 * r.occupancy.fraction:.1f}% ({r.occupancy.warps_per_sm}/"
                                   f"{r.occupancy.max_warps_per_sm} warps)" for r in reports]),
        ("waves over the SMs", [f"{w:.2f}" if (w := r.geometry.waves(model, r.occupancy.blocks_per_sm)) is not None
                                else "-" for r in reports]),
    ]
    for name, values in rows:
        table.add_row(name, *values)
    console.print(table)
    console.print("defines: " + (", ".join(f"{k}={v}" for k, v in sorted(defines.items())) or "none"), highlight=False)
    for note in notes:
        err_console.print(f"note: {note}", highlight=False)


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
    from attnbench.bench.ceilings import cache_path, get_or_measure
    from attnbench.gpu import Gpu

    gpu = Gpu(device)
    found, cached = get_or_measure(gpu, refresh)
    if as_json:
        click.echo(json.dumps(found.to_dict(), indent=1))
        return
    how = "cached" if cached else "measured"
    table = Table(title=f"ceilings of {found.gpu} (driver {found.driver}, {found.sm_count} SMs), {how} {found.date}")
    for column in ("ceiling", "value", "how"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for c in found.ceilings:
        table.add_row(c.label, f"{c.value:,.1f} {c.unit}", c.detail)
    console.print(table)
    console.print(f"cache: {cache_path(found.gpu, found.driver)}", highlight=False)

