"""Running one program process: limits set before it starts, every descendant killed after it ends."""

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnbench.cases.testcase import Shape
from attnbench.sandbox.process import ProcessLimits, ProgramError, run_process


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_limits_are_set_in_the_child_before_it_starts(tmp_path):
    limits = ProcessLimits(file_bytes=1 << 20, processes=100, memory_bytes=8 << 30, cpu_s=7)
    code = ("import resource as r, sys\n"
            "for name in ('RLIMIT_FSIZE', 'RLIMIT_AS', 'RLIMIT_CPU', 'RLIMIT_NPROC'):\n"
            "    print(name, r.getrlimit(getattr(r, name))[0], file=sys.stderr)\n")
    outcome = run_process(_python(code), tmp_path, 30, limits=limits)
    assert outcome.returncode == 0, outcome.stderr_tail
    seen = dict(line.split() for line in outcome.stderr_tail.splitlines())
    assert seen["RLIMIT_FSIZE"] == str(1 << 20) and seen["RLIMIT_AS"] == str(8 << 30) and seen["RLIMIT_CPU"] == "7"
    assert 100 <= int(seen["RLIMIT_NPROC"]) <= 100 + 10_000  # the allowance on top of what the user has
    assert resource.getrlimit(resource.RLIMIT_CPU)[0] != 7  # the judge's own limits are untouched


@pytest.fixture
def judge_dumps_core():
    """The judge's own RLIMIT_CORE raised to its hard limit (a TA's `ulimit -c unlimited`), restored after."""
    before = resource.getrlimit(resource.RLIMIT_CORE)
    if before[1] == 0:
        pytest.skip("this process may not dump core at all")
    resource.setrlimit(resource.RLIMIT_CORE, (before[1], before[1]))
    yield
    resource.setrlimit(resource.RLIMIT_CORE, before)


@pytest.mark.parametrize("limits", [None, ProcessLimits(file_bytes=1 << 20)])
def test_a_program_may_dump_no_core_whatever_the_judges_own_limit(tmp_path, judge_dumps_core, limits):
    """A crash's core went where core_pattern says, with the judge's limit: with a pipe (systemd-coredump, apport),
    stored and compressed on the host outside the run's folder, cgroup and cores, beside other runs (red team)."""
    code = "import resource as r, sys\nprint(*r.getrlimit(r.RLIMIT_CORE), file=sys.stderr)\n"
    outcome = run_process(_python(code), tmp_path, 30, limits=limits)
    assert outcome.returncode == 0 and outcome.stderr_tail.split() == ["0", "0"], outcome.stderr_tail
    assert resource.getrlimit(resource.RLIMIT_CORE)[0] != 0  # the judge's own untouched


def test_a_write_past_the_size_limit_is_stopped_by_sigxfsz(tmp_path):
    # not Python: it ignores SIGXFSZ and sees EFBIG instead
    command = ["/bin/sh", "-c", "exec head -c 4194304 /dev/zero > big"]
    outcome = run_process(command, tmp_path, 30, limits=ProcessLimits(file_bytes=1 << 20))
    assert outcome.returncode == -25  # SIGXFSZ
    assert (tmp_path / "big").stat().st_size <= 1 << 20


def test_an_orphan_left_running_is_killed_and_the_outcome_says_all_ended(tmp_path):
    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        time.sleep(60)\n"
            "    os._exit(0)\n")
    outcome = run_process(_python(code), tmp_path, 30)
    assert outcome.returncode == 0 and outcome.all_ended and outcome.left_running == ()


def test_the_timeout_kills_and_is_reported(tmp_path):
    outcome = run_process(_python("import time; time.sleep(60)"), tmp_path, 0.5)
    assert outcome.timed_out and outcome.returncode is None and outcome.all_ended


def test_stdout_and_stderr_are_pipes_whose_tails_are_kept_and_nothing_lands_on_a_disk(tmp_path):
    # Files on the judge's disk let a program reserve that disk whole with fallocate, and showed it the
    # judge's folders through /proc/self/fd.
    code = ("import os, sys; print('x' * 5000); print(os.readlink('/proc/self/fd/1'), os.readlink('/proc/self/fd/2'));"
            "print('hello', file=sys.stderr)")
    outcome = run_process(_python(code), tmp_path, 30, env={"PATH": os.environ.get("PATH", "")})
    assert outcome.returncode == 0 and "hello" in outcome.stderr_tail
    shown = outcome.stdout_tail.split()
    assert shown[-2].startswith("pipe:") and shown[-1].startswith("pipe:") and len(outcome.stdout_tail) <= 2000
    assert list(tmp_path.iterdir()) == []


def test_a_stream_past_the_file_size_limit_stops_the_program(tmp_path):
    from attnbench.sandbox.outcome import RESOURCE, ended

    code = "import sys\nwhile True: sys.stdout.write('y' * 65536)"
    limits = ProcessLimits(file_bytes=1 << 20)
    outcome = run_process(_python(code), tmp_path, 30, limits=limits, env={"PATH": os.environ.get("PATH", "")})
    assert outcome.stream_overflow and not outcome.timed_out and outcome.wall_s < 10 and outcome.all_ended
    judged = ended(outcome, tmp_path / "out", Shape(1, 1, 1), limits, False, 30)
    assert judged.ending == RESOURCE and "stdout or stderr" in judged.message


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run a program as another user")
def test_as_root_a_program_can_run_as_nobody(tmp_path):
    os.chmod(tmp_path, 0o777)
    outcome = run_process(["/bin/sh", "-c", "id -u >&2; id -G >&2"], tmp_path, 30, user=65534)
    assert outcome.stderr_tail.split() == ["65534", "65534"]


def test_a_program_that_cannot_start_is_one_line(tmp_path):
    with pytest.raises(ProgramError, match="cannot be started"):
        run_process([str(Path(tmp_path) / "missing")], tmp_path, 5)


def test_the_wall_clock_starts_at_the_exec_not_before_the_childs_own_steps(tmp_path):
    """The judge's fork and the child's steps before exec (joining the run's cgroup took 19 ms on an H200's host)
    were counted as the program's time: a step of the judge's that takes a second is not in the wall time, the
    program's own sleep is."""
    import shutil
    import time

    sleep = shutil.which("sleep")
    assert sleep is not None
    outcome = run_process([sleep, "0.2"], tmp_path, 30, before_exec=lambda: time.sleep(1.0))
    assert outcome.returncode == 0 and 0.2 <= outcome.wall_s < 1.0


def test_a_wall_clock_the_child_never_stamped_starts_before_the_fork():
    from attnbench.sandbox.process import LaunchClock

    clock = LaunchClock()
    try:
        assert clock.wall_s() >= 0  # no stamp: from the clock's making
        clock.stamp()
        assert 0 <= clock.wall_s() < 60
    finally:
        clock.close()


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "waiting thread"])
def test_the_wall_clock_is_read_when_the_program_exits_not_at_the_next_poll(tmp_path, monkeypatch, pidfd):
    """Popen.wait's polling (sleeps growing to 50 ms) once put programs 30 ms apart on the same 50 ms step. The
    exit is waited for as it happens: a pidfd in the poll set, woken at the exit, or without one a thread told by
    waitid and polls of at most 5 ms; Popen's own wait and poll are never used, and the program is left unreaped
    for its caller. Checked by what is called, not by a clock: timed thresholds flake on a loaded machine."""
    import select
    import shutil
    import subprocess

    from attnbench.sandbox import process as process_module

    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open")
    sleep = shutil.which("sleep")
    assert sleep is not None
    child = subprocess.Popen([sleep, "0.2"])
    asked: list[int] = []
    registered: list[int] = []
    real_poll = select.poll

    class WatchedPoll:
        def __init__(self) -> None:
            self.inner = real_poll()

        def register(self, fd, events):
            registered.append(fd)
            self.inner.register(fd, events)

        def unregister(self, fd):
            self.inner.unregister(fd)

        def poll(self, timeout_ms):
            asked.append(timeout_ms)
            return self.inner.poll(timeout_ms)

    monkeypatch.setattr(process_module.select, "poll", WatchedPoll)
    monkeypatch.setattr(subprocess.Popen, "wait", lambda *a, **k: pytest.fail("Popen.wait polls in 50 ms steps"))
    monkeypatch.setattr(subprocess.Popen, "poll", lambda *a, **k: pytest.fail("Popen.poll is no wake-up"))
    streams = process_module._Streams(None)
    streams.parent_started()
    try:
        assert process_module._wait_for_exit(child, 10, streams)
        exited = os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        assert exited is not None and exited.si_pid == child.pid  # it had exited, and is left to reap
        if pidfd:
            assert len(registered) == 3 and min(asked) > 5000  # the pidfd beside the pipes, waited on with no slices
        else:
            assert asked and max(asked) <= 5  # no step longer than 5 ms between the exit and its reading
    finally:
        monkeypatch.undo()
        child.wait()
        streams.drain_left()


def test_a_hip_source_given_as_a_program_is_said_to_be_what_attnbench_does_not_judge(tmp_path):
    """`judge hw4.hip` was told "build it first (`attnbench judge hw4.hip` builds a .c or .cu itself)": a circle."""
    from attnbench.sandbox.process import check_program

    source = tmp_path / "hw4.hip"
    source.write_text("int main(void) { return 0; }\n")
    with pytest.raises(ProgramError, match="a HIP source, the course's AMD part: attnbench judges CUDA and C "
                                           "programs, not HIP") as caught:
        check_program(str(source))
    assert caught.value.exit_code == 2 and "build it first" not in str(caught.value)


def test_a_source_file_given_as_a_program_is_told_to_be_built_not_chmodded(tmp_path):
    """`compare --variants exe:./hw4.c` advised `chmod +x ./hw4.c`."""
    from attnbench.sandbox.process import check_program

    source = tmp_path / "hw4.c"
    source.write_text("int main(void) { return 0; }\n")
    with pytest.raises(ProgramError, match="a source file, not a program: build it first") as caught:
        check_program(str(source))
    assert "chmod" not in str(caught.value)
    plain = tmp_path / "data.bin"
    plain.write_bytes(b"")
    with pytest.raises(ProgramError, match="is not executable .chmod"):
        check_program(str(plain))


def test_a_makefile_or_an_archive_given_as_a_program_is_not_told_to_be_chmodded(tmp_path):
    """`judge alice/Makefile` and `judge alice.tar.gz` advised `chmod +x` of them."""
    from attnbench.sandbox.process import check_program

    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "Makefile").write_text("hw4:\n")
    (tmp_path / "bob.tar.gz").write_bytes(b"\x1f\x8b")
    with pytest.raises(ProgramError, match="a Makefile, not a program: judge its folder") as caught:
        check_program(str(tmp_path / "alice" / "Makefile"))
    assert "chmod" not in str(caught.value) and str(tmp_path / "alice") in str(caught.value)
    with pytest.raises(ProgramError, match="an archive, not a program: unpack it") as caught:
        check_program(str(tmp_path / "bob.tar.gz"))
    assert "chmod" not in str(caught.value)


def test_a_run_ends_with_the_last_process_it_left_running_not_with_its_main_one(tmp_path, monkeypatch):
    """Red team 14: a helper did the work and wrote OUT, the main process exited at once, and the helper's own exit
    (a CUDA context's teardown, its memory freed: 10 to 35 ms for 512 MiB here) and whatever it did until killed
    counted nowhere, in bwrap (its outer process exits with the program's main one) as in the fallback. The wall
    clock now ends when the last process of the run is gone: after everything the helper did."""
    import time

    from attnbench.sandbox import process as process_module

    stamps: list[int] = []

    class WatchedClock(process_module.LaunchClock):
        def close(self) -> None:
            stamps.append(int.from_bytes(self._page[:8], "little"))
            super().close()

    monkeypatch.setattr(process_module, "LaunchClock", WatchedClock)
    real_sweep = process_module.sweep

    def slow_sweep(*args, **kwargs):  # the judge's kill as slow as on a loaded host: the helper runs meanwhile
        time.sleep(0.3)
        return real_sweep(*args, **kwargs)

    monkeypatch.setattr(process_module, "sweep", slow_sweep)
    seen = tmp_path / "seen"
    seen.write_bytes(bytes(8))
    code = ("import mmap, os, sys, time\n"
            "seen = mmap.mmap(os.open(sys.argv[1], os.O_RDWR), 8)\n"
            "if os.fork() == 0:\n"
            "    os.setsid()  # out of the main process's group, which the judge kills first\n"
            "    while True:  # before and after the main process's exit, till killed\n"
            "        seen[:8] = time.clock_gettime_ns(time.CLOCK_MONOTONIC).to_bytes(8, 'little')\n"
            "time.sleep(0.2)\n"
            "os._exit(0)\n")
    outcome = run_process([*_python(code), str(seen)], tmp_path, 30)
    last_seen = int.from_bytes(seen.read_bytes(), "little")
    assert outcome.returncode == 0 and outcome.all_ended and last_seen > 0
    assert stamps[0] + outcome.wall_s * 1e9 >= last_seen


def test_a_run_that_leaves_nothing_running_ends_with_its_main_process(tmp_path, monkeypatch):
    """Nothing to wait for: the wall clock is read at the main process's exit, as before (no scan's time in it)."""
    from attnbench.sandbox import process as process_module

    asked: list[object] = []
    real = process_module.last_exit_of_the_rest
    monkeypatch.setattr(process_module, "last_exit_of_the_rest", lambda *a: asked.append(real(*a)) or asked[-1])
    outcome = run_process(_python("pass"), tmp_path, 30)
    assert outcome.returncode == 0 and asked == [None]


def test_a_program_no_sigkill_ends_is_waited_for_a_bounded_time_not_for_ever(monkeypatch):
    """A process stuck in the kernel (a FUSE request its own server never answers) outlives SIGKILL: the wait for
    it held the judge for ever (red team 26). Here the SIGKILL is withheld to stand in for one that does not land."""
    from attnbench.sandbox import process as process_module

    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        monkeypatch.setattr(process_module.os, "killpg", lambda pid, sig: None)
        started = time.monotonic()
        assert process_module._kill_group(child, timeout_s=0.3) is False
        assert time.monotonic() - started < 5
    finally:
        monkeypatch.undo()
        child.kill()
        child.wait()
    ended = subprocess.Popen(["true"], start_new_session=True)
    assert process_module._kill_group(ended) is True
