"""attnbench.judge.cases_ahead: a round's cases made by a thread of their own beside the flow (the first round's while
the builds run, at the lowest priority; a rerun round's two at a time), taken in order, and every case made and not
taken released when it stops (a fresh input is a secret)."""

from __future__ import annotations

import os
import threading
import time

from attnbench.judge import course_judge as judging
from attnbench.judge import cases_ahead
from attnbench.judge.fresh_inputs import draw
from attnbench.judge.cases_ahead import CasesAhead


def test_the_cases_are_made_by_a_thread_at_the_lowest_priority_until_the_flow_takes_them_and_makes_the_rest(
        monkeypatch):
    """While the builds run the thread makes the cases at nice 19 (the builds beside it are not slowed: 2 cores, 60%
    longer); once the flow takes them it makes those not begun itself while it waits for the thread's (two at a
    time), and the thread gets its priority back (root)."""
    made: dict[str, tuple[int, int]] = {}  # label -> (thread, its priority as it began)
    after: list[int] = []  # the thread's priority once it is let go
    go = threading.Event()
    real = cases_ahead.prepare_case

    def spied(bench_input, progress):
        me = threading.get_native_id()
        made[bench_input.label] = (threading.get_ident(), os.getpriority(os.PRIO_PROCESS, me))
        if bench_input.label == "odd_17x48":  # the thread's first case, held until the flow made the other two
            assert go.wait(30)
            after.append(os.getpriority(os.PRIO_PROCESS, me))
        if bench_input.label == "odd_33x64":
            go.set()
        return real(bench_input, progress)

    monkeypatch.setattr(cases_ahead, "prepare_case", spied)
    inputs = draw(judging.cases_for("odd_17x48,odd_100x32,odd_33x64"))
    mine = (threading.get_ident(), os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    early = CasesAhead(inputs, beside_builds=True)
    try:
        while "odd_17x48" not in made:
            time.sleep(0.01)
        cases = [early.take(bench_input) for bench_input in inputs]
    finally:
        early.stop()
    assert [case.label for case in cases] == ["odd_17x48", "odd_100x32", "odd_33x64"]
    assert all(case.input_path.is_file() for case in cases)  # taken: the taker releases them
    thread = made["odd_17x48"][0]
    assert thread != mine[0] and made["odd_17x48"] == (thread, 19)
    assert made["odd_100x32"] == made["odd_33x64"] == mine  # made by the flow while the thread made the first
    assert after == [mine[1] if os.geteuid() == 0 else 19]  # its priority back, as root
    assert early.take(draw(inputs)[0]) is None  # not one of its inputs: the caller makes it


def test_a_case_it_could_not_make_is_none_for_the_caller_to_make_and_meet_why(monkeypatch):
    def failing(bench_input, progress):
        raise OSError("no space left on the judge's disk")

    monkeypatch.setattr(cases_ahead, "prepare_case", failing)
    inputs = draw(judging.cases_for("odd_17x48"))
    early = CasesAhead(inputs, beside_builds=True)
    try:
        assert early.take(inputs[0]) is None
    finally:
        early.stop()


def test_stopped_it_ends_within_a_step_and_releases_every_fresh_input_no_one_took(monkeypatch):
    real = cases_ahead.prepare_case
    made, started = [], []

    def slow_after_the_first(bench_input, progress):
        started.append(bench_input)
        if len(started) > 1:  # a long reference (made before the file is written), asking at every step to go on
            with progress("float64 reference", 1000) as advance:
                for _ in range(1000):
                    time.sleep(0.01)
                    advance(1)
        made.append(real(bench_input, progress))
        return made[-1]

    monkeypatch.setattr(cases_ahead, "prepare_case", slow_after_the_first)
    inputs = draw(judging.cases_for("odd_17x48,odd_100x32,odd_17x48"))
    early = CasesAhead(inputs, beside_builds=True)
    while len(started) < 2:
        time.sleep(0.01)
    assert len(made) == 1 and made[0].input_path.is_file()
    start = time.perf_counter()
    early.stop()  # no round took any (a class of programs that cannot run here, say)
    assert time.perf_counter() - start < 5  # not the 10 s the second case would have taken
    assert len(made) == 1 and not made[0].input_path.exists() and len(started) == 2


def test_a_rerun_rounds_cases_are_made_two_at_a_time_at_the_flows_own_priority(monkeypatch):
    """No builds to make way for: the thread keeps the flow's priority, and the flow makes the cases the thread has not
    begun while it waits, so the round's cases are made by both (a file's write and a hash are one thread's each)."""
    made: dict[str, tuple[int, int]] = {}
    go = threading.Event()
    real = cases_ahead.prepare_case

    def spied(bench_input, progress):
        if threading.get_ident() != threading.main_thread().ident:
            assert go.wait(30)  # the thread's first case, held until the flow has made one itself
        made[bench_input.label] = (threading.get_ident(), os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return real(bench_input, progress)

    monkeypatch.setattr(cases_ahead, "prepare_case", spied)
    inputs = draw(judging.cases_for("odd_17x48,odd_100x32"))
    mine = (threading.get_ident(), os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    ahead = CasesAhead(inputs)
    try:
        while not ahead._begun:
            time.sleep(0.01)
        second = ahead.take(inputs[1])  # the thread holds the first: the flow makes the second meanwhile
        go.set()
        first = ahead.take(inputs[0])
    finally:
        ahead.stop()
    assert (first.label, second.label) == ("odd_17x48", "odd_100x32")
    assert made["odd_100x32"] == mine and made["odd_17x48"][0] != mine[0] and made["odd_17x48"][1] == mine[1]
