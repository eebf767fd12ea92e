"""`attnbench compare`'s run: a checked, timed matrix of variants x cases, here or spread over GPUs or Slurm; the
names its variants and cases are selected by, and the GPU the variants need (`run` and `sweep` open it alike).
The options, the plan and the verdicts against a saved run are `attnbench.api.compare_plan`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN, check_same_within
from attnbench.api.notices import Notice, quiet, say_suite_writes
from attnbench.api.spread import SlurmOptions, placed_matrix, placement
from attnbench.api.timing_options import TimingOptions
from attnbench.bench.check_rule import CourseRule
from attnbench.bench.verify import COURSE_ATOL
from attnbench.cases.inputs import BenchInput, bytes_to_write, inputs_for
from attnbench.errors import GpuUnavailable, UsageError
from attnbench.kernels.catalogue import baseline_name, variants_for
from attnbench.kernels.variant import Variant
from attnbench.locations import data_dir
from attnbench.results.resultset import ResultKind, ResultSet
from attnbench.results.run_settings import RunSettings
from attnbench.sandbox import MODES as SANDBOX_MODES
from attnbench.sandbox.reaper import subreaper_restored
from attnbench.spread.executor import Listener


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


def open_gpu_for(variants: Sequence[Variant], device: int = 0, listed: bool = False) -> Any | None:
    """Check the torch peer first (one sentence if missing), then open the GPU if any variant needs it.
    `listed`: the variants came from --variants (compare, sweep), which the remedy then names."""
    if any(v.kind.needs_torch for v in variants):
        from attnbench.backends.torch_peer import import_torch

        import_torch()
    needing = [v.name for v in variants if v.kind.needs_gpu]
    if not needing:
        return None
    try:
        return open_gpu(device)
    except GpuUnavailable as exc:
        if not listed or exc.remedy is None:
            raise
        # "or use --variant cpu" named an option compare and sweep do not take
        named = ", ".join(needing) if len(needing) <= 3 else f"its {len(needing)} GPU variants"  # `all`: 21 names
        raise GpuUnavailable(exc.reason, f"or leave {named} out of --variants") from None


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
    listener: Listener | None = None,
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
    without it), "required" (SandboxUnavailable, exit 3, when none can be made) or "none". `listener` hears
    the run's typed events (`results.matrix_events`: the run begun, each cell started and finished with its
    work, a job's bars), whichever executor runs it."""
    from attnbench.backends.program import program_confinement

    if sandbox not in SANDBOX_MODES:
        raise UsageError(f"--sandbox {sandbox}: one of {', '.join(SANDBOX_MODES)}")
    try:
        same_within = check_same_within(same_within)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    chosen = variants_from(variants)
    if device != 0 and not any(v.kind.needs_gpu for v in chosen):  # a GPU asked for that no cell would touch
        raise UsageError(f"--device {device}: none of {', '.join(v.name for v in chosen)} runs on a GPU; drop --device")
    unconfined = program_confinement(chosen, sandbox)
    if unconfined is not None:
        notice(f"exe: programs: {unconfined}")
    if any(v.kind.whole_program for v in chosen):
        from attnbench.backends.kernel_records import unavailable

        no_kernels = unavailable()
        if no_kernels is not None:  # said once here; each program cell keeps it too
            notice(f"exe: programs: {no_kernels}; their process time and checks as before")
    inputs = inputs_for(cases)
    say_suite_writes(bytes_to_write(inputs), data_dir(), notice)  # before the first file is written
    names = [v.name for v in chosen]
    timed = [v.name for v in chosen if not v.kind.whole_program]  # a program has no kernel time to compare
    baseline = baseline_name(baseline, chosen)
    check_rule = CourseRule(atol, rtol)
    record = {"policy": timing.record(), "baseline": baseline or (timed or names)[0], "command": command,
              "settings": RunSettings(check_rule.describe(), atol, rtol, same_within).to_dict()}
    with subreaper_restored():  # an exe: program's run makes this process its orphans' reaper, for the run only
        return placed_matrix(ResultKind.COMPARE, chosen, inputs, timing.policy_for, check_rule,
                             placement(gpus, executor, slurm), record, listener, notice, before_run,
                             program_sandbox=sandbox, open_here=lambda: open_gpu_for(chosen, device, listed=True), device=device)
