"""A class's scoreboard, drawn: its rows and one table model (terminal, Markdown), and the lines under it.

The rows are built once (`scoreboard_rows`); the table here and the saved CSV and HTML
(`output.export.scoreboard_export`) are renderings of them, so they never disagree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from attnbench.analysis.class_history import HistoryRow, RunOf
from attnbench.analysis.ranking import other_ranks, ran_every_case
from attnbench.output.tables.table_model import BAD, DIM, GOOD, Column, TableModel, Text
from attnbench.printable import counted, printable
from attnbench.results.course_grade import GRADE_RULE
from attnbench.results.judge_cost import PROGRAM_RUNS, JudgeCost
from attnbench.results.scoreboard import NOT_JUDGED, CaseEntry, Scoreboard, SubmissionRow


@dataclass(frozen=True)
class ScoreCell:
    """One cell's text (control characters escaped: names and notes are the submissions' words) and tone."""

    text: str
    tone: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", printable(self.text))


def _rank(row: SubmissionRow) -> str:
    if row.rank is None:
        return "-"
    return f"{row.rank}=" if row.tied else str(row.rank)


def _entry(entry: CaseEntry | None) -> ScoreCell:
    if entry is None:
        return ScoreCell("not run", DIM)
    if entry.passed and entry.time_s is not None:
        return ScoreCell(f"{entry.time_s:.3f} s", GOOD)
    return ScoreCell(entry.verdict, BAD)


def scoreboard_rows(board: Scoreboard) -> tuple[list[str], list[list[ScoreCell]]]:
    """The header and the rows every rendering shares."""
    grade = ["grade"] if board.graded else []
    kernels = has_kernel_times(board)
    other = other_ranks(board) if kernels else None  # both rankings side by side: the ranked one first
    header = ["rank", *([f"{other[0]} rank"] if other else []), "submission", "passed", *grade, "total (passed)",
              *board.cases,
              *([KERNEL_TOTAL] if kernels else []), "GPU", "note"]
    rows = []
    for row in board.rows:
        note = row_note(row)
        rows.append([ScoreCell(_rank(row)), *([ScoreCell(other[1].get(row.name, "-"))] if other else []),
                     ScoreCell(row.name),
                     ScoreCell("-" if row.not_judged else f"{row.passed}/{len(board.cases)}",
                               GOOD if row.passed == len(board.cases) else ""),
                     *[ScoreCell(_grade(board.grade(row))) for _ in grade],
                     ScoreCell(f"{row.total_s:.3f} s" if row.passed else "-"),
                     *[_case_cell(row, case, kernels) for case in board.cases],
                     *([_kernel_total(row)] if kernels else []),
                     ScoreCell(row.gpu or "-"), ScoreCell(note, "" if row.built else BAD)])
    return header, rows


def row_note(row: SubmissionRow) -> str:
    """A row's note: a built row's build and the judge's notes on it (renamed, hw4.hip not judged, warm-ups
    forfeited, a rerun round lost): the row is where the guide promises them."""
    if row.not_judged:  # and how it was built: a TA's trial with no GPU never saw sm_61 refused and replaced
        return "; ".join(part for part in (f"{NOT_JUDGED}: {row.not_judged}", row.build_message) if part)
    return "; ".join(part for part in (row.build_message, _runs_note(row), row.gpu_note if row.built else "") if part)


_PLAIN_BUILD = re.compile(r"built with [^;]+ \(\d+(\.\d+)? s\)")  # the build's own line, with nothing the judge added


def ranked_note_lines(board: Scoreboard) -> list[str]:
    """What the judge noted on each ranked row (renamed, hw4.hip not judged, prebuilt files set aside, its Makefile
    failed, warm-ups forfeited, a rerun round lost, GPUs), a line each, for a table drawn without its note column
    (a terminal under 120 columns): the lines under the table say why unranked rows are so, and these the rest.
    A plain "built with ... (0.4 s)" and the runs' count are left out: every row has one."""
    lines = []
    for row in board.rows:
        notes = [part for part in (row.build_message, row.gpu_note) if part and not _PLAIN_BUILD.fullmatch(part)]
        if row.rank is not None and notes:
            lines.append(printable(f"{row.name}: {'; '.join(notes)}"))
    return lines


def _runs_note(row: SubmissionRow) -> str:
    """How many runs each passed case's time is the median of, as run: a class interrupted in its reruns has
    fewer than the rerun rule's three (the row's `reruns` is set when its reruns begin)."""
    if row.reruns <= 1:
        return ""
    runs = sorted({len(e.runs_s) for e in row.entries.values() if e.passed and e.runs_s})
    if not runs or runs[-1] <= 1:
        return ""
    return f"median of {runs[0]} runs" if len(runs) == 1 else f"median of {runs[0]}-{runs[-1]} runs"


def _case_cell(row: SubmissionRow, case: str, kernels: bool) -> ScoreCell:
    if row.not_judged:
        return ScoreCell(NOT_JUDGED, DIM)
    if not row.built:
        return ScoreCell("-", DIM)
    return _with_kernels(_entry(row.entries.get(case)), row.entries.get(case), kernels)


def _grade(grade: int | None) -> str:
    return "-" if grade is None else str(grade)


def scoreboard_model(board: Scoreboard, title: str = "scoreboard") -> TableModel:
    header, rows = scoreboard_rows(board)
    numeric = {i for i, name in enumerate(header) if name not in ("submission", "GPU", "note")}
    model = TableModel(title, [Column(name, right=i in numeric, wide=name == "note") for i, name in enumerate(header)])
    for row in rows:
        model.add_row(*[Text(cell.text, cell.tone) for cell in row])
    return model


def unranked_lines(board: Scoreboard, notes_shown: bool = False) -> list[str]:
    """Why each unranked row is unranked, one line each: a narrow terminal drops the table's note column,
    and a failed build's reason must still show (at 80 columns too). `notes_shown`: the table showed its note
    column, which holds a row's build and NOT JUDGED reasons already (a TA at 120 columns read each twice)."""
    lines: list[str] = []
    unjudged: dict[str, list[str]] = {}  # one line per reason, naming its rows: a TA's class of CUDA programs on
    # a laptop read the same long sentence once per row
    places: dict[int, str] = {}  # where each reason's line goes: where its first row stands
    for row in board.rows:
        if board.interrupted and row.built and row.entries and not ran_every_case(board, row):
            judged = sum(case in row.entries for case in board.cases)
            lines.append(f"{row.name}: unranked: the judge was interrupted after {judged} of its "
                         f"{len(board.cases)} cases ({row.passed} passed)")
            continue
        if row.built and row.passed:  # ranked, or (interrupted, checkpointed) not ranked yet: no reason to give
            continue
        if row.not_judged:
            if not notes_shown:
                if row.not_judged not in unjudged:
                    places[len(lines)] = row.not_judged
                    lines.append("")  # its place, filled in below
                unjudged.setdefault(row.not_judged, []).append(row.name)
            continue
        if not row.built:
            if not notes_shown or not row.build_message:
                lines.append(f"{row.name}: not judged: {row.build_message or 'it did not build'}")
            continue
        if board.interrupted and not row.entries:  # never run: "it passed no case" would blame it; "interrupted"
            # was said too of a class stopped by an error of the judge's own (sbatch refusing the jobs)
            lines.append(f"{row.name}: not run: the judge stopped before its cases")
            continue
        failed = next(((case, e) for case, e in row.entries.items() if not e.passed), None)
        first = f"; first failed case {failed[0]}: {failed[1].verdict} {failed[1].message}".rstrip() if failed else ""
        lines.append(f"{row.name}: unranked: it passed no case{first}")
    for place, reason in places.items():
        lines[place] = f"{', '.join(unjudged[reason])}: {NOT_JUDGED}: {reason}"
    return [printable(line) for line in lines]


def failed_case_lines(board: Scoreboard) -> list[str]:
    """Why a ranked row failed its cases, one line each: its cells say only WRONG or CRASH, and each failed case
    costs the course's grade 3 points."""
    lines = []
    for row in board.rows:
        failed = [(case, e) for case, e in row.entries.items() if not e.passed]
        if not (row.built and row.passed and failed) or row.not_judged:
            continue
        case, entry = failed[0]
        more = f" (and {counted(len(failed) - 1, 'other')}: {', '.join(c for c, _ in failed[1:])})" if failed[1:] else ""
        lines.append(f"{row.name}: failed {case}{more}: {entry.verdict} {entry.message}".rstrip())
    return [printable(line) for line in lines]


def scoreboard_lines(board: Scoreboard, notes_shown: bool = False) -> list[str]:
    """The lines printed and saved under the table: why rows are unranked or failed a case, the rules, mixed
    GPUs, an interruption (`notes_shown`: see `unranked_lines`)."""
    ran = any(row.entries for row in board.rows)  # the rules of runs, ranks and reruns only where a run was made:
    # a class built but not run (no GPU here) printed how rows were ranked and rerun (a TA's trial)
    rules = [f"ranks: {board.settings.get('ranking', '')}", f"reruns: {board.settings.get('reruns', '')}",
             f"limits: {board.settings.get('time_limits', '')}"] if ran else []
    lines = [*unranked_lines(board, notes_shown), *failed_case_lines(board), *rules]
    if board.settings.get("build"):
        lines.append(f"builds: {board.settings['build']}")
    if board.graded:
        lines.append(f"grade: {GRADE_RULE}")
    confined = board.settings.get("confinement") or {}
    lines += [f"limit not applied: {note}" for note in confined.get("limits_not_applied", [])]
    if board.settings.get("cpu_pinning"):
        lines.append(f"each worker's runs are kept on its cores by {board.settings['cpu_pinning']}")
    lines = [printable(line) for line in lines]
    kinds = board.gpu_kinds
    if len(kinds) > 1:
        lines.append(f"these rows ran on {len(kinds)} kinds of GPU ({', '.join(kinds)}): each kind is ranked "
                     "on its own, and times are not comparable between kinds")
    if board.interrupted and board.settings.get("stopped_by"):  # the judge's own failure (its disk full), no Ctrl-C
        lines.append(printable(f"stopped: {board.settings['stopped_by']}; the submissions and cases after it were "
                               "not judged"))
    elif board.interrupted:
        lines.append("interrupted: the submissions and cases after the interruption were not judged")
    return lines + kernel_lines(board)


def class_stem(board: Scoreboard, selector: str) -> str:
    """The stem a class's saved files take: its date and its cases (a range for a list or files)."""
    date = str(board.metadata.get("date") or "")[:10] or "undated"
    what = selector if "," not in selector and "/" not in selector else f"{board.cases[0]}-{board.cases[-1]}"
    return f"{date}_class_{what}"


def _run_text(run: RunOf) -> str:
    if not run.built:
        return f"{run.not_built or 'build failed'} ({run.date or 'undated'})"
    rank = "-" if run.rank is None else f"{run.rank}=" if run.tied else str(run.rank)
    total = f"{run.total_s:.3f} s" if run.passed else "-"
    return f"{run.passed}/{run.cases} {total} (rank {rank}, {run.date or 'undated'})"


def history_rows(rows: list[HistoryRow]) -> tuple[list[str], list[list[ScoreCell]]]:
    """A class's history (analysis.class_history) as the rows every rendering shares."""
    header = ["submission", "runs", "best", "latest"]
    return header, [[ScoreCell(h.name), ScoreCell(str(h.runs)), ScoreCell(_run_text(h.best), GOOD),
                     ScoreCell(_run_text(h.latest))] for h in rows]


def history_model(rows: list[HistoryRow], title: str = "history") -> TableModel:
    header, cells = history_rows(rows)
    model = TableModel(title, [Column(name, right=i == 1) for i, name in enumerate(header)])
    for row in cells:
        model.add_row(*[Text(cell.text, cell.tone) for cell in row])
    return model


# -- kernel time (--kernel-time, --rank-by kernel): a column, a suffix on passed cases, lines under the table ----
KERNEL_TOTAL = "kernels (passed)"


def has_kernel_times(board: Scoreboard) -> bool:
    """Whether the class recorded its programs' kernels (its settings say where they came from)."""
    return bool(board.settings.get("kernel_time"))


def _with_kernels(cell: ScoreCell, entry: CaseEntry | None, shown: bool) -> ScoreCell:
    """A passed case's process time, with its kernels' time after it ('0.412 s, k 1.234 ms')."""
    if not shown or entry is None or not entry.passed or entry.time_s is None:
        return cell
    kernel = entry.kernel_s
    return ScoreCell(f"{cell.text}, k {1e3 * kernel:.3f} ms" if kernel is not None else f"{cell.text}, k -", cell.tone)


def _kernel_total(row: SubmissionRow) -> ScoreCell:
    total = row.kernel_total_s if row.built and row.passed else None
    return ScoreCell(f"{1e3 * total:.3f} ms" if total is not None else "-", "" if total is not None else DIM)


def kernel_lines(board: Scoreboard) -> list[str]:
    """Under the table: which time ranked, where the kernel times came from and what they are worth, and why
    a case has none (each reason once)."""
    if not has_kernel_times(board):
        return []
    ranked = "kernel time" if board.settings.get("rank_by") == "kernel" else "wall time (the course's rule)"
    lines = [f"ranked by {ranked}; k: kernel time, {board.settings['kernel_time']}"]
    other = other_ranks(board)
    if other:
        lines.append(f"{other[0]} rank: the rank the same rule gives by {other[0]} time instead, for comparison")
    notes = dict.fromkeys(e.kernel_note for r in board.rows for e in r.entries.values() if e.kernel_note)
    lines += [f"no kernel time: {note.removeprefix('no kernel time: ')}" for note in notes]
    return [printable(line) for line in lines]


def cost_line(cost: JudgeCost | None) -> str | None:
    """The one line said after a judge (a class's board.cost, or one program's): the judge's wall time against its
    programs' runs, and its phases."""
    if cost is None or cost.ratio is None:
        return None
    phases = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in cost.phases_s.items())
    return (f"judging took {cost.ratio:.2f}x the programs' runs: {cost.wall_s:.1f} s for {cost.program_runs_s:.1f} s "
            f"of runs ({PROGRAM_RUNS}; {phases})")
