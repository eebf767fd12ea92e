"""Row builders: every table attnbench prints or saves, built once as a TableModel.

The terminal, Markdown and plain renderers draw these; none of them builds rows of its own.
"""

from __future__ import annotations

import math
from typing import Callable

from attnbench.analysis.against import AgainstReport
from attnbench.analysis.ladder import LadderStep
from attnbench.analysis.precision import error_share, precision_points, spans_precisions
from attnbench.analysis.view import MatrixView
from attnbench.output.tables.table_model import BAD, DIM, GOOD, Column, TableModel, Text
from attnbench.results.kernel_time import kernel_ms_text, kernel_time_of
from attnbench.results.measurement import Measurement
from attnbench.results.refusal import Refusal
from attnbench.results.resultset import ERROR, FAILED, IMPOSSIBLE, OK, REFUSED, SUSPECT, WRONG, Cell, ResultSet
from attnbench.results.run_warnings import RunWarning
from attnbench.printable import first_few


# -- numbers as text ------------------------------------------------------------------------------------
def format_s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"


def format_ms(value: float) -> str:
    if value >= 100:
        return f"{value:.1f} ms"
    if value >= 1:
        return f"{value:.3f} ms"
    return f"{value:.4f} ms"


def noise_text(noise: float) -> str:
    return f"±{100 * noise:.1f}%" if math.isfinite(noise) else "±?"


def verdict_text(verdict: str) -> Text:
    return Text(verdict, {"FASTER": GOOD, "SLOWER": BAD}.get(verdict, ""))


# -- the matrix of a compare or sweep -----------------------------------------------------------------------
def status_text(cell: Cell | None) -> Text | None:
    """A cell without a time, as one word; None for a timed cell."""
    if cell is None:
        return Text("-")
    if cell.status == WRONG:
        return Text("WRONG", BAD)
    if cell.status == REFUSED:
        return Text("refused", DIM)
    if cell.status == ERROR:
        return Text("ERROR", BAD)
    if cell.status == IMPOSSIBLE:
        return Text("IMPOSSIBLE", BAD)
    if cell.status == SUSPECT:  # its speed is in its failure line below, beside its unit's peak
        return Text("SUSPECT", BAD)
    return None


def is_program_cell(cell: Cell | None) -> bool:
    """A whole program's cell in a compare (exe:PATH): a checked output and a process time, and its kernels'
    time where a recording run gave one."""
    return cell is not None and cell.status == OK and "process_s" in cell.extra


def _program_text(cell: Cell, time_figure: bool) -> Text:
    """A program's cell: its kernels' busy time beside its process time (or the process time alone), or its
    kernels' TFLOP/s."""
    kernels = kernel_time_of(cell.extra)
    process = f"process {cell.extra['process_s']:.3f} s"
    if not time_figure:
        tflops = (cell.extra.get("kernel") or {}).get("tflops")
        return Text(f"{tflops:.3g} (kernels)" if tflops else "-", "" if tflops else DIM)
    if kernels is None:
        return Text(process, DIM)
    return Text(f"kernels {kernel_ms_text(kernels)}; {process}")


def _timed_text(cell: Cell | None, text: Callable[[Measurement], str]) -> Text:
    """A timed cell's figure, or its status when it has no time."""
    if is_program_cell(cell):
        assert cell is not None
        return _program_text(cell, text is _time_figure)
    status = status_text(cell)
    if status is not None:
        return status
    assert cell is not None and cell.measurement is not None
    return Text(text(cell.measurement))


def _time_figure(m: Measurement) -> str:
    return f"{format_ms(m.kernel.median)} {noise_text(m.kernel.noise)}"


def time_text(cell: Cell | None) -> Text:
    return _timed_text(cell, _time_figure)


def tflops_text(cell: Cell | None) -> Text:
    """TFLOP/s, and beside it the worst error as a share of the tolerance: speed bought with precision shows."""
    text = _timed_text(cell, lambda m: f"{m.tflops:.3g}")
    share = error_share(cell)
    if cell is None or not cell.ok or share is None:
        return text
    return Text(f"{text.text}, err {share:.2g} tol", text.tone)


def speedup_text(view: MatrixView, variant: str, case: str) -> Text:
    """'1.52 ± 0.03x FASTER', or the cell's status when it has no speed."""
    comparison = view.comparison(variant, case)
    if comparison is not None:
        verdict = comparison.verdict.value
        return Text(f"{comparison.describe_speedup()} {verdict}", {"FASTER": GOOD, "SLOWER": BAD}.get(verdict, ""))
    cell = view.result.cell(variant, case)
    if is_program_cell(cell):
        speedup = view.program_speedup(variant, case)
        if speedup is not None:
            return Text(f"{speedup:.2f}x (kernels, one run: no verdict)")
        return Text("- (a program: no kernel time)", DIM)
    return status_text(cell) or Text(view.missing_reason(variant, case) or "") or Text("- (no baseline time)")


def by_case(result: ResultSet) -> bool:
    """Many inputs read better as one row per input (sweeps); few as one row per variant."""
    return len(result.case_labels) > max(8, len(result.variant_names))


def _shape_text(result: ResultSet, label: str) -> str:
    case = result.case(label)
    return f"{case.shape.B}, {case.shape.N}, {case.shape.d}" if case else ""


def _per_cell_table(view: MatrixView, title: str, text: Callable[[Cell | None], Text], geomean: bool) -> TableModel:
    result = view.result
    cases, variants = result.case_labels, result.variant_names
    if by_case(result):
        table = TableModel(title, [Column("input"), Column("B, N, d", right=True, wide=True),
                                   *(Column(v, right=True) for v in variants)])
        for c in cases:
            table.add_row(c, _shape_text(result, c), *[text(result.cell(v, c)) for v in variants])
        if geomean:
            geo = [view.geomean_tflops(v) for v in variants]
            table.add_row("geomean", "", *[f"{g:.3g}" if g else "-" for g in geo])
        return table
    extra = ["geomean"] if geomean else []
    table = TableModel(title, [Column("variant"), *(Column(c, right=True) for c in cases),
                               *(Column(e, right=True) for e in extra)])
    for v in variants:
        row = [text(result.cell(v, c)) for c in cases]
        if geomean:
            geo = view.geomean_tflops(v)
            row.append(Text(f"{geo:.3g}" if geo else "-"))
        table.add_row(v, *row)
    return table


def time_table(view: MatrixView) -> TableModel:
    return _per_cell_table(view, "Kernel time (median ± noise)", time_text, geomean=False)


def tflops_table(view: MatrixView) -> TableModel:
    return _per_cell_table(view, "TFLOP/s (4·B·N²·d / kernel time)", tflops_text, geomean=True)


def _ceiling_of(cell: Cell | None) -> dict | None:
    """The peak a timed kernel cell was set against (measured, or the datasheet's), or None."""
    if cell is None or not cell.ok or cell.measurement is None or is_program_cell(cell):
        return None
    return cell.measurement.ceiling or None


def ceiling_text(cell: Cell | None) -> Text:
    """The share of its variant's peak a cell reached ('44.0%'), '-' where none applies; never above 100%."""
    ceiling = _ceiling_of(cell)
    if ceiling is None:
        return status_text(cell) or Text("-", DIM)
    if ceiling["fraction"] > 1.0:
        return Text("above its peak?", BAD)
    return Text(f"{100 * ceiling['fraction']:.1f}%")


def ceiling_table(view: MatrixView) -> TableModel | None:
    """Each cell as a fraction of the peak of what its variant runs on (measured by `attnbench ceilings`,
    else the datasheet's), with that peak named per variant; None when no cell has one."""
    result = view.result
    named: dict[str, str] = {}
    for cell in result.cells:
        ceiling = _ceiling_of(cell)
        if ceiling is not None:
            source = "measured" if ceiling.get("measured") else "datasheet"
            named.setdefault(cell.variant, f"{ceiling['name']} ({source})")
    if not named:
        return None
    title = "Fraction of the peak of what each variant runs on"
    cases, variants = result.case_labels, result.variant_names
    if by_case(result):
        table = TableModel(title, [Column("input"), *(Column(v, right=True) for v in variants)])
        table.add_row("ceiling", *[named.get(v, "-") for v in variants])
        for c in cases:
            table.add_row(c, *[ceiling_text(result.cell(v, c)) for v in variants])
        return table
    table = TableModel(title, [Column("variant"), Column("ceiling"), *(Column(c, right=True) for c in cases)])
    for v in variants:
        table.add_row(v, named.get(v, "-"), *[ceiling_text(result.cell(v, c)) for c in cases])
    return table


def speedup_table(view: MatrixView) -> TableModel | None:
    """Each variant against the baseline, with the geometric mean; None without a baseline."""
    result = view.result
    others = [v for v in result.variant_names if v != view.baseline]
    if view.baseline is None or not others:
        return None
    title = (f"Speedup over {view.baseline} (± from both noises; verdict beyond both noises plus "
             f"{100 * view.same_within:g}% for drift)")
    geomeans = [view.geomean_speedup(v) for v in others]
    geo_texts = [g.describe() if g else "-" for g in geomeans]
    cases = result.case_labels
    if by_case(result):
        table = TableModel(title, [Column("input"), *(Column(v, right=True) for v in others)])
        for c in cases:
            table.add_row(c, *[speedup_text(view, v, c) for v in others])
        table.add_row("geomean", *geo_texts)
        return table
    table = TableModel(title, [Column("variant"), *(Column(c, right=True) for c in cases), Column("geomean", right=True)])
    for v, geo in zip(others, geo_texts):
        table.add_row(v, *[speedup_text(view, v, c) for c in cases], geo)
    return table


def check_text(cell: Cell | None) -> Text:
    if cell is None or cell.status in (REFUSED, ERROR):
        return status_text(cell) or Text("-")
    check = cell.check or {}
    parts = ["pass" if check.get("passed") else "FAIL"]
    if check.get("max_abs_error") is not None:
        share = error_share(cell)
        parts.append(f"max {check['max_abs_error']:.2g}" + (f" ({share:.2g} of the tolerance)" if share is not None else ""))
    if check.get("rel_l2_error") is not None:
        parts.append(f"relL2 {check['rel_l2_error']:.2g}")
    if "bound" in check:  # the square lab's rule
        parts.append(f"Σ|err| {check['l1_error']:.2g} of {check['bound']:.2g}")
    timed = cell.timed_check or {}
    if timed.get("fresh_inputs"):  # the check of every timed launch (saved results since schema 5)
        passed = timed.get("passed")
        parts.append(f"{timed['samples']} launches checked" if passed else "a timed launch WRONG")
        return Text(", ".join(parts), "" if check.get("passed") and passed else BAD)
    return Text(", ".join(parts), "" if check.get("passed") else BAD)


def correctness_table(result: ResultSet) -> TableModel:
    rule = result.settings.check_rule or ""
    title = (f"Correctness (the first pass, checked before timing{': ' + rule if rule else ''}; then every launch "
             "on a fresh input, its rows checked exactly)")
    cases, variants = result.case_labels, result.variant_names
    if by_case(result):
        table = TableModel(title, [Column("input"), *(Column(v) for v in variants)])
        for c in cases:
            table.add_row(c, *[check_text(result.cell(v, c)) for v in variants])
        return table
    table = TableModel(title, [Column("variant"), *(Column(c) for c in cases)])
    for v in variants:
        table.add_row(v, *[check_text(result.cell(v, c)) for c in cases])
    return table


def matrix_tables(view: MatrixView, with_correctness: bool = True) -> list[TableModel]:
    """A compare's or sweep's tables: time, TFLOP/s, fraction of the ceiling (where measured), speedup
    (with a baseline), correctness."""
    tables = [time_table(view), tflops_table(view)]
    fractions = ceiling_table(view)
    if fractions is not None:
        tables.append(fractions)
    speedups = speedup_table(view)
    if speedups is not None:
        tables.append(speedups)
    ladder = precision_table(view.result)
    if ladder is not None:
        tables.append(ladder)
    if with_correctness:
        tables.append(correctness_table(view.result))
    return tables


def precision_table(result: ResultSet) -> TableModel | None:
    """The precision ladder (`analysis.precision`), most accurate first: each variant's arithmetic, worst error
    over the tolerance across its cases and geometric-mean TFLOP/s over its timed ones, and whether it is on the
    Pareto front; None unless the run holds variants of two arithmetics or more (no ladder to climb)."""
    points = precision_points(result)
    if not spans_precisions(points):
        return None
    table = TableModel("Precision ladder: worst error against speed",
                       [Column("variant"), Column("arithmetic"), Column("worst err / tol", right=True),
                        Column("TFLOP/s (geomean)", right=True), Column("cases"), Column("Pareto")])
    for p in sorted(points, key=lambda p: (p.worst_share, -(p.tflops or 0.0))):
        share = Text(f"{p.worst_share:.2g}", GOOD if p.passes else BAD)
        speed = Text(f"{p.tflops:.3g}") if p.tflops is not None else Text("no speed", DIM)
        cases = f"{p.timed} timed" + (f", {p.wrong} WRONG" if p.wrong else "") + f" of {p.checked}"
        table.add_row(p.variant, p.arithmetic or "-", share, speed, cases, "front" if p.pareto else "")
    return table


def grouped_refusals(result: ResultSet) -> list[tuple[str, list[str]]]:
    """Refused cells grouped by their refusal's fields (the case's own value left out): each group's
    description and its cases. A cell saved before refusals were records groups under its message."""
    groups: dict[Refusal | str, tuple[str, list[str]]] = {}
    for cell in result.cells:
        if cell.status != REFUSED:
            continue
        key: Refusal | str = cell.refusal.group() if cell.refusal is not None else cell.message
        text = cell.refusal.group_text() if cell.refusal is not None else cell.message
        groups.setdefault(key, (text, []))[1].append(cell.case)
    return list(groups.values())


def failed_cells(result: ResultSet) -> list[Cell]:
    """The wrong, failed, impossible and suspect cells, in the run's order."""
    return [cell for cell in result.cells if cell.status in FAILED]


def failure_text(cell: Cell) -> str:
    """A failed cell and why, after its status: 'naive on t10: 3 of 100 elements fail ...'."""
    return f"{cell.variant} on {cell.case}: {cell.message}"


def grouped_warnings(result: ResultSet) -> list[tuple[RunWarning, list[str]]]:
    """Each distinct warning (by its fields) with the cells that got it ('variant/case')."""
    groups: dict[RunWarning, list[str]] = {}
    for cell in result.cells:
        if cell.measurement is not None:
            for warning in cell.measurement.all_warnings():
                groups.setdefault(warning, []).append(f"{cell.variant}/{cell.case}")
    return list(groups.items())


def places_text(where: list[str], shown: int = 6) -> str:
    """The first `shown` cells of a group, and how many more."""
    return first_few(where, shown)


def grouped_notes(result: ResultSet) -> list[str]:
    """Wrong, failed and refused cells with their reasons, and warnings: one line per kind, cells listed."""
    lines = [f"{cell.status.upper()} {failure_text(cell)}" for cell in failed_cells(result)]
    for reason, labels in grouped_refusals(result):
        lines.append(f"refused: {reason} ({', '.join(labels)})")
    for warning, where in grouped_warnings(result):
        lines.append(f"warning ({places_text(where)}): {warning.sentence()}")
    return lines


def clock_note(result: ResultSet) -> str | None:
    """One line under a compare's tables: the SM clock the timed cells ran at; None when unknown."""
    clocks = [c.measurement.kernel.clock for c in result.cells if c.ok and c.measurement is not None]
    known = [c for c in clocks if c is not None]
    if not known:
        return None
    low, high = min(c.low for c in known), max(c.high for c in known)
    medians = sorted(c.median for c in known)
    middle = medians[len(medians) // 2]
    spread = f", {low:.0f}-{high:.0f} MHz over all samples" if high - low > 0 else ""
    return (f"SM clock (NVML, after each sample): {middle:.0f} MHz, the median of {len(known)} cells' medians{spread}; "
            "each cell's clocks are in the saved files")


# -- the judge ---------------------------------------------------------------------------------------------
def scoreboard_table(result: ResultSet, title: str) -> TableModel:
    """The judge's scoreboard: one row per case with its verdict, process time, limit and slack (and its kernels'
    time, from a second run, when recorded; a last row sums the passed cases')."""
    recorded = any("kernel" in c.extra or "kernel_note" in c.extra for c in result.cells)
    table = TableModel(title, [Column("case"), Column("B x N x d", right=True), Column("result"),
                               Column("time", right=True), Column("limit", right=True), Column("slack", right=True),
                               *([Column("kernels", right=True)] if recorded else [])])
    for cell in result.cells:
        case = result.case(cell.case)
        shape = f"{case.shape.B}x{case.shape.N}x{case.shape.d}" if case else "-"
        verdict = str(cell.extra.get("verdict", cell.status))
        wall, limit, timeout = cell.extra.get("wall_s"), cell.extra.get("limit_s"), cell.extra.get("timeout_s")
        time = format_s(wall) if wall is not None else (f"> {timeout:g} s" if timeout else "-")  # killed there
        slack = "-"
        if wall is not None and limit is not None:
            slack = f"{limit - wall:.2f} s left" if wall <= limit else f"{wall - limit:.2f} s over"
        detail = cell.message
        if verdict == "PASS" and cell.check and cell.check.get("max_abs_error") is not None:
            detail = f"max error {cell.check['max_abs_error']:.2g}"  # how close a pass came to the rule
        table.add_row(cell.case, shape, Text(f"{verdict} {detail}".strip(), GOOD if verdict == "PASS" else BAD),
                      time, "-" if limit is None else f"{limit:g} s",
                      Text(slack, BAD if slack.endswith("over") else ""), *([_kernel_cell(cell)] if recorded else []))
    if recorded:
        passed = [c for c in result.cells if c.extra.get("verdict") == "PASS"]
        kernels = [kernel_time_of(c.extra) for c in passed]
        total = f"{1e3 * sum(k.busy_s for k in kernels if k):.3f} ms" if passed and all(kernels) else "-"
        table.add_row("total (passed)", "", "", format_s(sum(c.extra.get("wall_s") or 0.0 for c in passed)), "", "",
                      total)
    return table


def _kernel_cell(cell: Cell) -> Text:
    """A judged case's kernels: their busy time, '-' for a case not passed, or why none was recorded."""
    kernels = kernel_time_of(cell.extra)
    if kernels is not None:
        return Text(f"{1e3 * kernels.busy_s:.3f} ms")
    return Text("none" if cell.extra.get("kernel_note") else "-", DIM)


# -- against a saved run -------------------------------------------------------------------------------------
def against_table(report: AgainstReport | dict) -> TableModel:
    """Each cell against the saved run: saved and current medians, change, verdict. From the report, or
    from the record a saved run keeps of it (`AgainstReport.to_dict`), so the terminal and the saved
    Markdown draw the same table."""
    record = report.to_dict() if isinstance(report, AgainstReport) else report
    table = TableModel(f"against {record['saved']}",
                       [Column("variant"), Column("input"), Column("saved", right=True), Column("now", right=True),
                        Column("change", right=True), Column("verdict"), Column("note", wide=True)])
    for row in record["cells"]:
        saved = format_ms(row["saved_ms"]) if row["saved_ms"] is not None else "-"
        now = format_ms(row["now_ms"]) if row["now_ms"] is not None else "-"
        tone = BAD if row["regression"] or row["verdict"] in ("NOW WRONG", "STILL WRONG", "IMPOSSIBLE") else (
            GOOD if row["verdict"] in ("FASTER", "FIXED") else "")
        outcome = row["verdict"] + (" (regression)" if row["regression"] else "")
        table.add_row(row["variant"], row["case"], saved, now, row["change_text"], Text(outcome, tone), row["note"])
    return table


# -- the ladder --------------------------------------------------------------------------------------------
def _opt(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def ladder_table(title: str, steps: list[LadderStep]) -> TableModel:
    """One input's ladder: time, TFLOP/s, speedup over the step before, and report 004's step."""
    table = TableModel(title, [Column("step"), Column("kernel time", right=True), Column("TFLOP/s", right=True),
                               Column("vs step before", right=True),
                               Column("step before", wide=True), Column("our computing (s)", right=True, wide=True),
                               Column("004 computing (s)", right=True), Column("004 speedup", right=True),
                               Column("direction")])
    for s in steps:
        if s.kernel_ms is None:
            status = s.cell.status.upper() if s.cell is not None else "-"
            table.add_row(s.variant, Text(status, BAD), "-", "-", "-", "-", _opt(s.claimed_s, ".3f"), "-", "-")
            continue
        measured = (verdict_text(f"{s.vs_previous.describe_speedup()} {s.vs_previous.verdict.value}")
                    if s.vs_previous else Text("first step"))
        if s.vs_previous is not None:
            measured = Text(measured.text, {"FASTER": GOOD, "SLOWER": BAD}.get(s.vs_previous.verdict.value, ""))
        claimed = f"{s.claimed_speedup:.2f}x" if s.claimed_speedup is not None else "-"
        table.add_row(s.variant, format_ms(s.kernel_ms), _opt(s.tflops, ".3g"), measured, s.previous or "-",
                      _opt(s.compute_s, ".3f"), _opt(s.claimed_s, ".3f"), claimed, s.agreement)
    return table

