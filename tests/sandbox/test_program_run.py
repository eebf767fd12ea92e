"""sandbox/program_run.py: the one call that runs a program on a case, and an exe: cell's warm JIT cache."""

import stat
from pathlib import Path

import pytest

from attnbench.cases.inputs import seeded_testcase
from attnbench.cases.testcase import Shape, read_testcase, write_testcase
from attnbench.sandbox.program_run import ProgramSpec, WarmCaches, run_program
from attnbench.sandbox.case_folder import WrittenInput
from attnbench.sandbox.outcome import NO_OUTPUT
from attnbench.sandbox.room import Sandbox, SandboxSettings

# Lists its CUDA cache on stderr, then writes a file of its own there (CUDA writes its cache the same way).
LISTER = ('#!/bin/sh\necho "saw: $(ls "$CUDA_CACHE_PATH" | tr "\\n" " ")" >&2\n'
          'touch "$CUDA_CACHE_PATH/run-$$" 2>/dev/null\nexit 3\n')


def test_an_exe_programs_cache_is_written_by_one_warm_up_and_copied_into_each_run(tmp_path):
    program = tmp_path / "lister"
    program.write_text(LISTER)
    program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    case = tmp_path / "case.in"
    write_testcase(case, seeded_testcase(Shape(1, 4, 8), 1))
    spec = ProgramSpec("c1", case, Shape(1, 4, 8), 20.0)
    settings = SandboxSettings("none")
    caches = WarmCaches()
    seen = []
    for _ in range(3):
        cache = caches.cache_for(program, spec, settings)
        room = Sandbox.open(program, settings, cuda_cache=cache)
        try:
            outcome = run_program(room, spec)
        finally:
            room.close()
        seen.append(outcome.process.stderr_tail.split("saw:")[1].split())
    assert len(caches.caches) == 1  # one warm-up for the program, not one a run
    warmed = seen[0]
    assert len(warmed) == 1 and warmed[0].startswith("run-")  # what the warm-up wrote
    assert seen[1] == seen[2] == warmed  # no timed run sees another timed run's writes
    assert sorted(p.name for p in Path(cache).iterdir()) == warmed


def _throwaway(folder: Path, name: str, shape: Shape):
    """A warm-up's input as the room writes it into its case folder, read back."""
    from attnbench.sandbox.program_run import write_throwaway_into

    path = folder / name
    with open(path, "w+b") as f:
        write_throwaway_into(f, shape)
    return read_testcase(path)


def test_a_warm_ups_throwaway_input_is_in_the_suites_range_and_never_the_same_twice(tmp_path):
    shape = Shape(3, 17, 8)
    first, second = _throwaway(tmp_path, "a.in", shape), _throwaway(tmp_path, "b.in", shape)
    assert first.shape == shape and first.qkv.dtype.str == "<f4"
    for testcase in (first, second):
        assert testcase.qkv.min() >= -3.0 and testcase.qkv.max() < 3.0
        assert testcase.qkv.std() > 1.0  # spread over the range (uniform on [-3, 3): 1.73), not a constant
    assert not (first.qkv == second.qkv).all()  # a secret seed each time: no answer a program could keep


def test_a_large_warm_up_input_repeats_one_drawn_block_and_still_fills_the_range(monkeypatch, tmp_path):
    from attnbench.cases import bulk_io
    from attnbench.sandbox import program_run

    monkeypatch.setattr(program_run, "THROWAWAY_BLOCK", 1000)
    testcase = _throwaway(tmp_path, "small.in", Shape(2, 100, 16))  # 9600 values from a block of 1000
    values = testcase.qkv.reshape(-1)
    assert values.size == 9600 and (values[1000:2000] == values[:1000]).all() and (values[9000:] == values[:600]).all()
    assert values.min() >= -3.0 and values.max() < 3.0 and values.std() > 1.0
    monkeypatch.setattr(bulk_io, "PARALLEL_BYTES", 4096)  # the mapped way, several threads, as t21's 393 MB take
    monkeypatch.setattr(bulk_io, "_threads", lambda total: 3)
    mapped = _throwaway(tmp_path, "mapped.in", Shape(2, 100, 16)).qkv.reshape(-1)
    assert (mapped[1000:2000] == mapped[:1000]).all() and (mapped[9000:] == mapped[:600]).all()
    assert not (mapped[:1000] == values[:1000]).all()


# Writes the age of its own file (/proc/self/exe's mtime) on stderr, then fails.
AGE = '#!/bin/sh\necho "age: $(( $(date +%s) - $(stat -c %Y "$0") ))" >&2\nexit 3\n'


def test_a_programs_file_tells_no_time_so_a_rerun_cannot_count_from_its_build(tmp_path):
    """Red team (from the docs alone): the sealed program kept its build's mtime, a clock only growing, so a
    rerun (later than every first run) told itself from one by its own file's age. Its times are the epoch."""
    program = tmp_path / "age"
    program.write_text(AGE)
    program.chmod(0o555)
    case = tmp_path / "case.in"
    write_testcase(case, seeded_testcase(Shape(1, 4, 8), 1))
    room = Sandbox.open(program, SandboxSettings("none"))
    try:
        outcome = run_program(room, ProgramSpec("c1", case, Shape(1, 4, 8), 20.0))
    finally:
        room.close()
    assert int(outcome.process.stderr_tail.split("age:")[1].split()[0]) > 50 * 365 * 86400  # counted from 1970


# Says the size and the header of its input on stderr.
SIZE_OF_INPUT = '#!/bin/sh\necho "size: $(wc -c < "$1") head: $(od -An -tu4 -N12 "$1" | tr -s " ")" >&2\nexit 0\n'


def test_a_warm_ups_input_is_written_in_its_case_folder_and_nowhere_else(tmp_path):
    """Its throwaway input was written to a folder on the disk and copied into the case folder (t21's 393 MB: 0.26
    s of a one-program judge on an H200's host); the room writes it where the run reads it, and it goes with the
    case folder."""
    from attnbench.sandbox import program_run

    program = tmp_path / "size"
    program.write_text(SIZE_OF_INPUT)
    program.chmod(0o555)
    shape = Shape(2, 5, 8)
    room = Sandbox.open(program, SandboxSettings("none"), cuda_cache=tmp_path / "cache", cache_writable=True)
    try:
        written = WrittenInput(shape, lambda f: program_run.write_throwaway_into(f, shape))
        seen = run_program(room, ProgramSpec("warmup", tmp_path / "unused.in", shape, 20.0, written=written))
        went = program_run.warm_up(room, ProgramSpec("c1", tmp_path / "unused.in", shape, 20.0))
    finally:
        room.close()
    assert seen.process.stderr_tail.split() == ["size:", str(shape.input_bytes), "head:", "2", "5", "8"]
    assert went.ending == NO_OUTPUT  # it ran, and exited normally having written none
    assert not (tmp_path / "unused.in").exists()


def test_what_killed_workers_left_is_cleared_when_they_end_not_only_by_the_next_judge(tmp_path, monkeypatch):
    """A class judge stopped by SIGTERM on a busy machine exited 130 with a build worker's room in its temporary
    folder, its view's tmpfs and overlays still mounted: the worker, killed 2 s after its SIGTERM while it cleaned
    up, removed nothing, and this process had swept stale rooms once already, at its first room."""
    import os
    import signal
    import subprocess
    import sys

    from attnbench.sandbox import program_run, room

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(program_run.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(room, "_swept", [True])  # the once-per-process sweep is spent
    root = Path(__file__).resolve().parents[2]
    opened = ("from attnbench.sandbox.room import Sandbox, SandboxSettings; import os; "
              "r = Sandbox.open(None, SandboxSettings('none')); c = r.prepare('c', None); "
              "print(r.root, flush=True); os.kill(os.getpid(), 9)")
    worker = subprocess.Popen([sys.executable, "-c", opened], cwd=root, env={**os.environ, "TMPDIR": str(tmp_path)},
                              stdout=subprocess.PIPE, text=True)
    left = Path(worker.stdout.readline().strip())
    assert worker.wait(timeout=60) == -signal.SIGKILL and left.is_dir()
    program_run.clear_after_workers(set())
    assert not left.exists()
    assert not any(str(tmp_path) in line for line in Path("/proc/self/mounts").read_text().splitlines())


def test_a_run_whose_step_before_launch_fails_leaves_no_case_folder_and_starts_nothing(tmp_path):
    """run_unfinished hands its caller the folder's removal; where the run fails before that (here the step before
    the launch), the folder goes before the error does."""
    from attnbench.sandbox.program_run import run_unfinished

    program = tmp_path / "size"
    program.write_text(SIZE_OF_INPUT)
    program.chmod(0o555)
    shape = Shape(2, 5, 8)
    case = tmp_path / "case.in"
    write_testcase(case, seeded_testcase(shape, 3))
    room = Sandbox.open(program, SandboxSettings("none"), cuda_cache=tmp_path / "cache")
    try:
        before = {*room.root.iterdir(), room.root / "accounts"}  # the box's accounts: the room's, made by its first run
        with pytest.raises(OSError, match="disk full"):
            run_unfinished(room, ProgramSpec("c1", case, shape, 20.0),
                           lambda: (_ for _ in ()).throw(OSError("disk full")))
        assert set(room.root.iterdir()) == before
        outcome, finish = run_unfinished(room, ProgramSpec("c2", case, shape, 20.0))
        assert outcome.process.stderr_tail.split()[:2] == ["size:", str(shape.input_bytes)]
        assert set(room.root.iterdir()) != before  # kept until the caller removes it
        finish()
        assert set(room.root.iterdir()) == before
    finally:
        room.close()
