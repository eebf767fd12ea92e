"""Ranking a scoreboard: more cases passed first, then less total time; times within the noise tie.

The rule, stated once (and saved with every scoreboard):
1. Rows are ranked within each GPU kind apart: times on different GPUs are not compared. A row whose cases
   ran on several kinds is ranked with the kind that ran most of them (its note says so).
2. A row that passed more cases ranks higher.
3. Among rows with as many cases passed, a lower total time (of the cases passed) ranks higher (the
   course's scoreboard shows Passed and Time; neither of its specs says whether Time counts failed cases
   or how ties are settled, so both are attnbench's choices), unless the slower total is within
   `TIE_WITHIN` of the faster: then they share a rank
   (competition ranking: 1, 2, 2, 4). The band is fixed: a band that grew with a row's spread let a
   slower row buy a tie by being noisy on purpose (idling on one rerun), and rows judged side by side
   spread further still. The band is measured from
   the FASTEST row of the tie, never from the row just above: rows 1.9% apart would otherwise chain a
   row 6% slower into the first rank.
4. A submission that did not build, or passed nothing, is unranked; so is one a class interrupted part-way
   through its cases (its total covers fewer cases than the others', and its missing cases are no failures).

With `--rank-by kernel` (the board's settings say `rank_by`), rule 3's total is the kernels' total GPU time of
the cases passed, recorded in a second, untimed run of each (attnbench.results.kernel_time), with the same
band; a row without a kernel time for every case it passed ranks after those with one, by its wall time. Those
records are written inside each submission's own process, so a submission can forge them: the default
ranking, the course's, never uses them.
"""

from __future__ import annotations

from attnbench.results.scoreboard import Scoreboard, SubmissionRow

TIE_WITHIN = 0.02  # one wall-clock run of a whole program varies by a percent or two on a quiet machine
RANKING_RULE = ("ranked within each GPU kind (a row by the kind that ran most of its cases): more cases passed "
                "first, then less total time of the cases passed; totals within a fixed "
                f"{TIE_WITHIN:.0%} of the fastest of the tie (no row's noise widens it, rows never chain)")
RANK_BY = ("wall", "kernel")
KERNEL_RANKING_RULE = ("ranked by kernel time (--rank-by kernel), within each GPU kind: more cases passed first, "
                       "then less total kernel GPU time of the cases passed (CUPTI records from a second, untimed run "
                       "inside each program's own process, which it could forge; not the course's rule), totals "
                       f"within a fixed {TIE_WITHIN:.0%} of the fastest tie; a row without kernel time for every "
                       "case it passed ranks after those with one, by wall time")
RERUN_MARGIN = 0.25  # a first round's single run can be this much slower than the row's median


def _total(row: SubmissionRow, by: str) -> tuple[bool, float]:
    """The total rule 3 ranks by: (no kernel time, total) for `by` "kernel", else (False, wall total)."""
    if by == "kernel":
        kernels = row.kernel_total_s
        return (True, row.total_s) if kernels is None else (False, kernels)
    return False, row.total_s


def _tied(faster: SubmissionRow, slower: SubmissionRow, by: str = "wall") -> bool:
    if faster.passed != slower.passed:
        return False
    (fast_missing, fast), (slow_missing, slow) = _total(faster, by), _total(slower, by)
    if fast_missing != slow_missing:
        return False
    return slow - fast <= TIE_WITHIN * fast


def ran_every_case(board: Scoreboard, row: SubmissionRow) -> bool:
    """Whether the row has an entry for every case of the board: only a class interrupted part-way through the
    row's cases leaves one without."""
    return all(case in row.entries for case in board.cases)


def rankable(board: Scoreboard, row: SubmissionRow) -> bool:
    """Rule 4: built, passed a case, and (in an interrupted class) judged on every case."""
    return row.built and row.passed > 0 and (not board.interrupted or ran_every_case(board, row))


def order(rows: list[SubmissionRow], by: str = "wall", board: Scoreboard | None = None) -> list[SubmissionRow]:
    """Rows in ranking order (unranked ones last, by name); `board` decides which rows are rankable (rule 4)."""
    board = board if board is not None else Scoreboard([], rows)
    ranked = [r for r in rows if rankable(board, r)]
    unranked = [r for r in rows if not rankable(board, r)]
    ranked.sort(key=lambda r: (-r.passed, *_total(r, by), r.name))
    unranked.sort(key=lambda r: (not r.built, -r.passed, r.name))
    return ranked + unranked


def _ranked(board: Scoreboard, by: str) -> list[tuple[SubmissionRow, int | None, bool]]:
    """Every row in ranking order by `by`, with its rank (None: unranked) and tie flag; rows untouched."""
    kinds = board.gpu_kinds
    groups = [[row for row in board.rows if row.gpu == gpu] for gpu in kinds]
    groups.append([row for row in board.rows if row.gpu not in kinds])  # never judged: unranked, last
    ranked: list[tuple[SubmissionRow, int | None, bool]] = []
    for group in (order(g, by, board) for g in groups):
        positions: list[int | None] = []
        leader: tuple[int, SubmissionRow] | None = None  # the fastest row of the current rank, and its rank
        for position, row in enumerate(group, start=1):
            if not rankable(board, row):
                positions.append(None)
            elif leader is not None and _tied(leader[1], row, by):
                positions.append(leader[0])
            else:
                positions.append(position)
                leader = (position, row)
        ranked += [(row, p, p is not None and positions.count(p) > 1) for row, p in zip(group, positions)]
    return ranked


def rank(board: Scoreboard) -> Scoreboard:
    """Set every row's rank and tie flag by the rule above (by the board's `rank_by`: wall clock unless it says
    kernel), per GPU kind; rows come back in ranking order."""
    by = board.settings.get("rank_by", "wall")
    ranked = _ranked(board, by)
    for row, position, tied in ranked:
        row.rank, row.tied = position, tied
    board.rows = [row for row, _, _ in ranked]
    board.settings["ranking"] = KERNEL_RANKING_RULE if by == "kernel" else RANKING_RULE
    return board


def other_ranks(board: Scoreboard) -> tuple[str, dict[str, str]] | None:
    """The ranking the board was not ranked by, shown beside it when kernel times were recorded: ("kernel",
    {name: "2="}) for a board ranked by wall time, ("wall", ...) for one ranked by kernel time; None when the
    board holds no kernel time."""
    if not any(row.kernel_total_s is not None for row in board.rows):
        return None
    other = "wall" if board.settings.get("rank_by", "wall") == "kernel" else "kernel"
    return other, {row.name: "-" if position is None else f"{position}=" if tied else str(position)
                   for row, position, tied in _ranked(board, other)}


def top_rows(board: Scoreboard, count: int) -> list[SubmissionRow]:
    """The rows worth rerunning: the first `count` ranked rows of each GPU kind, any row tied with them, and
    any row that passed as many cases as the count-th within RERUN_MARGIN of its total (one noisy first run
    must not keep an honest row out of the reruns, and so out of the top)."""
    chosen: list[SubmissionRow] = []
    if count <= 0:  # --rerun-top 0: no row is rerun
        return chosen
    by = board.settings.get("rank_by", "wall")
    for gpu in board.gpu_kinds:
        group = [r for r in board.rows if r.gpu == gpu and r.rank is not None]
        if not group:
            continue
        last = group[min(count, len(group)) - 1]
        chosen.extend(r for r in group if r.rank is not None and last.rank is not None and (
            r.rank <= last.rank or (r.passed == last.passed and _total(r, by) <= (
                _total(last, by)[0], (1 + RERUN_MARGIN) * _total(last, by)[1]))))
    return chosen
