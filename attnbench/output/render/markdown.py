"""The Markdown renderer: TableModels as Markdown tables, and the page of one saved result."""

from __future__ import annotations

import re
import statistics
from typing import Callable

from attnbench.analysis.ladder import has_ladder, ladder_steps, load_claims
from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN
from attnbench.analysis.view import MatrixView
from attnbench.output.tables.result_tables import (
    against_table,
    clock_note,
    grouped_notes,
    ladder_table,
    matrix_tables,
    scoreboard_table,
)
from attnbench.output.tables.roof_table import roof_table
from attnbench.output.tables.table_model import TableModel
from attnbench.printable import counted, printable
from attnbench.results.resultset import ResultKind, ResultSet

_MARKDOWN_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "`": "\\`",
                                   "<": "&lt;", ">": "&gt;", "&": "&amp;", "\n": " "})
_STRANGERS_ESCAPES = str.maketrans({"*": "\\*", "_": "\\_", "~": "\\~", "#": "\\#", "(": "\\(", ")": "\\)",
                                    "!": "\\!", ":": "\\:", "@": "\\@"})
_WWW = re.compile(r"(www)\.", re.IGNORECASE)


def md_escape(text: str) -> str:
    """Text for a Markdown table cell: no HTML, no link or image syntax, no code span, no cell break, and
    no control character (a cell may hold a user's file name)."""
    return printable(str(text).translate(_MARKDOWN_ESCAPES))


def md_strangers(text: str) -> str:
    """Text strangers wrote (a class's names, build errors), for Markdown: md_escape's, and no emphasis,
    strike or heading either; ':' is escaped so no `https://` autolinks and no `:trophy:` becomes an
    emoji, '@' so no address links, and the dot after `www` so GitHub's autolinks find no `www.`."""
    return _WWW.sub(r"\1\\.", md_escape(text).translate(_STRANGERS_ESCAPES))


def render(model: TableModel, level: int | None = None, escape: Callable[[str], str] = md_escape) -> str:
    """A Markdown table; with `level`, the title as a heading of that level above it. `escape` makes each
    cell's text safe (md_strangers for what strangers wrote)."""
    lines = ["| " + " | ".join(md_escape(c.name) for c in model.columns) + " |"]
    lines.append("|" + "|".join(" ---: " if c.right else " --- " for c in model.columns) + "|")
    lines += ["| " + " | ".join(escape(cell.text) for cell in row) + " |" for row in model.rows]
    table = "\n".join(lines)
    return f"{'#' * level} {model.title}\n\n{table}" if level else table


def environment_lines(result: ResultSet) -> list[str]:
    """Where and how a result was measured, as Markdown bullet lines."""
    meta = result.metadata
    gpu = meta.get("gpu") or {}
    git = meta.get("git") or {}
    state = meta.get("gpu_state") or {}
    lines = []
    if gpu:
        lines.append(
            f"- GPU: {gpu.get('name')} (compute {gpu.get('compute_capability')}, {gpu.get('sm_count')} SMs, "
            f"{gpu.get('sm_clock_mhz', 0):.0f} MHz boost, L2 {gpu.get('l2_bytes', 0) / 2**20:.0f} MiB, "
            f"FP32 peak {gpu.get('fp32_peak_tflops', 0):.1f} TFLOP/s)"
        )
        lines.append(f"- driver {gpu.get('driver_version')}, CUDA {gpu.get('cuda_version')}, nvcc {meta.get('nvcc_version')}, "
                     f"pycuda {meta.get('pycuda_version')}")
        if state:
            lines.append(f"- clocks at the end: SM {state.get('sm_clock_mhz')} of {state.get('max_sm_clock_mhz')} MHz, "
                         f"memory {state.get('memory_clock_mhz')} MHz, {state.get('power_w')} W, "
                         f"{state.get('temperature_c')} C ({state.get('source')})")
        ceilings = meta.get("ceilings")
        if ceilings:  # `attnbench ceilings` on this GPU and driver
            figures = ", ".join(f"{c['label']} {c['value']:,.1f} {c['unit']}" for c in ceilings.get("ceilings", []))
            lines.append(f"- measured ceilings ({ceilings.get('date')}): {figures}")
    else:
        lines.append("- no GPU (host variants only)")
    software = f"numpy {meta.get('numpy_version')}, Python {meta.get('python_version')}"
    if meta.get("torch_version"):
        software += f", torch {meta.get('torch_version')}"
    lines.append(f"- {software}; CPU {meta.get('cpu')} ({meta.get('cpu_count')} threads)")
    commit = git.get("commit")
    commit_text = f"{commit[:12]}{' (with uncommitted changes)' if git.get('dirty') else ''}" if commit else "unknown"
    lines.append(f"- attnbench {meta.get('attnbench_version')}, commit {commit_text}, {meta.get('date')}")
    policy = result.policy
    if result.kind is ResultKind.JUDGE:
        lines.append(f"- timing: {policy.get('timing')}; {result.settings.time_limits}")
    elif policy and not gpu:
        lines.append(f"- timing: {policy.get('host_variants') or 'host wall time per pass'}")
    elif policy:
        if policy.get("reps"):
            sampling = f"{policy['reps']} samples"
        else:
            sampling = (f"samples until noise < {100 * policy.get('target_noise', 0):g}% (at least {policy.get('min_samples')} "
                        f"and {policy.get('min_time_s')} s, at most {policy.get('timeout_s')} s)")
        flush = "L2 flushed before each sample" if policy.get("flush_l2") else "L2 not flushed (--hot)"
        lines.append(f"- timing: kernel time from CUDA events, {policy.get('warmup')} warm-up passes, {sampling}, {flush}")
    if result.settings.lab_timing:
        lines.append("- timing: the square-attention lab's rule (double the passes until one batch takes 0.1 s)")
    if meta.get("command"):
        lines.append(f"- command: `{meta['command']}`")
    return [printable(line) for line in lines]  # a saved file's words (its command, a GPU's name) never raw


def matrix_sections(result: ResultSet, same_within: float = DEFAULT_SAME_WITHIN, level: int = 3) -> str:
    """Kernel time, TFLOP/s, speedup and correctness tables of a result set, with its notes."""
    view = MatrixView(result, same_within=same_within)
    parts = [render(table, level) for table in matrix_tables(view)]
    roofs = roof_table(result)
    if roofs is not None:  # the card's peaks are data: a card not in them has no roof here
        parts.append(render(roofs, level))
    clock = clock_note(result)
    if clock is not None:
        parts.append(clock)
    notes = grouped_notes(result)
    if notes:
        # a note quotes a cell's message, a program's or compiler's words: never raw
        parts.append("Notes:\n\n" + "\n".join(f"- {printable(line)}" for line in notes))
    return "\n\n".join(parts)


def lab_line(n: int, gflops: float, iterations: int, seconds: float) -> str:
    """The lab's report line (C's %.3g and %.3f)."""
    return "Size: %d\tGflop/s: %.3g (%d iter, %.3f seconds)" % (n, gflops, iterations, seconds)


def lab_report_lines(result: ResultSet, variant: str) -> list[str]:
    """One variant's square sweep in the lab's report format, with its Average line last."""
    lines, rates = [], []
    for label in result.case_labels:
        cell = result.cell(variant, label)
        case = result.case(label)
        n = case.shape.N if case else 0
        if cell is None:
            continue
        if not cell.ok:
            first_line = cell.message.splitlines()[0] if cell.message else ""
            lines.append(f"Size: {n}\t{cell.status.upper()}: {printable(first_line)}")
            continue
        assert cell.measurement is not None
        k = cell.measurement.kernel
        gflops = cell.measurement.flops / (k.median * 1e-3) / 1e9
        if "lab_passes" in cell.extra:
            iterations, seconds = int(cell.extra["lab_passes"]), float(cell.extra["lab_seconds"])
        else:
            iterations, seconds = k.count, sum(k.samples_ms) / 1e3
        lines.append(lab_line(n, gflops, iterations, seconds))
        rates.append(gflops)
    if rates:
        average = "Average %f" % statistics.fmean(rates)
        missing = len(result.case_labels) - len(rates)
        lines.append(average + (f"  ({missing} size(s) without a time are left out)" if missing else ""))
    return lines


def lab_section(result: ResultSet) -> str:
    """The square-attention lab's report lines per variant, for square sweeps."""
    if result.settings.sweep != "square":
        return ""
    blocks = []
    for variant in result.variant_names:
        lines = lab_report_lines(result, variant)
        blocks.append(f"`{variant}`, in the lab's report format:\n\n```\n" + "\n".join(lines) + "\n```")
    return "\n\n".join(blocks)


def ladder_section(results: list[ResultSet], same_within: float, level: int = 2) -> tuple[str, list[tuple[ResultSet, dict]]]:
    """Each result's ladder, input by input, next to report 004's claims."""
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
            parts.append(render(ladder_table(f"{case} ({shape}) — {result.name}", steps), level + 1))
    if not found:
        parts.append("These results hold fewer than two timed ladder variants on any input.")
    return "\n\n".join(parts), found


def result_section(result: ResultSet, heading: str, same_within: float, level: int) -> list[str]:
    """One result's heading, environment, square-lab lines and tables, as Markdown parts."""
    parts = [f"{'#' * (level - 1)} {heading}{result.kind.capitalize()}: {result.name}", "\n".join(environment_lines(result))]
    if result.settings.interrupted:
        measured = len(result.cells)
        parts.append(f"**Interrupted** (Ctrl-C): only the {measured} cell(s) measured before it are here; "
                     "the cells after it were not run.")
    lab = lab_section(result)
    if lab:
        parts.append(lab)
    if result.kind is ResultKind.JUDGE:  # whole programs: a scoreboard of process times, no kernel tables
        parts.append(judge_section(result, level))
        return parts
    parts.append(matrix_sections(result, same_within, level))
    return parts


def judge_section(result: ResultSet, level: int = 2) -> str:
    """The judge's scoreboard and its count of passed cases."""
    passed = sum(cell.status == "ok" for cell in result.cells)
    grade = result.settings.grade
    graded = f"; the course's grade {grade} of 60 ({result.settings.grade_rule})" if grade is not None else ""
    return (f"{render(scoreboard_table(result, 'Scoreboard'), level)}\n\n{passed} of {counted(len(result.cells), 'case')} "
            f"passed{graded}")


def markdown_document(result: ResultSet, same_within: float = DEFAULT_SAME_WITHIN) -> str:
    """The Markdown page saved beside a result's JSON."""
    parts = result_section(result, "", same_within, level=2)
    if has_ladder(result):
        parts.append(ladder_section([result], same_within, level=2)[0])
    against = result.settings.against
    if against:  # the verdicts against the saved run this one was measured against
        where = f" (`{against['saved_path']}`)" if against.get("saved_path") else ""
        parts.append(f"## Against {md_escape(against['saved'])}{where}\n\n{md_escape(against['summary'])}\n\n"
                     + render(against_table(against)))
    return "\n\n".join(parts) + "\n"
