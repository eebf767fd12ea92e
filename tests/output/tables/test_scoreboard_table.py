"""attnbench.output.tables.scoreboard_table: one set of rows drawn as a table (the saved formats: test_scoreboard_export.py)."""

from attnbench.output.tables.scoreboard_table import scoreboard_lines, scoreboard_model
from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow


def board(second_gpu="H200"):
    a = SubmissionRow("a<b>", "/s/a", True, gpu="H200", rank=1, tied=True, reruns=3,
                      entries={"t01": CaseEntry("PASS", runs_s=[0.25, 0.24, 0.26])})
    b = SubmissionRow("b", "/s/b", True, gpu=second_gpu, rank=1, tied=second_gpu == "H200",
                      entries={"t01": CaseEntry("TIMEOUT", "killed")})
    c = SubmissionRow("c", "/s/c.c", False, "the build failed (exit 1): x.c:1: error: y")
    return Scoreboard(["t01"], [a, b, c], settings={"ranking": "the rule", "reruns": "top 3"})


def test_the_table_has_a_row_per_submission():
    model = scoreboard_model(board())
    assert [c.name for c in model.columns] == ["rank", "submission", "passed", "total (passed)", "t01", "GPU", "note"]
    assert [cell.text for cell in model.rows[0]] == ["1=", "a<b>", "1/1", "0.250 s", "0.250 s", "H200", "median of 3 runs"]
    assert model.rows[1][4].text == "TIMEOUT" and model.rows[2][-1].text.startswith("the build failed")


def test_mixed_gpu_kinds_are_said():
    assert not any("kinds of GPU" in line for line in scoreboard_lines(board()))
    assert any("2 kinds of GPU (H200, H100)" in line
               for line in scoreboard_lines(board("H100")))


def test_a_class_is_saved_under_its_date_and_cases():
    from attnbench.output.tables.scoreboard_table import class_stem

    board = Scoreboard(["t01", "t02", "t03"], [], metadata={"date": "2026-11-22T10:00:00"})
    assert class_stem(board, "course") == "2026-11-22_class_course"
    assert class_stem(board, "t01,t02,t03") == "2026-11-22_class_t01-t03"
    assert class_stem(Scoreboard(["t01"], []), "my/case.in") == "undated_class_t01-t01"


def test_only_rows_that_did_not_build_or_passed_nothing_get_a_reason_under_the_table():
    from attnbench.output.tables.scoreboard_table import unranked_lines
    from attnbench.results.scoreboard import CaseEntry, Scoreboard, SubmissionRow

    passing = SubmissionRow("ok", "/s/ok", True, entries={"t01": CaseEntry("PASS", runs_s=[0.3])})  # rank None: a
    wrong = SubmissionRow("bad", "/s/bad", True, entries={"t01": CaseEntry("WRONG", "every element is 0")})  # checkpoint
    broken = SubmissionRow("c", "/s/c.c", False, "the build failed: cc (exit 1): x.c:1: error: y")
    lines = unranked_lines(Scoreboard(["t01"], [passing, wrong, broken], interrupted=True))
    assert lines == ["bad: unranked: it passed no case; first failed case t01: WRONG every element is 0",
                     "c: not judged: the build failed: cc (exit 1): x.c:1: error: y"]
    # where the table showed its note column, the build's words are in it: not printed twice (at 120 columns)
    cuda = SubmissionRow("cu", "/s/cu.cu", False, "the build failed: ...", not_judged="this host's toolkit lacks x.h")
    shown = unranked_lines(Scoreboard(["t01"], [passing, wrong, broken, cuda], interrupted=True), notes_shown=True)
    assert shown == ["bad: unranked: it passed no case; first failed case t01: WRONG every element is 0"]


def test_with_kernel_times_both_rankings_show_side_by_side():
    """Ranked by wall time, a 'kernel rank' column shows where kernel time would put each row (and the other
    way round with --rank-by kernel); rows tied on one clock need not tie on the other."""
    from attnbench.analysis.ranking import rank

    def row(name, wall, kernel):
        return SubmissionRow(name, f"/s/{name}", True, gpu="H200", entries={
            "t01": CaseEntry("PASS", runs_s=[wall], kernel_runs_s=[kernel])})

    rows = [row("slow_kernels", 0.400, 0.020), row("fast_kernels", 0.401, 0.001), row("mid", 0.500, 0.002)]
    settings = {"kernel_time": "CUPTI records"}
    by_wall = rank(Scoreboard(["t01"], rows, settings={**settings, "rank_by": "wall"}))
    model = scoreboard_model(by_wall)
    assert [c.name for c in model.columns][:3] == ["rank", "kernel rank", "submission"]
    assert [[cell.text for cell in r[:3]] for r in model.rows] == [
        ["1=", "3", "slow_kernels"], ["1=", "1", "fast_kernels"], ["3", "2", "mid"]]
    assert any(line.startswith("kernel rank: ") for line in scoreboard_lines(by_wall))
    by_kernel = rank(Scoreboard(["t01"], rows, settings={**settings, "rank_by": "kernel"}))
    assert [[cell.text for cell in r[:3]] for r in scoreboard_model(by_kernel).rows] == [
        ["1", "1=", "fast_kernels"], ["2", "3", "mid"], ["3", "1=", "slow_kernels"]]


def test_without_kernel_times_there_is_one_ranking():
    assert "kernel rank" not in [c.name for c in scoreboard_model(board()).columns]


def test_a_row_not_judged_says_so_in_each_case_and_under_the_table_never_as_a_failure():
    from attnbench.output.tables.scoreboard_table import unranked_lines
    from attnbench.results.course_grade import COURSE_CASES

    cases = list(COURSE_CASES)
    judged = SubmissionRow("c", "/s/c.c", True, gpu="no GPU (the host's CPU)", rank=1,
                           entries={case: CaseEntry("PASS", runs_s=[0.1]) for case in cases})
    cuda = SubmissionRow("cu", "/s/cu.cu", True, "built with nvcc", not_judged="no NVIDIA GPU here (x)")
    board = Scoreboard(cases, [judged, cuda])
    model = scoreboard_model(board)
    header = [c.name for c in model.columns]
    row = {name: cell.text for name, cell in zip(header, model.rows[1])}
    assert row["rank"] == "-" and row["passed"] == "-" and row["grade"] == "-" and row["total (passed)"] == "-"
    assert {row[case] for case in cases} == {"NOT JUDGED"}
    assert row["note"] == "NOT JUDGED: no NVIDIA GPU here (x); built with nvcc"  # and how it was built
    assert unranked_lines(board) == ["cu: NOT JUDGED: no NVIDIA GPU here (x)"]
    # rows not judged for one reason share its line, where the first of them stands
    broken = SubmissionRow("b", "/s/b.c", False, "the build failed: cc (exit 1): y")
    more = [SubmissionRow(name, f"/s/{name}.cu", True, "built", not_judged=reason)
            for name, reason in (("cv", "no NVIDIA GPU here (x)"), ("lib", "this host's toolkit lacks x.h"))]
    board = Scoreboard(cases, [judged, cuda, broken, *more])
    assert unranked_lines(board) == ["cu, cv: NOT JUDGED: no NVIDIA GPU here (x)",
                                     "b: not judged: the build failed: cc (exit 1): y",
                                     "lib: NOT JUDGED: this host's toolkit lacks x.h"]


def test_a_class_built_but_never_run_says_no_rule_of_ranks_reruns_or_limits():
    """A TA's trial on a machine without a GPU: every row NOT JUDGED, yet the lines under the table said how rows
    were ranked and rerun."""
    cuda = SubmissionRow("cu", "/s/cu.cu", True, "built with nvcc", not_judged="no NVIDIA GPU here (x)")
    settings = {"ranking": "ranked within each GPU kind", "reruns": "the top 3", "time_limits": "the course's",
                "build": "make hw4"}
    lines = scoreboard_lines(Scoreboard(["t01"], [cuda], settings=settings))
    assert not any(line.startswith(("ranks:", "reruns:", "limits:")) for line in lines)
    assert "builds: make hw4" in lines and "cu: NOT JUDGED: no NVIDIA GPU here (x)" in lines
    ran = SubmissionRow("c", "/s/c.c", True, entries={"t01": CaseEntry("PASS", runs_s=[0.1])})
    lines = scoreboard_lines(Scoreboard(["t01"], [ran, cuda], settings=settings))
    assert "ranks: ranked within each GPU kind" in lines and "reruns: the top 3" in lines


def test_a_class_stopped_by_the_judges_own_failure_is_not_called_interrupted():
    """A class stopped by its full disk said "interrupted: ... after the interruption" though nobody interrupted it."""
    stopped = board()
    stopped.interrupted = True
    stopped.settings["stopped_by"] = "the judge could not finish this: OSError: [Errno 28] No space left on device"
    lines = scoreboard_lines(stopped)
    assert not any("interrupt" in line for line in lines)
    assert ("stopped: the judge could not finish this: OSError: [Errno 28] No space left on device; the submissions "
            "and cases after it were not judged") in lines
    interrupted = board()
    interrupted.interrupted = True
    assert "interrupted: the submissions and cases after the interruption were not judged" in scoreboard_lines(interrupted)


def test_a_built_rows_notes_are_on_its_row():
    # the judge's notes on a built row (its renaming, an unjudged hw4.hip, a lost rerun round) were kept in
    # build_message, which only an unbuilt row showed: the table, Markdown, CSV and HTML dropped them
    row = SubmissionRow("naïve~1ed667", "/s/naïve", True, "named with a hash of its path: its name holds ï (U+00EF); "
                        "built with `make hw4` (0.1 s); its hw4.hip is not judged (the course's AMD part)",
                        gpu="H200", rank=1, reruns=3, entries={"t01": CaseEntry("PASS", runs_s=[0.25, 0.24, 0.26])})
    note = scoreboard_model(Scoreboard(["t01"], [row])).rows[0][-1].text
    assert "named with a hash of its path" in note and "hw4.hip is not judged" in note
    assert note.endswith("median of 3 runs")


def test_a_row_an_interruption_left_unrun_is_not_said_to_have_failed():
    from attnbench.output.tables.scoreboard_table import unranked_lines

    waiting = SubmissionRow("late", "/s/late", True, "built with `make hw4` (0.1 s)")
    lines = unranked_lines(Scoreboard(["t01"], [waiting], interrupted=True))
    assert lines == ["late: not run: the judge stopped before its cases"]


def test_a_row_an_interruption_cut_short_is_unranked_and_says_how_far_it_got():
    """A row interrupted after 1 of its 3 cases was ranked by that one case's time beside rows of three."""
    from attnbench.analysis.ranking import rank
    from attnbench.output.tables.scoreboard_table import unranked_lines

    whole = SubmissionRow("whole", "/s/whole", True, gpu="H200",
                          entries={c: CaseEntry("PASS", runs_s=[1.0]) for c in ("t01", "t02", "t03")})
    cut = SubmissionRow("cut", "/s/cut", True, gpu="H200", entries={"t01": CaseEntry("PASS", runs_s=[0.1])})
    board = rank(Scoreboard(["t01", "t02", "t03"], [cut, whole], interrupted=True))
    assert [(r.name, r.rank) for r in board.rows] == [("whole", 1), ("cut", None)]
    assert unranked_lines(board) == ["cut: unranked: the judge was interrupted after 1 of its 3 cases (1 passed)"]
    finished = rank(Scoreboard(["t01", "t02", "t03"], [cut, whole]))  # not interrupted: the rule as ever
    assert [(r.name, r.rank) for r in finished.rows] == [("whole", 1), ("cut", 2)]


def test_a_row_interrupted_in_its_reruns_says_how_many_runs_its_times_are_the_median_of():
    """Ctrl-C in rerun round 2: every case had 2 runs (one had 1), and the row said "median of 3 runs"."""
    row = SubmissionRow("a", "/s/a", True, gpu="H200", rank=1, reruns=3,
                        entries={"t01": CaseEntry("PASS", runs_s=[0.25, 0.26]), "t02": CaseEntry("PASS", runs_s=[0.5])})
    board = Scoreboard(["t01", "t02"], [row], interrupted=True)
    assert scoreboard_model(board).rows[0][-1].text == "median of 1-2 runs"
    row.entries["t02"].runs_s.append(0.49)
    assert scoreboard_model(board).rows[0][-1].text == "median of 2 runs"


def test_a_ranked_row_that_failed_a_case_says_why_under_the_table():
    """A row passing t01 but WRONG on t02 was ranked with a cell "WRONG" and no reason anywhere but the JSON."""
    row = SubmissionRow("d64bad", "/s/d64bad", True, gpu="H200", rank=2, entries={
        "t01": CaseEntry("PASS", runs_s=[0.2]), "t02": CaseEntry("WRONG", "1 of 9 elements off by more than 0.005"),
        "t03": CaseEntry("CRASH", "killed by SIGSEGV")})
    lines = scoreboard_lines(Scoreboard(["t01", "t02", "t03"], [row]))
    assert "d64bad: failed t02 (and 1 other: t03): WRONG 1 of 9 elements off by more than 0.005" in lines


def test_a_history_row_no_build_ran_for_says_why_not_build_failed():
    from attnbench.analysis.class_history import HistoryRow, RunOf
    from attnbench.output.tables.scoreboard_table import history_rows

    bob = RunOf("2026-11-29", "f.json", 0, 1, 0.0, None, False, built=False, not_built="not a submission")
    cc = RunOf("2026-11-29", "f.json", 0, 1, 0.0, None, False, built=False, not_built="build failed")
    _, cells = history_rows([HistoryRow("bob", 1, bob, bob), HistoryRow("cc", 1, cc, cc)])
    assert cells[0][3].text == "not a submission (2026-11-29)" and cells[1][3].text == "build failed (2026-11-29)"


def test_a_ranked_rows_notes_are_lines_where_the_note_column_is_dropped():
    """Below 120 columns the table has no note column: a ranked row's renaming, its unjudged hw4.hip or its failed
    Makefile were nowhere; a plain build line is every row's and stays out."""
    from attnbench.output.tables.scoreboard_table import ranked_note_lines

    noted = SubmissionRow("noted", "/s/noted", True, "built with `make hw4` (0.1 s); its hw4.hip is not judged "
                          "(the course's AMD part)", gpu="H200", rank=1, entries={"t01": CaseEntry("PASS", runs_s=[1.0])})
    plain = SubmissionRow("plain", "/s/plain", True, "built with nvcc -O3 -o hw4 hw4.cu (2.5 s)", gpu="H200", rank=2,
                          entries={"t01": CaseEntry("PASS", runs_s=[2.0])})
    broken = SubmissionRow("broken", "/s/broken", False, "the build failed: make hw4 (exit 2)")
    assert ranked_note_lines(Scoreboard(["t01"], [noted, plain, broken])) == [
        "noted: built with `make hw4` (0.1 s); its hw4.hip is not judged (the course's AMD part)"]
