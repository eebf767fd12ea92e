"""Listing tables: the suite's cases (`attnbench cases`) and the variants with their ptxas figures
(`attnbench list`)."""

from __future__ import annotations

from typing import Iterable

from attnbench.cases import suite
from attnbench.cases.suite import SuiteCase
from attnbench.kernels.nvcc import KernelResources
from attnbench.kernels.variant import Variant
from attnbench.output.table_model import Column, TableModel, Text


def generated_line(case: SuiteCase, with_reference: bool) -> str:
    """`attnbench gen`: where a generated case's input (and float64 reference) are."""
    reference = f", reference {suite.reference_path(case)}" if with_reference else ""
    return f"{case.name} ({case.shape}): input {suite.input_path(case)}{reference}"


def on_disk(case: SuiteCase) -> str:
    """What of a suite case is generated: 'input+ref', 'input' or '-'."""
    if suite.is_generated(case):
        return "input+ref" if suite.has_reference(case) else "input"
    return "-"


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


def variants_table(variants: Iterable[Variant], figures: FiguresByVariant, arch: str) -> TableModel:
    """`attnbench list`: the variants in ladder order, with ptxas figures where nvcc ran."""
    title = "attnbench variants (ladder order)" + (f"; ptxas figures for {arch}" if figures else "")
    cols = [Column("variant"), Column("arithmetic"), Column("accuracy", wide=True), Column("report", wide=True),
            Column("technique", wide=True), Column("constraints", wide=True)]
    if figures:
        cols += [Column("kernel"), Column("d", right=True), Column("regs", right=True), Column("smem B", right=True),
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
            d = getattr(shape, "d", "")
            row += ["\n".join(k.kernel for k in ordered) or "-", "\n".join(str(d) for _ in ordered) or "-",
                    "\n".join(str(k.registers) for k in ordered) or "-",
                    "\n".join(map(str, smem)) or "-",
                    "\n".join(str(k.spills) for k in ordered) or "-"]
        table.add_row(*row)
    return table
