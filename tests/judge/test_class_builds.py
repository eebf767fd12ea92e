"""attnbench.judge.class_builds: a class's builds run at once, so they cost about the longest build, not their
sum; each still the sandboxed build it always was, and the rows come in the submissions' order, as built one
after another."""

from __future__ import annotations

import os
import re
import time

import pytest

from attnbench.api import programs as api_programs
from attnbench.judge.class_builds import build_all, build_workers
from attnbench.judge.class_work import affinity
from attnbench.judge.classroom import ClassSettings
from attnbench.judge.course_build import BuildRules
from attnbench.judge.submissions import find_submissions
from attnbench.judge.time_limits import TimeLimits
from tests.judge.classes import EXAMPLE, can_build, class_sandbox, make_class, verdicts

SLEEP_S = 3.0  # each sleepy build's own time: four of them one after another take 12 s at least
SLEEPY = 4
AT_ONCE_S = 0.75 * SLEEPY * SLEEP_S  # two waves of two on two cores: 6 s and the workers' start (7.5 s seen)


def _sleepy_class(folder, count: int = SLEEPY):
    """`count` course-layout submissions whose Makefile sleeps SLEEP_S before it builds the example."""
    for i in range(count):
        student = folder / f"sleepy{i}"
        student.mkdir(parents=True)
        (student / "attention.c").write_text(EXAMPLE.read_text())
        (student / "Makefile").write_text(f"hw4: attention.c\n\tsleep {SLEEP_S:g}\n\tcc -O2 -o hw4 attention.c -lm\n")
    return folder


def _settings() -> ClassSettings:
    return ClassSettings(TimeLimits("none"), sandbox=class_sandbox(), build=BuildRules())


def _untimed(message: str) -> str:
    return re.sub(r"\(\d+\.\d s\)", "(N s)", message)  # a build's message says how long it took


def test_as_many_builds_at_once_as_the_cores_allow_and_never_none():
    assert build_workers([0, 1], 4) == 2
    assert build_workers(range(16), 8) == 8
    assert build_workers([3], 5) == 1
    assert build_workers([], 3) == 1
    assert build_workers([0, 1], 0) == 1


@pytest.mark.skipif(not can_build() or len(affinity()) < 2, reason="no C compiler or make, or one core only")
def test_four_sleepy_builds_on_two_cores_take_about_two_builds_not_four(tmp_path):
    found = find_submissions([_sleepy_class(tmp_path / "class")])
    start = time.perf_counter()
    built = build_all(found, tmp_path / "builds", _settings(), sorted(affinity())[:2])
    took = time.perf_counter() - start
    assert [b.submission.name for b in built] == [f"sleepy{i}" for i in range(SLEEPY)] and all(b.ok for b in built)
    assert all(b.program is not None and b.program.is_file() for b in built)
    assert took < AT_ONCE_S, f"{SLEEPY} builds of {SLEEP_S} s took {took:.1f} s"


@pytest.mark.skipif(not can_build() or len(affinity()) < 2, reason="no C compiler or make, or one core only")
def test_builds_at_once_give_the_rows_and_messages_builds_one_after_another_give(tmp_path):
    (tmp_path / "class").mkdir()
    classroom = make_class(tmp_path / "class")  # built, built, built, built, and one that does not build
    (classroom / "frank").mkdir()
    (classroom / "frank" / "Makefile").write_text("hw4:\n\techo nothing made\n")  # runs, makes no hw4
    found = find_submissions([classroom])
    at_once = build_all(found, tmp_path / "at-once", _settings(), sorted(affinity()))
    in_turn = build_all(found, tmp_path / "in-turn", _settings(), sorted(affinity())[:1])
    assert [b.submission.name for b in at_once] == [s.name for s in found] == [b.submission.name for b in in_turn]
    assert [(b.ok, _untimed(b.message)) for b in at_once] == [(b.ok, _untimed(b.message)) for b in in_turn]
    assert [b.ok for b in at_once] == [True, True, True, True, False, False]
    assert all(b.program.read_bytes() == c.program.read_bytes() for b, c in zip(at_once, in_turn) if b.ok)


@pytest.mark.skipif(not can_build() or len(affinity()) < 2, reason="no C compiler or make, or one core only")
@pytest.mark.parametrize("where", [{}, {"gpus": "all"}], ids=["in-process", "pool"])
def test_a_class_of_sleepy_builds_spends_about_the_longest_build_in_its_builds_phase(tmp_path, monkeypatch, where):
    if where:
        monkeypatch.setenv("ATTNBENCH_CPU_WORKERS", "1")
    board = api_programs.judge_class([_sleepy_class(tmp_path / "class")], "odd_17x48", time_limits="none",
                                     rerun_top=0, sandbox=class_sandbox(), **where)
    assert [row.name for row in sorted(board.rows, key=lambda r: r.name)] == [f"sleepy{i}" for i in range(SLEEPY)]
    assert all(v == {"odd_17x48": "PASS"} for v in verdicts(board).values())
    builds = board.cost.phases_s["builds"]
    assert SLEEP_S < builds < AT_ONCE_S, board.cost.phases_s


@pytest.mark.skipif(not can_build() or len(affinity()) < 2, reason="no C compiler or make, or one core only")
def test_builds_at_once_leave_no_zombie_to_a_judge_that_reaps_orphans(tmp_path):
    """The judge is a subreaper (attnbench.sandbox.reaper): what a build worker left unreaped when it ended comes
    to it, and is collected before the class goes on."""
    from attnbench.sandbox.reaper import become_subreaper, descendants

    become_subreaper()
    zombies_before = {pid for pid, state in descendants(os.getpid()).items() if state == "Z"}
    (tmp_path / "class").mkdir()
    found = find_submissions([make_class(tmp_path / "class")])
    assert all(b.submission for b in build_all(found, tmp_path / "builds", _settings(), sorted(affinity())))
    assert not {pid for pid, state in descendants(os.getpid()).items() if state == "Z"} - zombies_before
