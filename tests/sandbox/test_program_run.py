"""sandbox/program_run.py: the one call that runs a program on a case, and an exe: cell's warm JIT cache."""

import stat
from pathlib import Path

from attnbench.cases.inputs import seeded_testcase
from attnbench.cases.testcase import Shape, write_testcase
from attnbench.sandbox.program_run import ProgramSpec, WarmCaches, run_program
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


def test_a_warm_ups_throwaway_input_is_in_the_suites_range_and_never_the_same_twice():
    from attnbench.sandbox.program_run import throwaway_testcase

    shape = Shape(3, 17, 8)
    first, second = throwaway_testcase(shape), throwaway_testcase(shape)
    assert first.shape == shape and first.qkv.dtype.str == "<f4"
    for testcase in (first, second):
        assert testcase.qkv.min() >= -3.0 and testcase.qkv.max() < 3.0
        assert testcase.qkv.std() > 1.0  # spread over the range (uniform on [-3, 3): 1.73), not a constant
    assert not (first.qkv == second.qkv).all()  # a secret seed each time: no answer a program could keep
