"""`attnbench run`: one variant on one case, written, timed and checked: a one-cell compare (the same case
resolution, reference, engine and check), with the variant chosen for the shape when none is named."""

from __future__ import annotations

from pathlib import Path

from attnbench.analysis.run_verdict import RunOutcome
from attnbench.api.compare_command import open_gpu_for
from attnbench.api.empty_arguments import refuse_empty
from attnbench.api.notices import Notice, quiet
from attnbench.api.timing_options import TimingOptions
from attnbench.backends.cpu import passes_reported
from attnbench.bench.check_rule import refuse_bad_tolerance
from attnbench.bench.runner import run_case
from attnbench.bench.verify import COURSE_ATOL
from attnbench.cases.fresh_values import InputRange
from attnbench.cases.inputs import FileInput, ProgressFactory, SuiteInput, no_progress, resolve, shadowed_by_suite
from attnbench.cases.suite import refuse_suite_file
from attnbench.cases.testcase import Shape
from attnbench.errors import OutOfPrecision, UsageError
from attnbench.files import check_output_path
from attnbench.kernels.catalogue import default_variant, get_variant
from attnbench.kernels.user import refuse_kernel_source
from attnbench.kernels.variant import Variant


def choose_variant(name: str | Variant | None, shape: Shape, notice: Notice = quiet, accuracy: str | None = None,
                   ranges: InputRange | None = None, tolerance: tuple[float, float] = (COURSE_ATOL, 0.0)) -> Variant:
    """The named variant, or the fastest built-in that takes the shape on this machine at `accuracy`
    ("float32" unless "course" is asked for), passing over one whose arithmetic cannot hold `tolerance` on the
    input's value `ranges` (when given); refuses shapes the variant cannot take."""
    if isinstance(name, str) and not name.strip():  # an unset variable: never silently the default instead
        raise UsageError("--variant is empty: give a variant name (see `attnbench list`), or leave --variant out "
                         "for the default")
    if isinstance(name, str) and name.strip().startswith("exe:"):  # a whole program: not a kernel run writes
        program = name.strip()[len("exe:"):]
        raise UsageError(f"--variant {name}: a whole program is run by compare (attnbench compare --variants {name} "
                         f"--cases CASE) or judged (attnbench judge {program or 'PROGRAM'}); run runs one kernel "
                         "variant (see `attnbench list`)")
    if name is not None and accuracy is not None:
        raise UsageError("give a variant or an accuracy for the default, not both")
    if isinstance(name, Variant):
        variant = name
    elif name:
        variant = get_variant(name)
    else:
        from attnbench.backends.gpu import device_capability, gpu_probe

        reason = gpu_probe()
        variant = default_variant(shape, gpu_usable=reason is None,
                                  compute_capability=device_capability() if reason is None else None,
                                  accuracy=accuracy or "float32", ranges=ranges, tolerance=tolerance,
                                  refused=lambda refusal: notice(f"{refusal.requirement()} ({refusal.found()}): "
                                                                 "the default passes over it"))
        if reason is not None:
            notice(f"{reason}; running the cpu variant")
    variant.require(shape)
    return variant


def run(
    case: str,
    variant: str | Variant | None = None,
    out: str | Path | None = None,
    *,
    check: bool = False,
    atol: float = COURSE_ATOL,
    rtol: float = 0.0,
    timing: TimingOptions = TimingOptions(),
    device: int = 0,
    pipeline: bool = True,
    progress: ProgressFactory = no_progress,
    notice: Notice = quiet,
    accuracy: str | None = None,
) -> RunOutcome:
    """Run one variant on a case (a suite name or a course input file): write `out` if given, time it,
    and with `check` verify it against the float64 reference. A one-cell compare. Without a variant, the
    default at `accuracy` ("float32"; "course": the course rule with margin, see `default_variant`).
    The outcome holds the measurement, its problems (one line each) and the exit status the command line
    exits with.

    With `pipeline` (the default), a GPU variant's first pass streams the file through a ring of pinned
    buffers to the device and the output back to `out`, overlapping them with the kernels; the
    measurement's `clock` has each stage's busy time and the wall time. Without it, the input is read
    whole, then copied, computed, copied back and written, one after another."""
    refuse_bad_tolerance(atol, rtol)
    refuse_empty("case", case, "a suite case or an input file")
    refuse_empty("out", out, "a file name")
    bench_input = resolve(case)
    if shadowed_by_suite(case):
        notice(f"{case} is a suite case, used as such; write ./{case} to use the local file of that name")
    if out is not None:
        check_output_path(out, [bench_input.path] if isinstance(bench_input, (FileInput, SuiteInput)) else [])
        refuse_suite_file(out)
        refuse_kernel_source(out)
    # The environment first (a suite case's shape is in the manifest): no GPU means no input written.
    # the course's accuracy passes over a variant whose arithmetic cannot hold the check on this input's values
    ranges = bench_input.value_range() if variant is None and accuracy == "course" else None
    chosen = choose_variant(variant, bench_input.shape, notice, accuracy, ranges, (atol, rtol))
    if chosen.compute_unit.rounding is not None:  # refused before the GPU opens or a reference is made (the engine
        # refuses it too, for every other command)
        refused = chosen.precision_refusal(ranges or bench_input.value_range(), bench_input.shape, (atol, rtol))
        if refused is not None:
            raise OutOfPrecision(refused)
    if device != 0 and not chosen.kind.needs_gpu:  # a GPU asked for that this run would never touch
        raise UsageError(f"--device {device}: the {chosen.name} variant runs on the host, not on a GPU; drop --device"
                         + (" (no GPU variant can run here)" if variant is None else ""))
    if timing.hot and not chosen.kind.needs_gpu:  # taken, and nothing said: the host flushes no GPU cache anyway
        notice(f"--hot: the {chosen.name} variant runs on the host, where no GPU cache is flushed; it changes nothing")
    gpu = open_gpu_for([chosen], device)
    with passes_reported(progress, bench_input.label):  # a long cpu pass shows its progress and expected time
        measurement = run_case(chosen, bench_input, gpu, timing.policy_for(chosen), out, check, (atol, rtol),
                               pipeline, progress, notice)
    return RunOutcome.of(measurement, out)
