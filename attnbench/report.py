"""`attnbench report`: one Markdown document from saved results, with its tables and plots.

It is the document a report's author would otherwise write by hand: where it was measured, each
run's tables (time, TFLOP/s, speedup with uncertainty, correctness), the square lab's report lines,
the ladder next to report 004's claims, and the plots beside the document as PNG files.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path

from attnbench.errors import PlotsUnavailable
from attnbench.export import environment_lines, format_ms, judge_section, lab_section, matrix_sections, md_table
from attnbench.ladder import LadderStep, has_ladder, ladder_steps, load_claims
from attnbench.results import ResultSet
from attnbench.testcase import atomic_write
from attnbench.verdict import DEFAULT_SAME_WITHIN


@dataclass
class ReportOutcome:
    path: Path
    plots: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _opt(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def ladder_table(steps: list[LadderStep]) -> str:
    """One input's ladder: time, TFLOP/s, speedup over the step before, and report 004's step."""
    rows = []
    for s in steps:
        if s.kernel_ms is None:
            status = s.cell.status.upper() if s.cell is not None else "-"
            rows.append([s.variant, status, "-", "-", "-", "-", _opt(s.claimed_s, ".3f"), "-", "-"])
            continue
        measured = (f"{s.vs_previous.describe_speedup()} {s.vs_previous.verdict.value}" if s.vs_previous
                    else "first step")
        claimed = f"{s.claimed_speedup:.2f}x" if s.claimed_speedup is not None else "-"
        rows.append([s.variant, format_ms(s.kernel_ms), _opt(s.tflops, ".3g"), measured,
                     f"{s.previous}" if s.previous else "-", _opt(s.compute_s, ".3f"),
                     _opt(s.claimed_s, ".3f"), claimed, s.agreement])
    header = ["step", "kernel time", "TFLOP/s", "speedup over the step before", "step before",
              "our computing (s)", "004 computing (s)", "004 speedup", "direction"]
    return md_table(header, rows)


def ladder_section(results: list[ResultSet], same_within: float, level: int = 2) -> tuple[str, list[tuple[ResultSet, dict]]]:
    claims = load_claims()
    h = "#" * level
    parts = [f"{h} The ladder",
             "Each step against the step before it (ladder order is registry order), next to report 004's claim "
             f"for the same step. The claims are {claims.metric_meaning} on a {claims.device} (source: {claims.source}); "
             "their seconds do not compare with kernel times here, their step-to-step speedups do. 'our computing' is "
             "the same quantity measured here (first pass: allocation, copies and kernels). 'direction' says whether a "
             "step is FASTER / SAME / SLOWER here as it was in the report; 'differs' is a finding, not an error."]
    for note_variant, note in claims.notes.items():
        parts.append(f"Note on `{note_variant}`: {note}.")
    found = []
    for result in results:
        steps_by_case = ladder_steps(result, same_within)
        if not steps_by_case:
            continue
        found.append((result, steps_by_case))
        for case, steps in steps_by_case.items():
            shape = result.case(case).shape if result.case(case) else ""
            parts.append(f"{h}# {case} ({shape}) — {result.name}\n\n" + ladder_table(steps))
    if not found:
        parts.append("These results hold fewer than two timed ladder variants on any input.")
    return "\n\n".join(parts), found


def write_report(results: list[ResultSet], out: Path, ladder: bool | None = None, plots: bool = True,
                 same_within: float = DEFAULT_SAME_WITHIN) -> ReportOutcome:
    """Write the Markdown report to `out` and its plots beside it."""
    from attnbench import plots as plotting

    outcome = ReportOutcome(out)
    folder = out.parent
    folder.mkdir(parents=True, exist_ok=True)
    can_plot = plots
    if plots:
        try:
            plotting.pyplot()
        except PlotsUnavailable as exc:
            can_plot = False
            outcome.notes.append(str(exc))
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    names = ", ".join(f"`{r.path.name if r.path else r.name}`" for r in results)
    parts = [
        "# attnbench report",
        f"Made by `attnbench report` on {date} from {len(results)} result file(s): {names}. Kernel times are "
        "medians of CUDA-event samples (the L2 cache flushed before each unless the run says otherwise), printed with "
        "their relative noise; every output was checked against a float64 reference before it was timed, and a wrong "
        "output has no time. Speedups carry one standard deviation propagated from both noises; SAME / FASTER / "
        f"SLOWER are called only beyond the larger noise and never within {100 * same_within:g}%.",
    ]
    for index, result in enumerate(results, 1):
        kind = {"sweep": "Sweep", "judge": "Judge"}.get(result.kind, "Compare")
        section = [f"## {index}. {kind}: {result.name}", "\n".join(environment_lines(result))]
        if result.kind == "judge":  # whole programs: a scoreboard of process times, no kernel tables or plots
            parts.append("\n\n".join([*section, judge_section(result, level=3)]))
            continue
        lab = lab_section(result)
        if lab:
            section.append(lab)
        section.append(matrix_sections(result, same_within, level=3))
        if can_plot:
            stem = f"{out.stem}_{index}"
            images = []
            if result.kind == "sweep":
                images.append(("Throughput against size", plotting.throughput_vs_size(result, folder / f"{stem}_throughput.png")))
            if any(c.ok for c in result.cells):
                images.append(("Against the ceilings", plotting.ceilings_chart(result, folder / f"{stem}_ceilings.png")))
            for title, path in images:
                outcome.plots.append(path)
                section.append(f"![{title}]({path.name})")
        parts.append("\n\n".join(section))
    want_ladder = ladder if ladder is not None else any(has_ladder(r) for r in results)
    if want_ladder:
        text, found = ladder_section(results, same_within)
        parts.append(text)
        if can_plot:
            for index, (result, steps_by_case) in enumerate(found, 1):
                gpu = (result.metadata.get("gpu") or {}).get("name", "CPU")
                path = plotting.ladder_bars(steps_by_case, folder / f"{out.stem}_ladder_{index}.png", gpu)
                outcome.plots.append(path)
                parts.append(f"![The ladder, {result.name}]({path.name})")
    if outcome.notes:
        parts.append("Notes: " + "; ".join(outcome.notes) + ".")
    text = "\n\n".join(parts) + "\n"
    atomic_write(out, lambda f: f.write(text.encode()))
    return outcome
