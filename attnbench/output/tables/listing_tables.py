"""Listing tables: the suite's cases (`attnbench cases`) and the variants with their ptxas figures
(`attnbench list`)."""

from __future__ import annotations

from typing import Iterable

from attnbench.cases import suite
from attnbench.cases.suite import SuiteCase
from attnbench.kernels.nvcc import KernelResources
from attnbench.kernels.variant import Variant
from attnbench.output.tables.table_model import Column, TableModel, Text


def generated_line(case: SuiteCase, with_reference: bool) -> str:
    """`attnbench gen`: where a generated case's input (and float64 reference) are."""
    reference = f", reference {suite.reference_path(case)}" if with_reference else ""
    return f"{case.name} ({case.shape}): input {suite.input_path(case)}{reference}"


def on_disk(case: SuiteCase) -> str:
    """What of a suite case is generated: 'input+ref', 'input' or '-'."""
    if suite.is_generated(case):
        return "input+ref" if suite.has_reference(case) else "input"
    return "-"


def case_record(case: SuiteCase) -> dict:
    """`attnbench cases --json`: a case as the suite manifest records it, and what of it is on disk."""
    s = case.shape
    return {"name": case.name, "B": s.B, "N": s.N, "d": s.d, "seed": case.seed, "group": case.group,
            "provenance": case.provenance, "note": case.note, "input_sha256": case.input_sha256,
            "flops": s.flops, "input_bytes": s.input_bytes, "output_bytes": s.output_bytes, "on_disk": on_disk(case)}


def cases_table(cases: Iterable[SuiteCase]) -> TableModel:
    table = TableModel("attnbench suite", [Column("name"), Column("B", right=True), Column("N", right=True),
                                           Column("d", right=True), Column("group"), Column("provenance"),
                                           Column("GFLOP", right=True), Column("on disk"), Column("note", wide=True)])
    for case in cases:
        s = case.shape
        table.add_row(case.name, str(s.B), str(s.N), str(s.d), case.group, case.provenance, f"{s.flops / 1e9:.3g}",
                      on_disk(case), case.note)
    return table


FiguresByVariant = dict[str, tuple[object, dict[str, KernelResources]]]


def variant_record(variant: Variant, figures: FiguresByVariant) -> dict:
    """`attnbench list --json`: a variant's facts, and ptxas's figures per kernel where nvcc ran."""
    shape, kernels = figures.get(variant.name, (None, {}))
    launches = {launch.kernel: launch for launch in (variant.launches_for(shape) if shape else variant.launches)}  # type: ignore[arg-type]
    return {"variant": variant.name, "report": variant.report, "technique": variant.technique,
            "arithmetic": variant.arithmetic, "accuracy": variant.accuracy,
            "constraints": variant.constraints.describe(),
            "kernels": [{"kernel": k.kernel, "d": getattr(shape, "d", None), "registers": k.registers,
                         "smem_bytes": k.static_smem + (launches[k.kernel].smem(shape) if shape else 0),  # type: ignore[arg-type]
                         "spill_bytes": k.spills} for name in launches if (k := kernels.get(name)) is not None]}


def variants_table(variants: Iterable[Variant], figures: FiguresByVariant, arch: str,
                   head_dim: int | None = None) -> TableModel:
    """`attnbench list`: the variants in ladder order, with ptxas figures where nvcc ran, compiled for `head_dim`
    (said once in the title; a kernel compiled for another d says its own). Narrow enough for 80 columns side by
    side: the arithmetic is the first column a narrow terminal goes without, the technique and constraints wide."""
    figures_for = f"; ptxas figures for {arch}" + (f" at d = {head_dim}" if head_dim is not None else "")
    title = "attnbench variants (ladder order)" + (figures_for if figures else "")
    cols = [Column("variant"), Column("arithmetic", optional=True), Column("accuracy", wide=True),
            Column("report", wide=True), Column("technique", wide=True), Column("constraints", wide=True)]
    if figures:
        cols += [Column("kernel"), Column("regs", right=True), Column("smem B", right=True),
                 Column("spill B", right=True)]
    table = TableModel(title, cols)
    for variant in variants:
        row: list[Text | str] = [variant.name, variant.arithmetic, variant.accuracy, variant.report, variant.technique,
                                 variant.constraints.describe()]
        if figures:
            shape, kernels = figures.get(variant.name, (None, {}))
            # Launch order; shared memory is the static part plus the dynamic part the registry asks for.
            launches = {launch.kernel: launch for launch in (variant.launches_for(shape) if shape else variant.launches)}
            ordered = [kernels[name] for name in launches if name in kernels]
            smem = [k.static_smem + (launches[k.kernel].smem(shape) if shape else 0) for k in ordered]  # type: ignore[arg-type]
            d = getattr(shape, "d", None)
            other_d = f" (d = {d})" if d is not None and head_dim is not None and d != head_dim else ""
            row += ["\n".join(k.kernel + other_d for k in ordered) or "-",
                    "\n".join(str(k.registers) for k in ordered) or "-",
                    "\n".join(map(str, smem)) or "-",
                    "\n".join(str(k.spills) for k in ordered) or "-"]
        table.add_row(*row)
    return table
