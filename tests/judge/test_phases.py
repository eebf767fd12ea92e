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
from attnbench.sandbox.program_run import WarmUp
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
    assert len(runs) == 2 * 2 * 3  # first runs and 2 reruns, all passed
    warm_ups = [row.warm_ups_s for row in board.rows]
    assert all(w > 0 for w in warm_ups) and cost.program_runs_s == pytest.approx(sum(runs) + sum(warm_ups))
    assert cost.phases_s["runs"] >= cost.program_runs_s  # the runs phase holds the programs' runs and more
    assert cost.ratio == pytest.approx(cost.wall_s / cost.program_runs_s) and cost.ratio > 1
    again = Scoreboard.from_dict(board.to_dict())
    assert again.cost == cost and board.to_dict()["phases"]["ratio"] == cost.ratio
    line = cost_line(board.cost)
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

    def judged(program, case, limit, timeout, sandbox, beside_check=None):
        clock.now += 4.0
        return JudgedCase(case.label, case.shape, PASS, "", 4.0, limit, timeout, program_s=4.0)

    monkeypatch.setattr(classroom, "Sandbox", Room)
    monkeypatch.setattr(classroom, "judge_case", judged)
    def warmed(program, shape, sandbox, timeout):
        clock.now += 8.0
        return WarmUp(wall_s=7.5)

    monkeypatch.setattr(classroom, "warm_up", warmed)
    shape = Shape(1, 4, 8)
    case = PreparedCase("t01", shape, tmp_path / "t01.in", None, None)  # type: ignore[arg-type]
    settings = classroom.ClassSettings(load_time_limits("none"))
    with phases.timing(clock) as timed:
        entry, ahead = classroom.judge_entry(tmp_path / "hw4", case, settings)
        assert ahead is None  # none asked for
        note = classroom.warm_up_entry(tmp_path / "hw4", shape, "t01", settings, tmp_path / "cache")
        cost = timed.cost(program_runs_s=4.0)
    assert entry.verdict == PASS and note == classroom.WarmedUp("", 7.5) and entry.program_s == 4.0
    assert cost.phases_s["runs"] == 18.0 and cost.phases_s[REST] == 0.0 and cost.wall_s == 18.0



SLOW_AND_WRONG = """#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {  /* reads its input, sleeps 1 s, writes zeros of the right size: WRONG */
    FILE *in = fopen(argv[1], "rb");
    int32_t dims[3];
    if (!in || fread(dims, 4, 3, in) != 3) return 1;
    fclose(in);
    size_t count = (size_t)dims[0] * dims[1] * dims[2];
    float *zeros = calloc(count, 4);
    sleep(1);
    FILE *out = fopen(argv[2], "wb");
    fwrite(zeros, 4, count, out);
    fclose(out);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None, reason="no C compiler or make")
def test_a_slow_wrong_rows_runs_are_the_programs_time_not_the_judges(tmp_path):
    """Red team (issue 49): only passed runs counted as the programs' runs, so a slow failing program's own time
    was booked as the judge's cost (118x printed for a class whose judge cost little beside its programs). Every
    run the judge made of a program, passed or not, warm-ups too, is the programs' time."""
    (tmp_path / "honest.c").write_text(EXAMPLE.read_text())
    (tmp_path / "slowwrong.c").write_text(SLOW_AND_WRONG)
    board = api_programs.judge_class([str(tmp_path / "honest.c"), str(tmp_path / "slowwrong.c")], "odd_17x48",
                                     time_limits="none", rerun_top=1, sandbox=class_sandbox())
    rows = {row.name: row for row in board.rows}
    slow = rows["slowwrong"]
    assert slow.entries["odd_17x48"].verdict == "WRONG" and slow.entries["odd_17x48"].runs_s == []
    assert slow.entries["odd_17x48"].program_s >= 1.0 and slow.warm_ups_s >= 1.0  # its sleeps: its own time
    cost = board.cost
    assert cost is not None and cost.program_runs_s == pytest.approx(sum(row.program_s for row in board.rows))
    assert cost.program_runs_s >= 2.0 and cost.ratio < cost.wall_s / 2.0
    assert sum(cost.phases_s.values()) == pytest.approx(cost.wall_s, abs=1e-9)
    assert cost.phases_s["runs"] >= cost.program_runs_s
    again = Scoreboard.from_dict(board.to_dict())  # the new fields saved and read back
    assert {row.name: row.program_s for row in again.rows} == {row.name: row.program_s for row in board.rows}
    assert "first runs, reruns and warm-ups, passed or not" in cost_line(board.cost)


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None, reason="no C compiler or make")
def test_one_program_saves_its_phases_and_counts_its_warm_up_and_failed_runs_as_its_own(tmp_path):
    """A judge of one program (a .c built first) is timed as a class is: its build, inputs, runs and checks add
    up to its wall time; its runs (the warm-up and every case's, a wrong one's too) are the program's time."""
    source = tmp_path / "slowwrong.c"
    source.write_text(SLOW_AND_WRONG)
    start = time.perf_counter()
    judgement, result = api_programs.judge(str(source), "odd_17x48,odd_100x32", time_limits="none",
                                           sandbox=class_sandbox())
    elapsed = time.perf_counter() - start
    cost = judgement.cost
    assert [j.verdict for j in judgement.judged] == ["WRONG", "WRONG"]
    assert judgement.warm_up_s >= 1.0 and all(j.program_s >= 1.0 for j in judgement.judged)  # its sleeps
    assert cost is not None and cost.program_runs_s == pytest.approx(judgement.program_runs_s)
    assert cost.program_runs_s >= 3.0
    assert cost.phases_s["builds"] > 0 and cost.phases_s["runs"] >= cost.program_runs_s
    assert sum(cost.phases_s.values()) == pytest.approx(cost.wall_s, abs=1e-9) and cost.wall_s <= elapsed
    assert result.settings.judge_cost == cost.to_dict() and cost.ratio == pytest.approx(cost.wall_s / cost.program_runs_s)
    assert cost_line(cost).startswith(f"judging took {cost.ratio:.2f}x the programs' runs")


def test_only_the_clocks_own_thread_counts_and_another_threads_phases_disturb_nothing():
    """Work of another thread of this process (CUDA's start beside the first input's drawing, say) is the clock's
    thread's time, in the phase it spends it in: that thread's phases count for nothing, so nothing is counted twice
    and the phases still add up (its phase() calls once pushed onto the clock's nesting stack from two threads)."""
    import threading

    clock = FakeClock(0.0)
    inside = threading.Event()
    leave = threading.Event()

    def beside() -> None:
        with phases.phase("inputs and references"):
            inside.set()
            leave.wait()
            clock.now += 100.0  # counted nowhere as inputs: it happened while the clock's thread was in builds

    with phases.timing(clock) as timed:
        with phases.phase("builds"):
            thread = threading.Thread(target=beside)
            thread.start()
            inside.wait()
            clock.now += 1.0
            with phases.phase("checks"):  # the clock's own thread, while the other is inside a phase
                clock.now += 2.0
            leave.set()
            thread.join()
        cost = timed.cost(program_runs_s=1.0)
    assert cost.phases_s["inputs and references"] == 0.0 and cost.phases_s["checks"] == 2.0
    assert cost.phases_s["builds"] == 101.0 and sum(cost.phases_s.values()) == cost.wall_s == 103.0

