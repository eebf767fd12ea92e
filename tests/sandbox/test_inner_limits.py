"""Limits set inside the box, on the program only (attnbench/sandbox/inner_limits.py): `--max-processes 1` and a
tiny `--memory-limit` bind the program, not bwrap, and a program stopped by its CPU time is a RESOURCE LIMIT."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from attnbench.cli import main
from attnbench.sandbox import inner_limits
from attnbench.sandbox import room as sandboxing
from attnbench.sandbox.process import ProcessLimits
from attnbench.sandbox.room import Sandbox, SandboxSettings

needs_box = pytest.mark.skipif(sandboxing.find_bwrap()[0] is None or inner_limits.prlimit_tool() is None,
                               reason="no bwrap or no prlimit here")


def _run(script: str, limits: ProcessLimits) -> tuple[int | None, str, str]:
    sandbox = Sandbox.open(None, SandboxSettings("required"))
    try:
        case = sandbox.prepare("c", None)
        outcome = sandbox.run(["/bin/sh", "-c", script], case, 30, limits)
        said = (outcome.stdout_tail, outcome.stderr_tail)  # the run's streams are pipes, their tails kept
        sandbox.finish(case)
    finally:
        sandbox.close()
    return outcome.returncode, *said


@needs_box
def test_one_process_is_the_programs_own_not_bwraps():
    code, out, err = _run("echo alone", ProcessLimits(processes=1))
    assert code == 0 and out == "alone\n", err
    code, out, err = _run("/bin/true && echo forked", ProcessLimits(processes=1))
    assert "forked" not in out and "bwrap" not in err  # the program may start no other
    code, out, err = _run("/bin/true && echo forked", ProcessLimits(processes=2))
    assert code == 0 and out == "forked\n", err


@needs_box
def test_a_tiny_memory_limit_stops_the_program_not_bwrap():
    code, out, err = _run("echo started", ProcessLimits(memory_bytes=1 << 20))
    assert code != 0 and not err.startswith("bwrap") and "/bin/sh" in err, err
    code, out, err = _run("echo started", ProcessLimits(memory_bytes=64 << 20))
    assert code == 0 and out == "started\n", err


def test_the_limits_go_inside_and_none_is_left_on_bwrap(monkeypatch):
    monkeypatch.setattr(inner_limits, "prlimit_tool", lambda: "/usr/bin/prlimit")
    monkeypatch.setattr(inner_limits, "counts_per_namespace", lambda: True)
    words, outer = inner_limits.split(ProcessLimits(file_bytes=5, processes=3, memory_bytes=7, cpu_s=2), 1234)
    assert words == ["/usr/bin/prlimit", "--fsize=5", "--as=7", "--cpu=2:3", "--nproc=4", "--"]
    assert outer == ProcessLimits()
    monkeypatch.setattr(inner_limits, "prlimit_tool", lambda: None)
    assert inner_limits.split(ProcessLimits(cpu_s=2), 1234) == ([], ProcessLimits(cpu_s=2))


@pytest.mark.parametrize("mode", [pytest.param("required", marks=needs_box), "none"])
def test_a_program_stopped_by_its_cpu_time_is_a_resource_limit_named_so(tmp_path, mode):
    program = tmp_path / "spin"
    program.write_text("#!/bin/sh\nwhile :; do :; done\n")
    program.chmod(0o700)
    result = CliRunner().invoke(main, ["judge", str(program), "--cases", "odd_17x1", "--cpu-time", "1", "--timeout",
                                       "20", "--time-limits", "none", "--sandbox", mode, "--no-save"])
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "RESOURCE LIMIT" in said and "CPU time" in said, result.output


def test_cpu_time_is_whole_seconds_not_rounded_silently():
    result = CliRunner().invoke(main, ["judge", "prog", "--cpu-time", "0.3"])
    assert result.exit_code == 2 and "--cpu-time" in result.output


def _judge_forking_program(tmp_path, *extra: str):
    program = tmp_path / "forker"
    program.write_text("#!/bin/sh\n/bin/true || exit 4\nexit 0\n")  # a fork, refused at --max-processes 1
    program.chmod(0o700)
    return CliRunner().invoke(main, ["judge", str(program), "--cases", "odd_17x1", "--max-processes", "1", "--timeout",
                                     "20", "--time-limits", "none", "--no-save", *extra])


@needs_box
def test_a_program_refused_a_fork_without_a_cgroup_is_a_crash_that_names_the_limit(tmp_path, monkeypatch):
    from attnbench.sandbox import cgroups

    monkeypatch.setattr(cgroups.RunGroups, "make", classmethod(lambda cls: (None, "no cgroup v2 (the test's)")))
    result = _judge_forking_program(tmp_path, "--sandbox", "required")
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "CRASH" in said and "(it may have exceeded --max-processes 1)" in said, said


def _cgroup_v2_pids() -> str:
    """Why the real cgroup test cannot run here ('' when it can)."""
    from attnbench.sandbox import cgroups

    groups, why = cgroups.RunGroups.make()
    if groups is None:
        return why
    groups.close()
    return "" if "pids" in groups.controllers else "the cgroup v2 here has no pids controller"


@needs_box
def test_a_program_refused_a_fork_by_its_cgroup_is_a_resource_limit_named_so(tmp_path):
    why = _cgroup_v2_pids()
    if why:
        pytest.skip(f"needs root and a cgroup v2 with the pids controller: {why}")
    result = _judge_forking_program(tmp_path, "--sandbox", "required")
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "RESOURCE LIMIT" in said and "--max-processes" in said, said
