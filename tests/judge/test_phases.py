"""attnbench.judge.phases: the judge's time cut into phases that add up to its wall time, each counted once
however they nest; and a class's scoreboard saves them with the ratio to its programs' runs."""

from __future__ import annotations

import shutil
import time

import pytest

from attnbench.api import programs as api_programs
from attnbench.judge import phases
from attnbench.output.tables.scoreboard_table import cost_line
from attnbench.results.judge_cost import PHASES, REST
from attnbench.results.scoreboard import Scoreboard
from tests.fakes import FakeClock
from tests.judge.classes import EXAMPLE, class_sandbox, wrapping


def test_nested_phases_count_each_second_once_and_the_rest_makes_up_the_wall_time():
    clock = FakeClock(100.0)
    with phases.timing(clock) as timed:
        clock.now += 1  # nobody's phase: the rest
        with phases.phase("runs"):
            clock.now += 2
            with phases.phase("checks"):
                clock.now += 0.5
            clock.now += 1
        with phases.phase("inputs and references"):
            clock.now += 3
        cost = timed.cost(program_runs_s=2.5)
    assert cost.phases_s == {"builds": 0.0, "inputs and references": 3.0, "runs": 3.0, "checks": 0.5, REST: 1.0}
    assert cost.wall_s == 7.5 and sum(cost.phases_s.values()) == cost.wall_s and cost.ratio == 3.0


def test_without_a_clock_a_phase_times_nothing_and_an_unknown_phase_is_refused():
    with phases.phase("runs"):
        pass
    with phases.timing(FakeClock()) as timed, pytest.raises(ValueError, match="no phase named"):
        with timed.phase("lunch"):
            pass


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None, reason="no C compiler or make")
def test_a_class_saves_its_phases_which_add_up_to_its_wall_time_and_prints_its_ratio(tmp_path):
    (tmp_path / "quick.c").write_text(wrapping(""))
    (tmp_path / "slow.c").write_text(wrapping("", "usleep(100000);"))
    assert EXAMPLE.exists()
    start = time.perf_counter()
    board = api_programs.judge_class([str(tmp_path / "quick.c"), str(tmp_path / "slow.c")], "odd_17x48,odd_100x32",
                                     time_limits="none", rerun_top=2, sandbox=class_sandbox())
    elapsed = time.perf_counter() - start
    cost = board.cost
    assert cost is not None and list(cost.phases_s) == [*PHASES, REST]
    assert all(cost.phases_s[name] > 0 for name in PHASES), cost.phases_s  # each one recorded
    assert cost.phases_s[REST] >= 0 and sum(cost.phases_s.values()) == pytest.approx(cost.wall_s, abs=1e-9)
    assert cost.wall_s <= elapsed
    runs = [s for row in board.rows for entry in row.entries.values() for s in entry.runs_s]
    assert len(runs) == 2 * 2 * 3 and cost.program_runs_s == pytest.approx(sum(runs))  # first runs and 2 reruns
    assert cost.phases_s["runs"] >= cost.program_runs_s  # the runs phase holds the programs' runs and more
    assert cost.ratio == pytest.approx(cost.wall_s / sum(runs)) and cost.ratio > 1
    again = Scoreboard.from_dict(board.to_dict())
    assert again.cost == cost and board.to_dict()["phases"]["ratio"] == cost.ratio
    line = cost_line(board)
    assert line.startswith(f"judging took {cost.ratio:.2f}x the programs' runs") and "checks" in line


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None, reason="no C compiler or make")
def test_with_a_pool_of_workers_the_runs_they_do_are_the_runs_phase_not_the_rest(tmp_path, monkeypatch):
    """With --gpus the parent waits while the workers run the cases: that wait is its "runs" phase (their inputs
    and checks included), so the phases still add up to the wall time and the rest is only the rest."""
    monkeypatch.setenv("ATTNBENCH_CPU_WORKERS", "1")
    (tmp_path / "quick.c").write_text(wrapping(""))
    (tmp_path / "slow.c").write_text(wrapping("", "usleep(100000);"))
    board = api_programs.judge_class([str(tmp_path / "quick.c"), str(tmp_path / "slow.c")], "odd_17x48,odd_100x32",
                                     time_limits="none", rerun_top=2, gpus="all", sandbox=class_sandbox())
    cost = board.cost
    assert cost is not None and board.settings["workers"] == ["cpu worker 0"]
    assert sum(cost.phases_s.values()) == pytest.approx(cost.wall_s, abs=1e-9)
    assert cost.phases_s["builds"] > 0 and cost.program_runs_s > 0
    assert cost.phases_s["runs"] >= cost.program_runs_s  # the workers' runs, first runs and reruns, are all in it
    assert cost.phases_s[REST] < cost.phases_s["runs"], cost.phases_s


def test_a_runs_room_opening_and_closing_are_its_runs_phase_not_the_rest(monkeypatch, tmp_path):
    """A class opens a room for every run (and every warm-up): that time is the run's cost, so "the rest" holds
    only what no phase covers (it held every room's opening and closing: 5 s of a 52 s class)."""
    from attnbench.cases.testcase import Shape
    from attnbench.judge import classroom
    from attnbench.judge.course_judge import PASS, JudgedCase, PreparedCase
    from attnbench.judge.time_limits import load_time_limits

    clock = FakeClock(0.0)

    class Room:
        settings = None

        @classmethod
        def open(cls, *args, **kwargs):
            clock.now += 1.0
            return cls()

        def close(self):
            clock.now += 2.0

    def judged(program, case, limit, timeout, sandbox):
        clock.now += 4.0
        return JudgedCase(case.label, case.shape, PASS, "", 4.0, limit, timeout)

    monkeypatch.setattr(classroom, "Sandbox", Room)
    monkeypatch.setattr(classroom, "judge_case", judged)
    def warmed(program, shape, sandbox, timeout):
        clock.now += 8.0
        return ""

    monkeypatch.setattr(classroom, "warm_up", warmed)
    shape = Shape(1, 4, 8)
    case = PreparedCase("t01", shape, tmp_path / "t01.in", None, None)  # type: ignore[arg-type]
    settings = classroom.ClassSettings(load_time_limits("none"))
    with phases.timing(clock) as timed:
        entry = classroom.judge_entry(tmp_path / "hw4", case, settings)
        note = classroom.warm_up_entry(tmp_path / "hw4", shape, "t01", settings, tmp_path / "cache")
        cost = timed.cost(program_runs_s=4.0)
    assert entry.verdict == PASS and note == ""
    assert cost.phases_s["runs"] == 18.0 and cost.phases_s[REST] == 0.0 and cost.wall_s == 18.0

