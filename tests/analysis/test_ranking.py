"""attnbench.analysis.ranking: passed cases first, then total time; ties within noise; GPU kinds apart."""

from attnbench.analysis.ranking import TIE_WITHIN, rank, top_rows
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow


def row(name, times, failed=0, gpu="H200", built=True):
    entries = {f"t{i:02d}": CaseEntry("PASS", runs_s=[t]) for i, t in enumerate(times)}
    entries.update({f"f{i}": CaseEntry("WRONG", "off") for i in range(failed)})
    return SubmissionRow(name, name, built, gpu=gpu, entries=entries if built else {})


def ranks(board):
    return [(r.name, r.rank, r.tied) for r in board.rows]


def test_more_cases_passed_beats_less_time():
    board = rank(Scoreboard([], [row("slow_all", [5.0, 5.0]), row("fast_one", [0.1], failed=1)]))
    assert ranks(board) == [("slow_all", 1, False), ("fast_one", 2, False)]


def test_totals_within_the_noise_tie_and_the_next_rank_skips():
    near = 1.0 * (1 + TIE_WITHIN / 2)
    board = rank(Scoreboard([], [row("b", [near]), row("a", [1.0]), row("c", [2.0]), row("d", [1.0 + 0.5])]))
    assert ranks(board) == [("a", 1, True), ("b", 1, True), ("d", 3, False), ("c", 4, False)]


def test_no_spread_widens_the_tie_so_a_noisy_slower_row_buys_nothing():
    honest = row("honest", [1.0])
    honest.entries["t00"].runs_s = [1.0, 1.0, 1.01]
    idler = row("idler", [1.74])  # 74% slower, and it idles on its third run to look noisy
    idler.entries["t00"].runs_s = [1.74, 1.74, 9.0]
    noisy_fast = row("noisy_fast", [0.5])
    noisy_fast.entries["t00"].runs_s = [0.3, 0.5, 1.2]
    board = rank(Scoreboard([], [idler, honest, noisy_fast]))
    assert ranks(board) == [("noisy_fast", 1, False), ("honest", 2, False), ("idler", 3, False)]
    assert "fixed 2%" in board.settings["ranking"]


def test_rerun_top_zero_reruns_nothing():
    board = rank(Scoreboard([], [row("a", [1.0]), row("b", [2.0])]))
    assert top_rows(board, 0) == [] and [r.name for r in top_rows(board, 1)] == ["a"]


def test_unbuilt_and_all_failing_rows_are_unranked_and_last():
    board = rank(Scoreboard([], [row("broken", [], built=False), row("wrong", [], failed=2), row("ok", [1.0])]))
    assert ranks(board) == [("ok", 1, False), ("wrong", None, False), ("broken", None, False)]


def test_gpu_kinds_are_ranked_apart_and_top_rows_come_from_each():
    board = rank(Scoreboard([], [row("x", [3.0], gpu="H100"), row("y", [1.0], gpu="H200"),
                                 row("z", [2.0], gpu="H100"), row("w", [5.0], gpu="H200")]))
    assert ranks(board) == [("z", 1, False), ("x", 2, False), ("y", 1, False), ("w", 2, False)]
    assert [r.name for r in top_rows(board, 1)] == ["z", "y"]
    assert "GPU kind" in board.settings["ranking"]


def test_a_tie_is_measured_from_its_fastest_row_so_rows_just_apart_cannot_chain():
    # the attack: colluding rows 1.9% apart, each within the band of the row above, pull a row 5.7% slower
    board = rank(Scoreboard([], [row("honest", [10.00]), row("sybil1", [10.19]), row("sybil2", [10.38]),
                                 row("cheat", [10.57])]))
    assert ranks(board) == [("honest", 1, True), ("sybil1", 1, True), ("sybil2", 3, True), ("cheat", 3, True)]
    assert "fastest of the tie" in board.settings["ranking"]


def test_a_row_slowed_by_one_noisy_first_run_is_still_rerun():
    rows = [row("a", [10.0]), row("b", [10.5]), row("c", [11.0]), row("honest_noisy", [12.5]), row("slow", [20.0])]
    chosen = {r.name for r in top_rows(rank(Scoreboard([], rows)), 3)}
    assert chosen == {"a", "b", "c", "honest_noisy"}  # within 25% of the third's total: rerun too


def test_an_interrupted_class_ranks_only_the_rows_that_ran_every_case():
    whole, cut = row("whole", [1.0, 1.0]), row("cut", [0.1])
    board = rank(Scoreboard(["t00", "t01"], [cut, whole], interrupted=True))
    assert ranks(board) == [("whole", 1, False), ("cut", None, False)]
    assert ranks(rank(Scoreboard(["t00", "t01"], [row("cut", [0.1]), row("whole", [1.0, 1.0])]))) == [
        ("whole", 1, False), ("cut", 2, False)]
