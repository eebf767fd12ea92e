"""The verified passes: after a cell's timed samples, proof that a timed pass computes the answer.

The check before timing sees only the first pass; a kernel could compute then and skip work on every
later launch (a device flag), serve a result it cached for inputs it has seen, or recompute only when
it finds its output poisoned. So after the samples, `PASSES` more passes run, each timed exactly as a
sample was (the same clock, the same L2 flush or none), each on an input changed in place to one whose
answer is known without a new float64 reference (`backends.input_transform`: items and rows permuted,
V negated, drawn fresh from the OS's entropy):

1. the output is poisoned with NaN, then one timed pass: a kernel that skips work leaves NaN or its
   old answer, and one that writes only part of the output leaves NaN in the rest;
2. a second change on top, the output NOT poisoned: a kernel that recomputes only when it sees poison
   leaves pass 1's output, which is not pass 2's answer (two passes, not three: the first catches
   every skip that leaves poison, the second every poison-watcher, and both are timed; a third would
   add cost and no new trick caught).

Each pass's output is compared with the first pass's output moved the same way (the first pass was
checked against the float64 reference when there is one; without one it is only scanned for NaN and
Inf), element by element: |out - expected| <= atol (+ rtol*|expected|), the check's own tolerance,
in float32. A GPU backend keeps a copy of the first output on the device, taken right after it was read
back (`Execution.keep_output`, by the runner), and checks there: no output read back, no pass over it on
the host (reading back and checking two outputs on the host cost as much as the samples on the biggest
cases). A host backend, a device without room for the copy, or a kept copy that something wrote into,
checks on the host's threads instead, against the host's copy.

A kernel that computes honestly whenever its input changed passes those checks, so each pass's TIME
must agree with the samples': at most max(1.5 x the median, the slowest sample) + the backend's launch
slack (0.05 ms for a pycuda launch, 0.25 ms for a Python-level launcher: `BackendKind.launch_slack_ms`).
An honest pass on a changed input with the same L2 policy costs what a sample costs (the slowest sample
bounds its jitter, 1.5x its clock and cache state, the slack the host's launch work that can fall inside
the window of a kernel of a few microseconds); a kernel that skipped work in the samples is many times over. A pass over the limit is
redone, each time on a fresh change (so a cache cannot help), up to 3 times: only when every attempt
is over is it skipped work, so a host hiccup inside an event window (a page fault, a GC pause before a
launch) is no verdict. attnbench's own host variant (the host clock, on a shared machine) is held to
the values only.

Each pass is also timed by the host's wall clock, the whole context synchronised before and after, so
work launched outside the timed stream shows up. When every pass's wall time exceeds 1.25 x its event
time + 2 ms (Python's launch overhead is 10-30 us a launch; the L2 flush is inside the wall window),
the cell gets a warning with its remedy: a disagreement, not a verdict.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from attnbench.backends.base import Execution, OutputCheck
from attnbench.backends.input_transform import InputTransform, entropy_rng
from attnbench.bench.sampler import timed_passes
from attnbench.cases.testcase import Shape
from attnbench.host_threads import host_threads
from attnbench.results.stats import KernelStats
from attnbench.results.timed_check import SKIPPED_WORK, WRONG_VALUES, ClockDisagreement, TimedCheck, VerifiedPass

PASSES = 2
TIME_FACTOR = 1.5
TIME_SLACK_MS = 0.05  # a pycuda launch's (the default: BackendKind.launch_slack_ms says each backend's)
WALL_FACTOR = 1.25
WALL_SLACK_MS = 2.0
TIME_ATTEMPTS = 3  # a pass over the time limit is redone on a fresh change: one hiccup of the host is no verdict
def time_rule(slack_ms: float) -> str:
    return f"every verified pass <= max({TIME_FACTOR:g} x median, slowest sample) + {slack_ms:g} ms, timed as the samples were"


def _one_pass(execution: Execution, change: InputTransform, poison: bool, flush_l2: bool,
              wall_clock: Callable[[], float]) -> tuple[float, float]:
    """Change the input, maybe poison the output, time one pass (events and wall clock)."""
    execution.permute_inputs(change)
    if poison:
        execution.poison_output()
    execution.synchronize()
    start = wall_clock()
    time_ms = timed_passes(execution, 1, flush_l2)
    execution.synchronize()
    wall_ms = (wall_clock() - start) * 1e3
    return time_ms, wall_ms


def _errors(execution: Execution, device_check: OutputCheck | None, base: Any, transform: InputTransform,
            shape: Shape, atol: float, rtol: float) -> tuple[tuple[int, int, float], bool]:
    """The pass's (failing, non-finite, max abs) and whether the device gave them (else the host did)."""
    if device_check is not None:
        errors = device_check.errors(transform, atol, rtol)
        if errors is not None:
            return errors, True
    output = execution.download()
    return pass_errors(output, base, transform, shape, atol, rtol), False


def _group_errors(got: np.ndarray, base: Any, transform: InputTransform, b0: int, b1: int, atol: float,
                  rtol: float) -> tuple[int, int, float]:
    want = transform.expected_items(base, b0, b1)
    part = got[b0:b1]
    # float32, like the outputs: |out - expected| is within half an ulp of the float64 value, far below atol
    diff = np.subtract(part, want)
    np.abs(diff, out=diff)  # NaN anywhere stays NaN: it fails below
    within = diff <= (atol + rtol * np.abs(want)) if rtol else diff <= atol
    failing = int(diff.size - np.count_nonzero(within))
    if not failing:  # a NaN or Inf in the output fails its element, so none is there: no scan for them
        return 0, 0, float(diff.max(initial=0.0))
    nonfinite = int(part.size - np.count_nonzero(np.isfinite(part)))
    finite = np.isfinite(diff)
    return failing, nonfinite, float(diff[finite].max(initial=0.0))


def pass_errors(got: np.ndarray, base: Any, transform: InputTransform, shape: Shape, atol: float,
                rtol: float) -> tuple[int, int, float]:
    """(failing, non-finite, max abs error over finite elements) of `got` against `base` moved by
    `transform`, groups of items at a time on this process's host threads (no full copy of either side)."""
    groups = transform.item_groups(shape)
    with ThreadPoolExecutor(max_workers=max(1, min(host_threads(), len(groups)))) as pool:
        parts = list(pool.map(lambda g: _group_errors(got, base, transform, g[0], g[1], atol, rtol), groups))
    return (sum(p[0] for p in parts), sum(p[1] for p in parts), max((p[2] for p in parts), default=0.0))


def check_timed_passes(execution: Execution, stats: KernelStats, base: Any, shape: Shape, *, flush_l2: bool,
                       atol: float, rtol: float, expected_from: str, device_clock: bool,
                       kept: OutputCheck | None = None, slack_ms: float = TIME_SLACK_MS,
                       rng: np.random.Generator | None = None, passes: int = PASSES,
                       wall_clock: Callable[[], float] = time.perf_counter) -> TimedCheck:
    """Run the verified passes on `execution` after its samples (`stats`); `base` is the first pass's
    output (checked), `kept` its copy on the device (None: check on the host), `device_clock` False for
    attnbench's own host variant (values only, no time rule), `slack_ms` the backend's launch slack. The caller
    frees `kept`."""
    rng = rng or entropy_rng()
    samples = stats.samples_ms
    median = float(np.median(samples)) if samples else 0.0
    slowest = max(samples) if samples else 0.0
    limit = max(TIME_FACTOR * median, slowest) + slack_ms if device_clock and samples else None
    cumulative = InputTransform.identity(shape)
    verified: list[VerifiedPass] = []
    wrong = skipped = False
    for index in range(passes):  # every pass runs, so a kernel caught by its time is also held to its values
        for attempt in range(1, TIME_ATTEMPTS + 1):
            change = InputTransform.draw(shape, rng)
            cumulative = cumulative.then(change)
            time_ms, wall_ms = _one_pass(execution, change, index == 0, flush_l2, wall_clock)
            (failing, nonfinite, max_abs), on_device = _errors(execution, kept, base, cumulative, shape,
                                                               atol, rtol)
            verified.append(VerifiedPass(change.kinds(), index == 0, time_ms, wall_ms, failing, nonfinite,
                                         max_abs, attempt, "device" if on_device else "host"))
            slow = limit is not None and time_ms > limit
            if failing or not slow:
                break
        wrong = wrong or failing > 0
        skipped = skipped or (slow and not failing)  # every attempt, each on a fresh change, over the limit
        if failing:
            break
    failure = WRONG_VALUES if wrong else (SKIPPED_WORK if skipped else None)
    warning = _clock_disagreement(verified) if device_clock else None
    return TimedCheck(verified, shape.elements, atol, rtol, expected_from, median, slowest, limit, failure, warning,
                      time_rule(slack_ms) if limit is not None else "values only (attnbench's own host variant)")


def _clock_disagreement(verified: list[VerifiedPass]) -> ClockDisagreement | None:
    """A warning when the wall clock exceeded the events beyond noise on every pass (one hiccup is not enough)."""
    def limit(p: VerifiedPass) -> float:
        return WALL_FACTOR * p.time_ms + WALL_SLACK_MS

    if not verified or not all(p.wall_ms > limit(p) for p in verified):
        return None
    closest = min(verified, key=lambda p: p.wall_ms - limit(p))
    return ClockDisagreement(closest.time_ms, closest.wall_ms, limit(closest))
