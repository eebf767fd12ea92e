"""The terminal renderer: rich tables drawn from TableModels, warnings, and progress bars."""

from __future__ import annotations

import functools
import math
import os
from datetime import timedelta
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from attnbench.analysis.time_left import ClassProgress
from attnbench.output.render.column_widths import fit_widths, longest_line, longest_word
from attnbench.output.tables.result_tables import format_ms, format_s
from attnbench.output.tables.table_model import BAD, DIM, GOOD, Column, TableModel
from attnbench.printable import printable as one_line
from attnbench.printable import counted, first_few
from attnbench.results.judge_events import CaseJudged, NotJudgedHere, ProgramCaseJudged, RerunJudged, SubmissionBuilt
from attnbench.results.matrix_events import BarAdvanced, BarClosed, BarOpened, CellFinished, CellStarted, MatrixBegun

if TYPE_CHECKING:
    from attnbench.results.resultset import Cell

class _Console(Console):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self._width is not None and self._width < 1:  # COLUMNS=0 (set so by some CI runners): rich drew
            self._width = None  # nothing at all, tables and error lines alike; its fallback width (80) instead

    def on_broken_pipe(self) -> None:
        """The reader closed the pipe (`| head -1`): it has what it wanted, so later writes go to /dev/null and
        the command goes on to its end and its own exit status. Rich's way (and ours, with exit 0) ended the
        command there: a judge whose program crashed exited 0 under `| head -1`, its results never saved."""
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self.file.fileno())
        except (OSError, ValueError, AttributeError):  # no descriptor behind the stream: quiet is enough
            pass
        finally:
            os.close(devnull)


console = _Console(emoji=False)  # ":trophy:" in a submission's name stays text, never a picture
err_console = _Console(stderr=True, emoji=False)


_TONES = {GOOD: "green", BAD: "red", DIM: "dim"}


def printable(text: str) -> str:
    """`text` with what a terminal would act on or cannot show escaped: control characters (a file name
    holding ESC or a newline) and the stand-ins Python gives the bytes of a path that is not UTF-8."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def _cell(cell) -> str:
    # A cell's lines are the table model's own (a variant's kernels, one a line); within a line, nothing raw.
    text = "\n".join(escape(printable(line)) for line in cell.text.split("\n"))
    style = _TONES.get(cell.tone)
    return f"[{style}]{text}[/{style}]" if style else text


def _narrowest(column: Column, cells: list[str]) -> int:
    """The narrowest a column may be: its longest word (header included); a right-aligned column holds
    a number with its unit ("0.539 s"), kept whole like a name, under a header kept whole ("spill B")."""
    measure = longest_line if column.right else longest_word
    return max([measure(printable(column.name))] + [measure(cell) for cell in cells])


def _widths(model: TableModel, framed: bool, width: int) -> list[int] | None:
    """Widths that cut no word within `width`; None when only a vertical layout fits."""
    cells = [[row[i].text for row in model.rows] for i in range(len(model.columns))]
    words = [_narrowest(column, texts) for column, texts in zip(model.columns, cells)]
    lines = [max([longest_line(printable(column.name))] + [longest_line(t) for t in texts])
             for column, texts in zip(model.columns, cells)]
    borders = 3 * len(words) + 1 if framed else 2 * len(words)  # padding of 1 each side, and the rules
    return fit_widths(words, lines, width - borders)


def _title(model: TableModel) -> str | None:
    """A title names files the user gave: no markup read into it, nothing raw."""
    return escape(printable(model.title)) if model.title else model.title


def _header(column: Column) -> str:
    """A column's name may be a saved run's variant or a file's label: read as text, nothing raw."""
    return escape(printable(column.name))


def _vertical(model: TableModel, framed: bool) -> Table:
    """A table too wide for the console, one row a block of `column  value` lines: no name is cut."""
    table = Table(title=_title(model), show_header=False, box=box.HEAVY_HEAD if framed else None)
    table.add_column("field", style="bold", overflow="fold")
    table.add_column("value", overflow="fold")
    for number, row in enumerate(model.rows):
        if number and not framed:  # no box to draw the section's rule: an empty line parts the blocks
            table.add_row("", "")
        for index, (column, cell) in enumerate(zip(model.columns, row)):
            table.add_row(_header(column), _cell(cell), end_section=index == len(row) - 1)
    return table


def render(model: TableModel, wide: bool | None = True, where: Console | None = None) -> Table:
    """A rich Table of the model for `where` (the console). `wide` True: every column; False: without the wide
    columns; None: the wide columns on a terminal of WIDE_FROM_COLUMNS or more, and, where the table would not
    fit side by side, first the wide and then the optional columns left out. Columns are never narrower than
    their longest word; where even the narrowest table does not fit, the rows go vertical."""
    return _rendered(model, wide, where or console)[0]


def _rendered(model: TableModel, wide: bool | None, where: Console) -> tuple[Table, bool]:
    """`render`'s table, and whether it shows every column of the model."""
    framed = where.is_terminal  # piped output (a file, another program) gets plain columns, no box drawing
    if wide is None:
        tries = [model] if where.width >= WIDE_FROM_COLUMNS else []
        tries += [model.without_wide(), model.without_optional()]
    else:
        tries = [model if wide else model.without_wide()]
    for chosen in tries:
        widths = _widths(chosen, framed, where.width)
        if widths is not None:
            break
    if widths is None:
        return _vertical(tries[0], framed), tries[0] is model
    table = Table(title=_title(chosen), show_lines=chosen.row_lines and framed, box=box.HEAVY_HEAD if framed else None)
    for column, width in zip(chosen.columns, widths):
        table.add_column(_header(column), justify="right" if column.right else "left", overflow="fold", width=width)
    for row in chosen.rows:
        table.add_row(*(_cell(cell) for cell in row))
    return table, chosen is model


WIDE_FROM_COLUMNS = 120  # narrower terminals leave out the columns a table marks as wide


def print_table(model: TableModel, wide: bool | None = None, err: bool = False) -> bool:
    """Print a table; its wide columns only where the terminal is wide enough and they fit, unless `wide` says
    (see `render`). With `err` on standard error (a command whose standard output carries JSON). Whether every
    column was shown (a caller says elsewhere what a dropped one held)."""
    where = err_console if err else console
    table, whole = _rendered(model, wide, where)
    where.print(table)
    return whole


def print_line(text: str, err: bool = False) -> None:
    """One line of plain text that may hold what a user named (paths): no markup read, nothing raw."""
    (err_console if err else console).print(printable(text), highlight=False, markup=False, soft_wrap=True)


def print_prose(text: str, where: Console) -> None:
    """A judge's sentence under its table (a row's note, the legend, the cost): on a terminal wrapped between words
    at its width (the terminal's own wrap cut them mid-word), piped whole on one line for grep; no markup read."""
    where.print(printable(text), highlight=False, markup=False, soft_wrap=not where.is_terminal)


def print_warnings(warnings: list[str]) -> None:
    for warning in warnings:
        err_console.print(f"[yellow]warning:[/yellow] {escape(printable(warning))}", highlight=False, soft_wrap=True)


def _live() -> bool:
    """Progress bars only on a terminal: piped stderr gets no cursor codes and no blank lines."""
    return err_console.is_terminal


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr (nothing when stderr is not a terminal); yields a function that
    advances it by n units."""
    if not _live():
        yield lambda n: None
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total)
        yield lambda n: progress.advance(task, n)


# -- compare and sweep ---------------------------------------------------------------------------------
def cell_line(cell: "Cell") -> str:
    """One finished cell, as the matrix prints it while it runs."""
    if cell.ok and cell.measurement is not None:
        k = cell.measurement.kernel
        noise = f"±{100 * k.noise:.1f}%" if math.isfinite(k.noise) else "±?"  # as the tables write it
        return (f"{cell.variant} on {cell.case}: {format_ms(k.median)} {noise} "
                f"({k.count} samples), {cell.measurement.tflops:.3g} TFLOP/s")
    return f"{cell.variant} on {cell.case}: {cell.status.upper()} {cell.message}"


class MatrixProgress:
    """The compare/sweep progress: one bar over all cells weighted by their FLOPs (for the ETA),
    transient bars for generating inputs and references (and long cpu passes), and a line per finished cell.

    It is the run's listener: it hears the run's typed events (`results.matrix_events`), whatever executor ran
    the cells."""

    def __init__(self, title: str, quiet: bool = False) -> None:
        self.title = title
        self.quiet = quiet
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[cells]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=err_console,
            transient=True,
        )
        self._live = _live()  # piped stderr: the cell lines alone
        self._task: TaskID | None = None
        self._done = 0
        self._total = 0
        self._bars: dict[tuple[Any, str], tuple[AbstractContextManager, Callable[[int], None]]] = {}

    def __enter__(self) -> "MatrixProgress":
        if self._live:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for bar, _ in self._bars.values():
            bar.__exit__(None, None, None)
        self._bars.clear()
        if self._live:
            self._progress.stop()

    def __call__(self, event: object) -> None:
        """One event of the run (`results.matrix_events`)."""
        match event:
            case MatrixBegun(cells=cells, work=work):
                self._start(cells, work)
            case CellStarted(variant=variant, case=case):
                self._cell_started(variant, case)
            case CellFinished(cell=cell, work=work):
                self._cell_finished(cell, work)
            case BarOpened(description=description, total=total, job=job):
                bar = self.progress(description, total)
                self._bars[(job, description)] = (bar, bar.__enter__())
            case BarAdvanced(description=description, n=n, job=job) if (job, description) in self._bars:
                self._bars[(job, description)][1](n)
            case BarClosed(description=description, job=job) if (job, description) in self._bars:
                self._bars.pop((job, description))[0].__exit__(None, None, None)

    def _start(self, total_cells: int, total_work: float) -> None:
        self._total = total_cells
        self._task = self._progress.add_task(self.title, total=max(total_work, 1.0), cells=f"0/{total_cells} cells")

    @contextmanager
    def progress(self, description: str, total: int) -> Iterator[Callable[[int], None]]:
        """A transient bar of its own (a job's input, its reference, a long cpu pass)."""
        if not self._live:
            yield lambda n: None
            return
        task = self._progress.add_task(description, total=total, cells="")
        try:
            yield lambda n: self._progress.advance(task, n)
        finally:
            self._progress.remove_task(task)

    def _cell_started(self, variant: str, case: str) -> None:
        if self._task is not None:
            self._progress.update(self._task, description=escape(printable(f"{variant} on {case}")))

    def _cell_finished(self, cell: "Cell", work: float) -> None:
        self._done += 1
        if self._task is not None:
            self._progress.update(self._task, advance=work, cells=f"{self._done}/{self._total} cells")
        if not self.quiet and cell.status != "refused":
            # the case's label is a file name the user gave (an ESC in it coloured the line)
            err_console.print(escape(printable(cell_line(cell))), highlight=False, soft_wrap=True)


# -- judge: one program or a class ------------------------------------------------------------------------
@functools.singledispatch
def judge_line(event: object) -> str | None:
    """The line a judge's event (`attnbench.results.judge_events`, or a class's `ClassProgress`) prints while it
    runs, or None for one that prints nothing (a rerun that passed); the same whatever executor judged it."""
    return None


@judge_line.register
def _(event: ProgramCaseJudged) -> str | None:
    return f"[{event.number}/{event.cases}] {event.label}: {event.verdict} {format_s(event.wall_s)}"


@judge_line.register
def _(event: SubmissionBuilt) -> str | None:
    if event.not_built:
        return f"{event.submission}: not judged: {printable(event.not_built)}"
    if event.no_program:
        return f"{event.submission} build: {printable(event.no_program)}"
    return f"{event.submission} build: {'built' if event.ok else 'build failed'}"


@judge_line.register
def _(event: CaseJudged) -> str | None:
    return f"{event.submission} {event.case}: {event.entry.verdict}"


@judge_line.register
def _(event: RerunJudged) -> str | None:
    return None if event.entry.passed else f"{event.submission} {event.case}: rerun {event.entry.verdict}"


@judge_line.register
def _(event: NotJudgedHere) -> str | None:
    names = first_few(list(event.submissions), NAMES_SHOWN)
    rest = f"{counted(event.judged, 'other submission')} judged as ever" if event.judged else "nothing else to judge"
    return (f"not judged: {counted(len(event.submissions), 'CUDA program')} ({names}), {event.why}; {rest}; "
            "judge them on a machine with a GPU, or on Slurm's nodes (--executor slurm)")


NAMES_SHOWN = 5  # a class of a hundred CUDA programs is named by its first few


@judge_line.register
def _(event: ClassProgress) -> str | None:
    return plan_line(event)


PLAN_LINES = 10  # a phase's progress is said about this many times, however many jobs it holds


def plan_line(progress: ClassProgress) -> str | None:
    """A class's phase as it begins ("first runs: 8 submissions x 30 cases, one at a time"), then every tenth of
    it and its end ("first runs 120/240, about 0:12:30 left"); None between those."""
    left = "" if progress.left_s is None else f", about {timedelta(seconds=round(progress.left_s))} left"
    if progress.done == 0:
        return progress.phase + (f": {progress.note}" if progress.note else "") + left
    step = max(1, math.ceil(progress.total / PLAN_LINES))
    if progress.done % step and progress.done != progress.total:
        return None
    return f"{progress.phase} {progress.done}/{progress.total}{left}"


def judge_progress(event: object) -> None:
    """A judge's listener, for one program or a class: each event's line (`judge_line`) on standard error,
    as one printable line."""
    line = judge_line(event)
    if line is not None:
        err_console.print(one_line(line), highlight=False, markup=False, soft_wrap=True)
