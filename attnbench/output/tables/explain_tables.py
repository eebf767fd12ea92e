"""The tables that explain the numbers (profile, info, ceilings), built once as TableModels (a saved profile is
`attnbench.output.export.profile_export`)."""

from __future__ import annotations

from attnbench.explain.geometry import GpuModel, KernelReport
from attnbench.explain.metrics import Metric
from attnbench.explain.profile import VariantProfile
from attnbench.output.tables.table_model import Column, TableModel
from attnbench.results.ceilings import CeilingSet, cache_path


def format_value(value: float | None, unit: str) -> str:
    """A metric value in the unit a reader expects (ms, GB, GB/s, %)."""
    if value is None:
        return "-"
    if unit == "ns":
        return f"{value / 1e6:.3f} ms" if value >= 1e5 else f"{value / 1e3:.2f} us"
    if unit == "B":
        for scale, word in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
            if value >= scale:
                return f"{value / scale:.3g} {word}"
        return f"{value:.0f} B"
    if unit == "B/s":
        return f"{value / 1e9:.1f} GB/s"
    if unit == "%":
        return f"{value:.1f}%"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.3g}" if abs(value) >= 1e4 or abs(value) < 0.1 else f"{value:.2f}"


def profile_tables(profiles: list[VariantProfile], metrics: list[Metric], case_label: str) -> list[TableModel]:
    """One table per kernel of the pass (first kernel, second, ...), one column per variant."""
    positions = max((len(p.kernels) for p in profiles), default=0)
    tables = []
    for index in range(positions):
        kernels = [p.kernels[index] if index < len(p.kernels) else None for p in profiles]
        title = f"kernel {index + 1} of the pass on {case_label}" if positions > 1 else f"profile on {case_label}"
        table = TableModel(title, [Column("metric"), *(Column(p.variant, right=True) for p in profiles)])
        table.add_row("kernel", *[k.kernel if k else "-" for k in kernels])
        table.add_row("launches in the pass", *[str(k.launches) if k else "-" for k in kernels])
        table.add_row("grid / block", *[f"{k.grid} / {k.block}" if k else "-" for k in kernels])
        for metric in metrics:
            table.add_row(metric.label, *[format_value(k.friendly(metric), metric.unit) if k else "-" for k in kernels])
        spills = [p.spill_bytes.get(k.kernel) if k else None for p, k in zip(profiles, kernels)]
        if any(v is not None for v in spills):
            table.add_row("spill bytes (ptxas)", *[format_value(v, "") for v in spills])
        tables.append(table)
    return tables


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def info_table(title: str, reports: list[KernelReport], model: GpuModel) -> TableModel:
    """`attnbench info`: each kernel's resources, geometry and theoretical occupancy, side by side."""
    table = TableModel(title, [Column(""), *(Column(r.geometry.kernel, right=True) for r in reports)])
    table.add_row("registers / thread (ptxas)", *[_count(r.registers) for r in reports])
    table.add_row("spill bytes (ptxas)", *[_count(r.spills) for r in reports])
    table.add_row("static shared memory", *[_count(r.static_smem) for r in reports])
    table.add_row("dynamic shared memory", *[_count(r.geometry.dynamic_smem) for r in reports])
    table.add_row("grid", *[str(r.geometry.grid) for r in reports])
    table.add_row("block", *[str(r.geometry.block) for r in reports])
    table.add_row("blocks / launch", *[_count(r.geometry.blocks) for r in reports])
    table.add_row("launches / pass", *[_count(r.geometry.launches_per_pass) for r in reports])
    table.add_row("blocks / SM (limit)", *[f"{r.occupancy.blocks_per_sm} ({r.occupancy.limiter})" for r in reports])
    table.add_row("theoretical occupancy", *[f"{100 * r.occupancy.fraction:.1f}% ({r.occupancy.warps_per_sm}/"
                                             f"{r.occupancy.max_warps_per_sm} warps)" for r in reports])
    waves = [r.geometry.waves(model, r.occupancy.blocks_per_sm) for r in reports]
    table.add_row("waves over the SMs", *[f"{w:.2f}" if w is not None else "-" for w in waves])
    return table


def ceilings_table(found: CeilingSet, how: str) -> TableModel:
    """`attnbench ceilings`: each measured ceiling with how it was measured."""
    table = TableModel(f"ceilings of {found.gpu} (driver {found.driver}, {found.sm_count} SMs), {how} {found.date}",
                       [Column("ceiling"), Column("value", right=True), Column("how", wide=True)])
    for c in found.ceilings:
        table.add_row(c.label, f"{c.value:,.1f} {c.unit}", c.detail)
    return table


def cache_line(found: CeilingSet) -> str:
    """Where the ceilings of this GPU and driver are cached."""
    return f"cache: {cache_path(found.gpu, found.driver)}"
