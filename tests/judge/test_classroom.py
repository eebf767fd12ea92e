"""attnbench.judge.classroom and `api.judge_class`: a small class of C submissions built and judged on the
CPU: correct, slow, wrong, crashing, one that does not build, one with a Makefile; the order is asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnbench.api import programs as api_programs
from attnbench.judge.course_judge import CRASH, WRONG_ANSWER
from tests.judge.classes import CASES, ORDER, RANKS, can_build, make_class



@pytest.fixture(scope="module")
def classroom(tmp_path_factory) -> Path:
    if not can_build():
        pytest.skip("no C compiler or make")
    return make_class(tmp_path_factory.mktemp("class"))


def test_a_class_is_built_judged_ranked_and_the_top_rerun(classroom):
    events = []
    board = api_programs.judge_class([classroom], CASES, time_limits="none",
                                     listener=lambda *event: events.append(event))
    assert [row.name for row in board.rows] == ORDER
    assert {row.name: row.rank for row in board.rows} == RANKS
    rows = {row.name: row for row in board.rows}
    assert rows["alice"].passed == rows["bob"].passed == 2
    assert rows["bob"].total_s > rows["alice"].total_s + 0.6
    assert {e.verdict for e in rows["carol"].entries.values()} == {WRONG_ANSWER}
    assert {e.verdict for e in rows["dave"].entries.values()} == {CRASH}
    assert not rows["erin"].built and "error" in rows["erin"].build_message and rows["erin"].entries == {}
    # the top rows ran every passed case three times; their case time is the median of the three
    for name in ("alice", "bob"):
        assert rows[name].reruns == 3 and all(len(e.runs_s) == 3 for e in rows[name].entries.values())
    assert rows["carol"].reruns == 1
    assert ("erin", "build", "build failed") in events
    assert board.cases == ["odd_17x48", "odd_100x32"] and not board.interrupted
    assert "passed first" in board.settings["ranking"]


def test_the_scoreboard_saves_as_strict_json(classroom, tmp_path):
    from attnbench.output.scoreboard import save_scoreboard
    from attnbench.results.scoreboard import load_scoreboard

    board = api_programs.judge_class([classroom / "alice", classroom / "dave.c"], ["odd_17x48"],
                                     time_limits="none", rerun_top=0)
    paths = save_scoreboard(board, tmp_path, "class", with_html=True)
    assert [p.suffix for p in paths] == [".json", ".csv", ".md", ".html"]

    def refuse(constant):
        raise ValueError(constant)

    json.loads(paths[0].read_text(), parse_constant=refuse)
    again = load_scoreboard(paths[0])
    assert [r.name for r in again.rows] == ["alice", "dave"] and again.rows[0].rank == 1
    assert "alice" in paths[1].read_text() and "<table>" in paths[3].read_text()


def test_bad_arguments_are_one_line(tmp_path):
    from attnbench.errors import AttnbenchError

    with pytest.raises(AttnbenchError, match="no such file"):
        api_programs.judge_class([tmp_path / "missing"], "odd_17x48")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AttnbenchError, match="no submission found"):
        api_programs.judge_class([tmp_path / "empty"], "odd_17x48")
