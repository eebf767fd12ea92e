"""The room's reading of how a run ended and of its output file."""

from __future__ import annotations

from attnbench.cases.testcase import Shape
from attnbench.sandbox import outcome
from attnbench.sandbox.process import ProcessLimits, ProcessOutcome

SHAPE = Shape(1, 17, 48)


def test_an_output_the_judge_cannot_read_is_that_cases_verdict(tmp_path, monkeypatch):
    out = tmp_path / "t.out"
    out.write_bytes(b"\0" * SHAPE.output_bytes)

    def unreadable(*_args):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(outcome, "read_output", unreadable)  # as a mode-000 OUT is to a judge that is not root
    verdict, message = outcome.read_output_file(out, SHAPE)
    assert verdict == outcome.NO_OUTPUT and "cannot be read (Permission denied)" in message


def test_links_and_wrong_sizes_are_not_read(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_bytes(b"\0" * SHAPE.output_bytes)
    (tmp_path / "sym.out").symlink_to(target)
    (tmp_path / "hard.out").hardlink_to(target)
    (tmp_path / "short.out").write_bytes(b"\0" * 8)
    assert outcome.read_output_file(tmp_path / "sym.out", SHAPE)[0] == outcome.NO_OUTPUT
    assert "hard link" in outcome.read_output_file(tmp_path / "hard.out", SHAPE)[1]
    assert outcome.read_output_file(tmp_path / "short.out", SHAPE)[0] == outcome.SIZE
    assert outcome.read_output_file(tmp_path / "none.out", SHAPE)[0] == outcome.NO_OUTPUT


def test_the_endings_come_in_order_and_a_sound_output_is_read(tmp_path):
    out = tmp_path / "t.out"
    out.write_bytes(b"\0" * SHAPE.output_bytes)
    limits = ProcessLimits(file_bytes=1 << 30, cpu_s=7)
    timed_out = outcome.ended(ProcessOutcome(None, 2.0, True, ""), out, SHAPE, limits, True, 2.0)
    assert timed_out.ending == outcome.TIMEOUT and "with every process it started" in timed_out.message
    cpu = outcome.ended(ProcessOutcome(128 + 24, 1.0, False, ""), out, SHAPE, limits, True, 2.0)  # SIGXCPU in bwrap
    assert cpu.ending == outcome.RESOURCE and "7 s of CPU time" in cpu.message
    crashed = outcome.ended(ProcessOutcome(3, 1.0, False, "boom\n"), out, SHAPE, limits, False, 2.0)
    assert crashed.ending == outcome.CRASH and crashed.message == "exited with status 3; its last words: boom"
    fine = outcome.ended(ProcessOutcome(0, 1.0, False, ""), out, SHAPE, limits, False, 2.0)
    assert fine.ending is None and fine.output is not None and fine.output.shape == (1, 17, 48)


def test_a_crash_with_a_limit_its_cgroup_enforced_is_a_resource_limit_named_by_it(tmp_path):
    from attnbench.sandbox.cgroups import LimitsHit

    limits = ProcessLimits(processes=4)
    crash = ProcessOutcome(1, 0.1, False, "sh: 1: Cannot fork\n")
    said = outcome.exceeded_line(LimitsHit(processes=True), limits.processes, None)
    assert said == "tried to run more than 4 processes and threads (--max-processes, its cgroup's): refused"
    ran = outcome.ended(crash, tmp_path / "t.out", SHAPE, limits, True, 2.0, said, ("memory", "processes"))
    assert ran.ending == outcome.RESOURCE and ran.message.startswith(said)
    assert "then it exited with status 1" in ran.message
    memory = outcome.exceeded_line(LimitsHit(memory=True), limits.processes, 64)
    assert memory == "used more than the 64 MiB memory limit (--memory-limit, its cgroup's): killed"
    assert outcome.exceeded_line(LimitsHit(), limits.processes, 64) == ""


def test_a_crash_under_a_limit_no_cgroup_watched_says_it_may_have_crossed_it(tmp_path):
    out = tmp_path / "t.out"
    refused = ProcessOutcome(2, 0.1, False, "sh: 1: Cannot fork\n")
    crashed = outcome.ended(refused, out, SHAPE, ProcessLimits(processes=1), True, 2.0)
    assert crashed.ending == outcome.CRASH
    assert crashed.message.endswith("(it may have exceeded --max-processes 1)"), crashed.message
    watched = outcome.ended(refused, out, SHAPE, ProcessLimits(processes=1), True, 2.0, "", ("processes",))
    assert "may have" not in watched.message  # its cgroup recorded no refusal: the limit was not crossed
    segfault = outcome.ended(ProcessOutcome(-11, 0.1, False, ""), out, SHAPE, ProcessLimits(processes=512), False, 2.0)
    assert "may have" not in segfault.message  # nothing speaks of a refused fork or thread
    memory = ProcessLimits(processes=512, memory_bytes=100 << 20)
    spoke = outcome.ended(ProcessOutcome(-6, 0.1, False, "terminate: std::system_error: Resource temporarily "
                                          "unavailable\n"), out, SHAPE, memory, False, 2.0)
    assert spoke.message.endswith("(it may have exceeded --memory-limit 100 MiB of address space or "
                                  "--max-processes 512)"), spoke.message
