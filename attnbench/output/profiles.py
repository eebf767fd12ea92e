"""The profile tables: rows built once, drawn as rich tables on the terminal and as Markdown when saved."""

from __future__ import annotations

from dataclasses import dataclass

from attnbench.bench.profile import VariantProfile
from attnbench.kernels.metrics import Metric


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


@dataclass
class ProfileTable:
    """One kernel position of the pass, the variants side by side."""

    title: str
    header: list[str]
    rows: list[list[str]]


def profile_tables(profiles: list[VariantProfile], metrics: list[Metric], case_label: str) -> list[ProfileTable]:
    """One table per kernel of the pass (first kernel, second, ...), one column per variant."""
    positions = max((len(p.kernels) for p in profiles), default=0)
    tables = []
    for index in range(positions):
        columns = [p for p in profiles]
        kernels = [p.kernels[index] if index < len(p.kernels) else None for p in columns]
        title = f"kernel {index + 1} of the pass on {case_label}" if positions > 1 else f"profile on {case_label}"
        rows = [["kernel"] + [k.kernel if k else "-" for k in kernels],
                ["launches in the pass"] + [str(k.launches) if k else "-" for k in kernels],
                ["grid / block"] + [f"{k.grid} / {k.block}" if k else "-" for k in kernels]]
        for metric in metrics:
            rows.append([metric.label] + [format_value(k.friendly(metric), metric.unit) if k else "-" for k in kernels])
        spills = [p.spill_bytes.get(k.kernel) if k else None for p, k in zip(columns, kernels)]
        if any(v is not None for v in spills):
            rows.append(["spill bytes (ptxas)"] + [format_value(v, "") for v in spills])
        tables.append(ProfileTable(title, ["metric"] + [p.variant for p in columns], rows))
    return tables


def rich_table(table: ProfileTable):
    from rich.table import Table

    out = Table(title=table.title)
    for i, name in enumerate(table.header):
        out.add_column(name, justify="left" if i == 0 else "right")
    for row in table.rows:
        out.add_row(*row)
    return out


def markdown(table: ProfileTable) -> str:
    lines = [f"### {table.title}", "", "| " + " | ".join(table.header) + " |",
             "| " + " | ".join(["---"] + ["---:"] * (len(table.header) - 1)) + " |"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table.rows]
    return "\n".join(lines)
