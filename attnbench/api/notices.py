"""How the API tells its caller something in passing: a function that takes one line (the CLI prints it
to stderr; a library caller may log it or drop it)."""

from __future__ import annotations

from typing import Callable, Sequence

from attnbench.cases import suite
from attnbench.cases.inputs import BenchInput, SuiteInput
from attnbench.host_threads import host_threads

Notice = Callable[[str], None]  # receives one-line notes for the user ("running the cpu variant", ...)


def quiet(note: str) -> None:
    """The default Notice: say nothing."""


def say_suite_writes(pending: int, folder: object, notice: Notice) -> None:
    """Before a command generates suite cases (the course's thirty take about 8.6 GB), say how much it will
    write and where, and how to write less; nothing when everything is there already."""
    if pending:
        scale, unit = next((scale, unit) for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "bytes"))
                           if pending >= scale)
        size = f"{pending / scale:.1f} GB" if unit == "GB" else f"{pending / scale:.0f} {unit}"
        notice(f"the cases not generated yet take {size} (inputs and float64 references) in "
               f"{folder}; --cases limits them (e.g. --cases t01-t10)")


# float64 operations a second one host thread gives the reference (measured 15-35 GFLOP/s a thread on 2-core
# and 16-core machines): a low rate, so the estimate errs long
REFERENCE_FLOPS_PER_THREAD = 10e9
REFERENCE_NOTE_S = 60.0  # a reference this long is said before it starts


def reference_seconds(inputs: Sequence[BenchInput]) -> float:
    """About how long the host's CPU takes for the float64 references these inputs still need (4 B N^2 d
    operations each; a suite case's stored reference needs none)."""
    operations = 0.0
    for bench_input in inputs:
        if isinstance(bench_input, SuiteInput) and suite.has_reference(bench_input.case):
            continue
        shape = bench_input.shape
        operations += 4.0 * shape.B * shape.N * shape.N * shape.d
    return operations / (REFERENCE_FLOPS_PER_THREAD * host_threads())


def say_reference_time(inputs: Sequence[BenchInput], notice: Notice) -> None:
    """Before a float64 reference that takes minutes or hours on this CPU (a sweep of N to 1048576 took hours
    without a word): how long, about, and that Ctrl-C stops it."""
    seconds = reference_seconds(inputs)
    if seconds < REFERENCE_NOTE_S:
        return
    span = f"{seconds / 3600:.1f} hours" if seconds >= 3600 else f"{seconds / 60:.0f} minutes"
    notice(f"the float64 references these inputs need take about {span} on this machine's CPU "
           f"({host_threads()} threads); Ctrl-C stops them, and fewer or smaller inputs take less")
