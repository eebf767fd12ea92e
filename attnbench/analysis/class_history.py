"""A class over time: every saved scoreboard in a results folder, per submission its best and its latest run.

Each judge run of a class saves its scoreboard as a new file (never over an older one), so the results
folder is the class's history, as a course's scoreboard page or a leaderboard keeps one. A submission's
best run is the one with the most cases passed, then the least total time (as ranks are made); its latest
is the last run that judged it. Runs on different cases are not compared: the history is of one case list
(the latest board's, unless named).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from attnbench.errors import ResultsError
from attnbench.results.scoreboard import SCOREBOARD_VERSION, Scoreboard, SubmissionRow, load_scoreboard


@dataclass(frozen=True)
class RunOf:
    """One submission in one saved run."""

    date: str
    file: str
    passed: int
    cases: int
    total_s: float
    rank: int | None
    tied: bool
    built: bool = True  # False: not built (its build failed, or no build ran), so it judged nothing that run
    not_built: str = ""  # why, in a few words: "build failed", "not a submission", "refused", ...


@dataclass(frozen=True)
class HistoryRow:
    """A submission over the runs of a class: how many judged it, its best and its latest."""

    name: str
    runs: int
    best: RunOf
    latest: RunOf


def load_boards(folder: str | Path) -> list[Scoreboard]:
    """Every scoreboard saved in folder (other JSON files are skipped), oldest first; ResultsError if the
    folder cannot be read or a scoreboard in it is damaged."""
    path = Path(folder)
    try:
        files = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
    except OSError as exc:
        raise ResultsError(f"{folder}: cannot be read ({exc.strerror})") from None
    boards = []
    for file in files:
        try:
            with file.open("rb"):
                pass
        except OSError as exc:  # another user's run saved with umask 077 vanished from the history without a word
            raise ResultsError(f"{file}: cannot be read ({exc.strerror}), so whether it is a run of the class is "
                               f"unknown: make it readable, or move it out of {folder}") from None
        try:
            board = load_scoreboard(file)
        except ResultsError as exc:
            version = _scoreboard_version(file)
            if isinstance(version, int) and version > SCOREBOARD_VERSION:  # a newer attnbench's run: it vanished
                # from the history without a word, its latest run among them
                raise ResultsError(f"{file}: a scoreboard of version {version}, newer than this attnbench reads "
                                   f"({SCOREBOARD_VERSION}); upgrade attnbench, or move it out of {folder}") from None
            if version is not None:  # a damaged run of the class (its version too: 0, -1, null, "1" were skipped,
                # and the history said "no saved scoreboard", exit 0): it vanished from the history
                why = str(exc).partition(" (")[2].rstrip(")") or str(exc)
                raise ResultsError(f"{file}: a saved scoreboard, damaged ({why}): restore it, or move it out of "
                                   f"{folder} to see the history without it") from None
            continue  # another command's results
        board.path = file
        boards.append(board)
    return sorted(boards, key=lambda b: (str(b.metadata.get("date") or ""), str(b.path or "")))


# How every saved scoreboard begins (`Scoreboard.to_dict` puts version and kind first): a file cut short still does.
_SCOREBOARD_HEAD = re.compile(rb'\A\s*\{\s*"version":\s*([^,{}\[\]]{1,40}),\s*"kind":\s*"scoreboard"')


def _scoreboard_version(file: Path) -> int | str | None:
    """The version a file that did not load claims as a scoreboard (this one's: damaged; a larger one: a newer
    attnbench's; one that is no whole number, as written: damaged), or None for another command's JSON."""
    try:
        with file.open("rb") as handle:
            head = handle.read(200)
    except OSError:
        return None
    found = _SCOREBOARD_HEAD.match(head)
    if found is None:
        return None
    written = found.group(1).decode("utf-8", "replace").strip()
    return int(written) if written.isdigit() else written


def _run(board: Scoreboard, row: SubmissionRow) -> RunOf:
    return RunOf(str(board.metadata.get("date") or "")[:19], board.path.name if board.path else "", row.passed,
                 len(board.cases), row.total_s, row.rank, row.tied, row.built,
                 "" if row.built else _why_not_built(row.build_message))


def _why_not_built(message: str) -> str:
    """The head of a row's reason for no program: a folder that is no submission (or a link, or HIP only) was
    said as "build failed" in the history, though no build ran."""
    if not message or message.startswith("the build failed"):
        return "build failed"
    return message.partition(":")[0].partition(" (")[0]


def history(boards: list[Scoreboard], cases: list[str] | None = None) -> list[HistoryRow]:
    """Per submission (of the runs on `cases`, by default the latest board's): its best and latest run,
    ordered by best (most passed, then least total time), then name."""
    if not boards:
        return []
    chosen = cases if cases is not None else boards[-1].cases
    runs: dict[str, list[RunOf]] = {}
    for board in boards:
        if board.cases != chosen:
            continue
        for row in board.rows:  # a failed build too: it is a run of that submission, passing nothing
            never_run = board.interrupted and row.built and not row.entries  # Ctrl-C came before its cases
            if not row.not_judged and not never_run:  # built, never run (no GPU there): no run of it, good or bad
                runs.setdefault(row.name, []).append(_run(board, row))
    rows = []
    for name, seen in runs.items():
        passed = [r for r in seen if r.passed > 0]
        best = min(passed, key=lambda r: (-r.passed, r.total_s)) if passed else seen[-1]
        rows.append(HistoryRow(name, len(seen), best, seen[-1]))
    return sorted(rows, key=lambda h: (-h.best.passed, h.best.total_s if h.best.passed else float("inf"), h.name))


def runs_on_other_cases(boards: list[Scoreboard], cases: list[str] | None = None) -> int:
    """How many saved runs the history leaves out for judging other cases than `cases` (the latest board's):
    said under it, or a run on t01-t03 before one on t01-t30 vanished from the history without a word."""
    if not boards:
        return 0
    chosen = cases if cases is not None else boards[-1].cases
    return sum(board.cases != chosen for board in boards)
