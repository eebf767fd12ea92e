"""Wall and CPU time of each phase of an attnbench command, in its own process and in the workers it
spawns (`--gpus`), one line per call on stderr. Usage: python3 tools/trace_phases.py compare ... 2> phases.log

Lines read `T <seconds since start> pid <pid> <phase> <what> wall=<s> cpu=<s>`. The patches are made at
import time, so `spawn`ed workers, which import this file again as __mp_main__, are traced too. A
cpu time far above the wall time means threads (ours, or BLAS's spinning ones) on several cores."""
import functools
import os
import sys
import time
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[2]))  # the checkout's attnbench, when not installed

T0 = float(os.environ.setdefault("TRACE_T0", repr(time.time())))
PID = os.getpid()


def line(phase, what="", wall=None, cpu=None):
    extra = "" if wall is None else f" wall={wall:.3f} cpu={cpu:.3f}"
    print(f"T {time.time() - T0:8.2f} pid {PID} {phase} {what}{extra}", file=sys.stderr, flush=True)


def timed(owner, name, what=lambda *a, **k: ""):
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            line(name, what(*args, **kwargs), time.perf_counter() - w0, time.process_time() - c0)

    setattr(owner, name, wrapper)


line("import-start")
from attnbench.bench import runner, matrix  # noqa: E402
from attnbench.spread import cellgroups, pool, workers  # noqa: E402
from attnbench.cases import inputs  # noqa: E402
from attnbench.backends import gpu as gpumod  # noqa: E402

line("imported")
timed(inputs.SuiteInput, "load", lambda self, *a, **k: self.label)
timed(inputs.SuiteInput, "reference", lambda self, *a, **k: self.label)
timed(inputs.SuiteInput, "info", lambda self, *a, **k: self.label)
timed(runner, "make_execution", lambda v, t, *a, **k: v.name)
timed(runner, "_first_pass")
timed(runner, "_time", lambda e, v, *a, **k: v.name)
timed(runner, "_measurement", lambda v, *a, **k: v.name)
timed(gpumod.Gpu, "compile", lambda self, v, *a, **k: v.name)
timed(cellgroups, "open_device")
timed(workers, "open_device")
timed(cellgroups, "_gpu_uuid")
timed(workers, "claim_share")
from attnbench.backends import torch_peer  # noqa: E402
timed(torch_peer, "import_torch")
timed(gpumod.Gpu, "__init__")
timed(cellgroups, "run_case_group", lambda plan, bi, *a, **k: bi.label)
timed(matrix, "measure_cell", lambda v, label, *a, **k: f"{v.name} {label}")
timed(matrix, "assemble")
from attnbench.bench import check_rule  # noqa: E402
_course_check = check_rule.course_check


def traced_course_check(*a, **k):
    check = _course_check(*a, **k)

    def wrapped(output, reference):
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            return check(output, reference)
        finally:
            line("check", "", time.perf_counter() - w0, time.process_time() - c0)
    return wrapped


check_rule.course_check = traced_course_check  # CourseRule.check(), in workers and in this process
timed(pool.GpuPool, "_spawn", lambda self, slot: slot.device.label)
timed(pool.GpuPool, "close")

if __name__ == "__main__":
    from attnbench.cli import main as cli

    sys.argv = ["attnbench", *sys.argv[1:]]
    try:
        cli()
    except SystemExit as exc:
        line("exit", str(exc.code))
        raise
