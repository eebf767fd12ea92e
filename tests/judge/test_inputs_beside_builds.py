"""attnbench.judge.inputs_beside_builds: a class's first round of inputs made on a thread while it builds, where
the references are a GPU's or, with no GPU, the CPU's (`class_flow._first_inputs_beside_builds`, forced here either
way); a case being made is abandoned at its reference's next block once the thread is told to stop."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from attnbench.api import programs as api_programs
from attnbench.cases.inputs import inputs_for
from attnbench.judge import class_flow, fresh_inputs
from attnbench.judge.inputs_beside_builds import InputsBesideBuilds
from tests.judge.classes import CASES, class_sandbox, verdicts


def _fresh_files() -> list[str]:
    """The fresh inputs left in the judge's private folder (its owner's mark aside)."""
    return [p.name for p in fresh_inputs.private_folder().iterdir() if p.name != ".owner"]


def _labels(n: int) -> list:
    return inputs_for("odd_17x48,odd_17x1,sq63,sq64")[:n]


def test_the_cases_come_in_the_inputs_order_each_heard_and_the_thread_ends():
    steps = []
    early = InputsBesideBuilds(inputs_for("odd_17x48,odd_17x1"), lambda bench_input, drawn, progress: bench_input.label)
    assert early.cases(lambda: steps.append(1)) == ["odd_17x48", "odd_17x1"] and steps == [1, 1]
    assert not early._thread.is_alive()


def test_the_threads_failure_is_raised_to_the_caller_after_the_cases_before_it():
    made = []

    def ready(bench_input, drawn, progress):
        if made:
            raise OSError(28, "No space left on device")
        made.append(bench_input.label)
        return bench_input.label

    early = InputsBesideBuilds(_labels(3), ready)
    with pytest.raises(OSError, match="No space left"):
        early.cases()
    assert made == ["odd_17x48"] and not early._thread.is_alive()


def test_stopped_it_makes_no_case_after_the_one_it_is_making():
    going, release = threading.Event(), threading.Event()
    made = []

    def ready(bench_input, drawn, progress):
        going.set()
        release.wait(5)
        made.append(bench_input.label)
        return bench_input.label

    early = InputsBesideBuilds(_labels(4), ready)
    assert going.wait(5)
    stopping = threading.Thread(target=early.stop)
    stopping.start()
    time.sleep(0.05)
    release.set()
    stopping.join(5)
    assert made == ["odd_17x48"] and not early._thread.is_alive()


def test_stopped_it_abandons_the_case_it_is_making_at_its_references_next_block():
    """A Ctrl-C during the builds waited for the whole reference of the case being made: t29's takes minutes on
    a CPU. The reference's blocks report to the thread's progress, which abandons the case once it is stopped."""
    started, blocks = threading.Event(), []

    def ready(bench_input, drawn, progress):
        with progress(f"float64 reference of {bench_input.label}", 10_000) as advance:
            started.set()
            for block in range(10_000):
                time.sleep(0.01)
                blocks.append(block)
                advance(1)
        return bench_input.label

    early = InputsBesideBuilds(_labels(2), ready)
    assert started.wait(10)
    began = time.monotonic()
    early.stop()
    assert time.monotonic() - began < 5 and len(blocks) < 1000 and not early._thread.is_alive()
    assert early.cases() == []  # nothing made: the abandoned case is not one


def test_a_class_makes_its_first_inputs_while_it_builds_and_is_judged_as_without(classroom, monkeypatch):
    """The builds wait (up to 60 s, the machine may be busy) until the first input is made: made after them, it
    never would be."""
    if class_sandbox().mode != "required":
        pytest.skip("a class's runs need the sandbox here")
    seeds = iter(range(1, 10**6))
    monkeypatch.setattr(fresh_inputs, "secrets", type("S", (), {"randbits": staticmethod(lambda bits: next(seeds))}))
    monkeypatch.setattr(class_flow, "_first_inputs_beside_builds", lambda: False)
    without = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=0, sandbox=class_sandbox())
    made, real_ready, real_build_all = threading.Event(), class_flow._ready, class_flow.build_all

    def ready(*args, **kwargs):
        case = real_ready(*args, **kwargs)
        made.set()
        return case

    def build_all(*args, **kwargs):
        assert made.wait(60), "no input was made while the class built"
        return real_build_all(*args, **kwargs)

    seeds = iter(range(1, 10**6))
    left_before = _fresh_files()  # an earlier test's (this process's folder is shared)
    monkeypatch.setattr(class_flow, "_first_inputs_beside_builds", lambda: True)
    monkeypatch.setattr(class_flow, "_ready", ready)
    monkeypatch.setattr(class_flow, "build_all", build_all)
    beside = api_programs.judge_class([classroom], CASES, time_limits="none", rerun_top=0, sandbox=class_sandbox())
    assert verdicts(beside) == verdicts(without) and beside.settings["seeds"] == without.settings["seeds"]
    assert not beside.interrupted and "stopped_by" not in beside.settings, beside.settings.get("stopped_by")
    assert set(_fresh_files()) <= set(left_before)  # every fresh input of this class released


def _unbuildable_class(tmp_path) -> Path:
    """A class of one submission that does not build (ann.c is not C)."""
    from tests.judge.classes import can_build

    if not can_build():
        pytest.skip("no C compiler or make")
    classroom = tmp_path / "class"
    classroom.mkdir()
    (classroom / "ann.c").write_text("this is not C\n")
    return classroom


def _judged_beside_builds(classroom: Path, monkeypatch):
    monkeypatch.setattr(class_flow, "_first_inputs_beside_builds", lambda: True)
    return api_programs.judge_class([classroom], "odd_17x48,odd_17x1", time_limits="none", rerun_top=0,
                                    sandbox=class_sandbox())


def test_a_class_whose_every_build_failed_keeps_no_input_made_beside_its_builds(tmp_path, monkeypatch):
    classroom = _unbuildable_class(tmp_path)
    left_before = _fresh_files()
    board = _judged_beside_builds(classroom, monkeypatch)
    assert [row.built for row in board.rows] == [False] and board.settings.get("seeds", {}) == {}
    assert set(_fresh_files()) <= set(left_before)


def test_a_second_ctrl_c_while_the_case_being_made_ends_keeps_no_input_and_the_board(tmp_path, monkeypatch):
    """Ctrl-C waits for the case the thread is making (up to one reference: t29's 26 s on the CPU), and a second
    Ctrl-C meanwhile escaped the class's clean-up: its inputs were left behind and its board lost (red team)."""
    from attnbench.judge import inputs_beside_builds

    classroom = _unbuildable_class(tmp_path)
    left_before = _fresh_files()
    stop = inputs_beside_builds.InputsBesideBuilds.stop
    calls = []

    def impatient_stop(self):  # the second Ctrl-C, raised in the wait for the case being made
        calls.append(1)
        if len(calls) == 1:
            stop(self)  # the case being made ends, as it would have
            raise KeyboardInterrupt
        stop(self)

    monkeypatch.setattr(inputs_beside_builds.InputsBesideBuilds, "stop", impatient_stop)
    board = _judged_beside_builds(classroom, monkeypatch)
    assert board.interrupted and [row.name for row in board.rows] == ["ann"]
    assert set(_fresh_files()) <= set(left_before)


def test_an_abandoned_gpu_reference_is_no_failing_gpu(monkeypatch):
    """The GPU reference takes any Exception for a failing GPU and sends the process's later references to the CPU:
    a case abandoned at a Ctrl-C during the builds must pass through it as no such failure."""
    from attnbench.cases import gpu_reference

    started = threading.Event()

    def reference_on_a_gpu(testcase, progress=None, dtype=None):
        started.set()
        while True:  # a block at a time, as the GPU reference's chunks report
            time.sleep(0.01)
            progress(1)

    monkeypatch.setattr(gpu_reference, "why_not_gpu", lambda: "")
    monkeypatch.setattr(gpu_reference, "gpu_reference_output", reference_on_a_gpu)
    monkeypatch.setattr(gpu_reference, "_availability", [])
    testcase = inputs_for("odd_17x1")[0]

    def ready(bench_input, drawn, progress):
        with progress("float64 reference", 1) as advance:
            return gpu_reference.float64_reference(bench_input.load(), advance)

    early = InputsBesideBuilds([testcase], ready)
    assert started.wait(10)
    early.stop()
    assert early.cases() == [] and gpu_reference._availability == [] and not early._thread.is_alive()
