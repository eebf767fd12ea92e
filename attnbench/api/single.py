"""The public Python API: what the command line does, for notebooks and scripts.

    import attnbench
    outcome = attnbench.run("t02", variant="cpu", out="t02.out", check=True)
    m = outcome.measurement
    print(m.kernel.median, m.tflops, m.verification.passed, outcome.exit_status)
    rs = attnbench.compare(["cpu"], ["odd_17x48", "odd_100x32"])
    report = attnbench.verify("t02.out", "t02")
    saved = attnbench.load_results("docs/results/2026-11-26_h100_final_default_peers_t01-t30.json")

Every function raises `attnbench.errors.AttnbenchError` subclasses for expected failures (their
`exit_code` is what the command line exits with). The command line only parses options, calls these
and renders what they return.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from attnbench.analysis.against import check_same_gpu, check_same_inputs, common_selection, expected_inputs
from attnbench.analysis.run_verdict import RunOutcome
from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN
from attnbench.api.notices import Notice, quiet
from attnbench.api.spread import SlurmOptions, placement, resume, spread_matrix
from attnbench.backends.cpu import passes_reported
from attnbench.backends.device import GpuDevice
from attnbench.bench.check_rule import CheckRule, CourseRule, LabRule
from attnbench.bench.matrix import MatrixInterrupted, MatrixListener, MatrixSettings, assemble, run_matrix
from attnbench.bench.runner import run_case
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.squarelab import LabTimer
from attnbench.bench.verify import COURSE_ATOL
from attnbench.cases.inputs import (
    BenchInput,
    FileInput,
    ProgressFactory,
    SuiteInput,
    inputs_for,
    no_progress,
    resolve,
    shadowed_by_suite,
)
from attnbench.cases.suite import refuse_suite_file
from attnbench.cases.sweeps import parse_sizes, parse_values, shape_inputs, square_inputs, sweep_axis
from attnbench.cases.testcase import Shape
from attnbench.errors import UsageError
from attnbench.files import check_output_path
from attnbench.kernels.catalogue import baseline_name, default_variant, get_variant, variants_for
from attnbench.kernels.variant import Variant
from attnbench.results.resultset import ResultKind, ResultSet
from attnbench.results.run_settings import RunSettings
from attnbench.sandbox import MODES as SANDBOX_MODES

CPU_SAMPLING_BUDGET_S = 2.0  # the cpu variant's sampling budget unless --timeout says: several passes, not minutes
GPU_SAMPLING_BUDGET_S = 10.0
CPU_TARGET_NOISE = 0.05  # host passes jitter more than kernels; within the budget, 5% is what they can promise



@dataclass(frozen=True)
class TimingOptions:
    """How passes are timed, as the user states it; `policy_for` turns it into a variant's policy."""

    warmup: int | None = None  # untimed passes first [GPU: 2, cpu: 0]
    reps: int | None = None  # a fixed sample count; None: sample until the noise is low
    hot: bool = False  # do not flush the L2 cache before each sample
    timeout: float | None = None  # seconds at most for adaptive sampling (None: 10 on a GPU, 2 for the cpu variant)
    noise: float = 1.0  # target relative noise, percent

    def policy_for(self, variant: Variant) -> TimingPolicy:
        if variant.kind.runs_on_host:  # host passes are slow: no warm-up, a short budget (the first pass counts)
            return TimingPolicy(warmup=self.warmup or 0, reps=self.reps, flush_l2=False, min_samples=6,
                                min_time_s=0.0, timeout_s=self.timeout or CPU_SAMPLING_BUDGET_S,
                                target_noise=max(self.noise / 100, CPU_TARGET_NOISE))
        return TimingPolicy(warmup=2 if self.warmup is None else self.warmup, reps=self.reps, flush_l2=not self.hot,
                            timeout_s=self.timeout or GPU_SAMPLING_BUDGET_S, target_noise=self.noise / 100)

    def record(self) -> dict[str, Any]:
        """The GPU policy as saved results record it."""
        policy = asdict(TimingPolicy(warmup=2 if self.warmup is None else self.warmup, reps=self.reps,
                                     flush_l2=not self.hot, timeout_s=self.timeout or GPU_SAMPLING_BUDGET_S,
                                     target_noise=self.noise / 100))
        policy["host_variants"] = (f"host wall time per pass, no warm-up, every pass on a fresh input and checked; "
                                   f"until the noise is under {100 * max(self.noise / 100, CPU_TARGET_NOISE):g}% "
                                   f"(at least 6 passes) or for at most {self.timeout or CPU_SAMPLING_BUDGET_S:g} s "
                                   "(--timeout), or --reps passes")
        policy["noise"] = "half-width of the median's 95% confidence interval, relative to the median"
        return policy


def variants_from(selector: str | Sequence[str]) -> list[Variant]:
    """Variants by name, group (`all`, `ladder`), the torch peer, or a whole program as `exe:PATH`."""
    from attnbench.backends.program import EXE_PREFIX, program_variant

    parts = [p.strip() for p in (selector.split(",") if isinstance(selector, str) else selector) if p.strip()]
    chosen: list[Variant] = []
    for part in parts:
        found = [program_variant(part)] if part.startswith(EXE_PREFIX) else variants_for(part)
        chosen.extend(v for v in found if v not in chosen)
    if not chosen:
        variants_for("")  # the one-line refusal of an empty selection
    return chosen


def variant_names() -> list[str]:
    """Every name --variant and --variants take: the variants with their flavours (yours from
    attnbench.toml too), the groups and the torch peer, for shell completion."""
    from attnbench.kernels.catalogue import all_variants, with_flavours

    return [*(v.name for v in with_flavours(all_variants())), "all", "ladder"]


def case_names() -> list[str]:
    """Every suite case and group a case list takes, for shell completion."""
    from attnbench.cases import suite

    return [*suite.SUITE, *suite.GROUPS, "all", "known"]


def open_gpu(device: int = 0) -> Any:
    """The CUDA device `device` with its primary context current (GpuUnavailable in one sentence)."""
    from attnbench.backends.gpu import Gpu

    return Gpu(device)


def open_gpu_for(variants: Sequence[Variant], device: int = 0) -> Any | None:
    """Check the torch peer first (one sentence if missing), then open the GPU if any variant needs it."""
    if any(v.kind.needs_torch for v in variants):
        from attnbench.backends.torch_peer import import_torch

        import_torch()
    if any(v.kind.needs_gpu for v in variants):
        return open_gpu(device)
    return None


def choose_variant(name: str | Variant | None, shape: Shape, notice: Notice = quiet, accuracy: str | None = None) -> Variant:
    """The named variant, or the fastest built-in that takes the shape on this machine at `accuracy`
    ("float32" unless "course" is asked for); refuses shapes the variant cannot take."""
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
                                  accuracy=accuracy or "float32")
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
    bench_input = resolve(case)
    if shadowed_by_suite(case):
        notice(f"{case} is a suite case, used as such; write ./{case} to use the local file of that name")
    if out is not None:
        check_output_path(out, [bench_input.path] if isinstance(bench_input, (FileInput, SuiteInput)) else [])
        refuse_suite_file(out)
    # The environment first (a suite case's shape is in the manifest): no GPU means no input written.
    chosen = choose_variant(variant, bench_input.shape, notice, accuracy)
    gpu = open_gpu_for([chosen], device)
    with passes_reported(progress, bench_input.label):  # a long cpu pass shows its progress and expected time
        measurement = run_case(chosen, bench_input, gpu, timing.policy_for(chosen), out, check, (atol, rtol),
                               pipeline, progress, notice)
    return RunOutcome.of(measurement, out)


def compare(
    variants: str | Sequence[str],
    cases: str | Sequence[str],
    *,
    baseline: str | None = None,
    timing: TimingOptions = TimingOptions(),
    device: int = 0,
    atol: float = COURSE_ATOL,
    rtol: float = 0.0,
    same_within: float = DEFAULT_SAME_WITHIN,
    listener: MatrixListener | None = None,
    command: str | None = None,
    before_run: Callable[[Any, list[BenchInput]], None] | None = None,
    gpus: str | None = None, executor: str = "local", slurm: SlurmOptions | None = None, notice: Notice = quiet,
    sandbox: str = "auto",
) -> ResultSet:
    """A checked, timed matrix of variants x cases (comma lists or sequences of names, groups, files).

    `before_run(gpu, inputs)` runs after the GPU opens and before any cell (for refusing an
    incomparable saved run early). `gpus` (`all` or `0,1`) spreads the cases over this host's GPUs,
    one worker process each; `executor="slurm"` over Slurm jobs (see `SlurmOptions`). `sandbox` confines
    `exe:` programs as the judge does: "auto" (the sandbox where bwrap works, else one notice that they run
    without it), "required" (SandboxUnavailable, exit 3, when none can be made) or "none"."""
    from attnbench.backends.program import program_confinement

    if sandbox not in SANDBOX_MODES:
        raise UsageError(f"--sandbox {sandbox}: one of {', '.join(SANDBOX_MODES)}")
    chosen = variants_from(variants)
    unconfined = program_confinement(chosen, sandbox)
    if unconfined is not None:
        notice(f"exe: programs: {unconfined}")
    inputs = inputs_for(cases)
    names = [v.name for v in chosen]
    timed = [v.name for v in chosen if not v.kind.whole_program]  # a program has no kernel time to compare
    baseline = baseline_name(baseline, chosen)
    check_rule = CourseRule(atol, rtol)
    record = {"policy": timing.record(), "baseline": baseline or (timed or names)[0], "command": command,
              "settings": RunSettings(check_rule.describe(), atol, rtol, same_within).to_dict()}
    where = placement(gpus, executor, slurm)
    if where.spread:
        return spread_matrix(ResultKind.COMPARE, chosen, inputs, timing.policy_for, check_rule, where, record,
                             listener, notice, before_run, program_sandbox=sandbox)
    gpu = open_gpu_for(chosen, device)
    if before_run is not None:
        before_run(gpu, inputs)
    settings = MatrixSettings(policy=timing.policy_for, check=check_rule.check(), tolerance=check_rule.tolerance,
                              program_sandbox=sandbox)
    return _matrix(chosen, inputs, gpu, settings, listener, lambda infos, cells: assemble(
        ResultKind.COMPARE, chosen, infos, cells, gpu, record["policy"], record["baseline"], record["settings"], command))


def _matrix(chosen: list[Variant], inputs: list[BenchInput], gpu: GpuDevice, settings: MatrixSettings,
            listener: MatrixListener | None, finish: Callable[[list, list], ResultSet]) -> ResultSet:
    """The cells run here, then `finish` makes their result set; on Ctrl-C the result set of what was
    measured goes with the interruption (as `partial`) for the caller to save."""
    try:
        with passes_reported(listener.progress if listener is not None else no_progress):  # long cpu passes shown
            infos, cells = run_matrix(chosen, inputs, gpu, settings, listener)
    except MatrixInterrupted as exc:
        raise exc.with_partial(finish(exc.cases, exc.cells)) from None
    return finish(infos, cells)


def sweep(
    what: str,
    variants: str | Sequence[str],
    *,
    sizes: str = "all",
    values: str | None = None,
    batch: int | None = None,
    seq_len: int = 2048,
    head_dim: int = 64,
    baseline: str | None = None,
    lab_timing: bool = False,
    timing: TimingOptions = TimingOptions(),
    device: int = 0,
    same_within: float = DEFAULT_SAME_WITHIN,
    listener: MatrixListener | None = None,
    command: str | None = None,
    gpus: str | None = None, executor: str = "local", slurm: SlurmOptions | None = None, notice: Notice = quiet,
) -> ResultSet:
    """The square-attention lab's sizes (`square`), or a sweep of N or d of the (B, N, d) workload;
    `gpus` and `executor` spread it as for `compare`."""
    try:
        swept = sweep_axis(what)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    axis = swept.name
    chosen = variants_for(variants if isinstance(variants, str) else ",".join(variants))
    baseline = baseline_name(baseline, chosen)
    try:
        if swept.default_values is None:
            inputs = square_inputs(parse_sizes(sizes))
        else:
            inputs = shape_inputs(axis, parse_values(values or swept.default_values), batch, seq_len, head_dim)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_rule: CheckRule = LabRule() if axis == "square" else CourseRule()
    settings_record = RunSettings(check_rule.describe(), same_within=same_within, sweep=axis, lab_timing=lab_timing)
    where = placement(gpus, executor, slurm)
    if where.spread:
        return spread_matrix(ResultKind.SWEEP, chosen, inputs, timing.policy_for, check_rule, where, {
            "policy": timing.record(), "baseline": baseline, "command": command, "settings": settings_record.to_dict()},
            listener, notice, lab_timing=lab_timing)
    gpu = open_gpu_for(chosen, device)
    settings = MatrixSettings(policy=timing.policy_for, check=check_rule.check(), tolerance=check_rule.tolerance,
                              timer=LabTimer() if lab_timing else None)
    start = time.perf_counter()

    def finish(infos: list, cells: list) -> ResultSet:
        settings_record.elapsed_s = time.perf_counter() - start
        return assemble(ResultKind.SWEEP, chosen, infos, cells, gpu, timing.record(), baseline, settings_record, command)

    return _matrix(chosen, inputs, gpu, settings, listener, finish)


__all__ = [
    "RunOutcome", "SlurmOptions", "TimingOptions", "case_names", "check_same_gpu", "check_same_inputs", "choose_variant", "common_selection",
    "compare", "expected_inputs", "open_gpu", "open_gpu_for", "resume", "run", "sweep", "variant_names",
]
