"""`attnbench sweep`: the square-attention lab's sizes, or a sweep of N or d of the (B, N, d) workload; a compare
over generated inputs (the same matrix, here or spread)."""

from __future__ import annotations

from collections.abc import Sequence

from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN, check_same_within
from attnbench.api.compare_command import open_gpu_for
from attnbench.api.notices import Notice, quiet
from attnbench.api.spread import SlurmOptions, placed_matrix, placement
from attnbench.api.timing_options import TimingOptions
from attnbench.bench.check_rule import CheckRule, CourseRule, LabRule
from attnbench.cases.sweeps import parse_sizes, parse_values, shape_inputs, square_inputs, sweep_axis
from attnbench.errors import UsageError
from attnbench.kernels.catalogue import baseline_name, variants_for
from attnbench.results.resultset import ResultKind, ResultSet
from attnbench.results.run_settings import RunSettings
from attnbench.spread.executor import Listener


def _listed(given: str | Sequence[int], name: str) -> str:
    """Sizes or values as the command line gives them (text): a Python list of whole numbers is that list."""
    if isinstance(given, str):
        return given
    try:
        items = list(given)
    except TypeError:
        raise ValueError(f"{name}={given!r}: give text such as '64,128' or a list of whole numbers") from None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise ValueError(f"{name}={given!r}: a list of whole numbers, such as [64, 128]")
    if any(v < 1 for v in items):  # sizes=[-3] became the text "-3", read as a range: "--sizes '': not a whole number"
        raise ValueError(f"{name}={given!r}: a list of whole numbers >= 1, such as [64, 128]")
    return ",".join(str(v) for v in items)


# The arguments each axis reads, with the defaults that stand for "not given": from Python, one given for another
# axis (square with values=[3], N with lab_timing=True) was dropped without a word, as the command line never does.
_AXIS_ARGUMENTS = {"square": ("sizes", "lab_timing"), "N": ("values", "batch", "head_dim"),
                   "d": ("values", "batch", "seq_len")}
_NOT_GIVEN = {"sizes": "all", "lab_timing": False, "values": None, "batch": None, "seq_len": 2048, "head_dim": 64}


def _refuse_arguments_of_other_axes(axis: str, given: dict[str, object]) -> None:
    ignored = [name for name, value in given.items()
               if name not in _AXIS_ARGUMENTS[axis] and value != _NOT_GIVEN[name]]
    if ignored:
        raise UsageError(f"sweep {axis} does not use {', '.join(f'{n}={given[n]!r}' for n in ignored)}; drop "
                         f"{'it' if len(ignored) == 1 else 'them'}")


def sweep(
    what: str,
    variants: str | Sequence[str],
    *,
    sizes: str | Sequence[int] = "all",
    values: str | Sequence[int] | None = None,
    batch: int | None = None,
    seq_len: int = 2048,
    head_dim: int = 64,
    baseline: str | None = None,
    lab_timing: bool = False,
    timing: TimingOptions = TimingOptions(),
    device: int = 0,
    same_within: float = DEFAULT_SAME_WITHIN,
    listener: Listener | None = None,
    command: str | None = None,
    gpus: str | None = None, executor: str = "local", slurm: SlurmOptions | None = None, notice: Notice = quiet,
) -> ResultSet:
    """The square-attention lab's sizes (`square`), or a sweep of N or d of the (B, N, d) workload;
    `gpus` and `executor` spread it as for `compare`."""
    try:
        swept = sweep_axis(what)
        same_within = check_same_within(same_within)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    axis = swept.name
    _refuse_arguments_of_other_axes(axis, {"sizes": sizes, "lab_timing": lab_timing, "values": values, "batch": batch,
                                           "seq_len": seq_len, "head_dim": head_dim})
    chosen = variants_for(variants if isinstance(variants, str) else ",".join(variants))
    if device != 0 and not any(v.kind.needs_gpu for v in chosen):  # as compare: a GPU no cell would touch
        raise UsageError(f"--device {device}: none of {', '.join(v.name for v in chosen)} runs on a GPU; drop --device")
    baseline = baseline_name(baseline, chosen)
    try:
        if swept.default_values is None:
            inputs = square_inputs(parse_sizes(_listed(sizes, "sizes")))
        else:
            given = swept.default_values if values is None else values  # --values "" is refused, not the default
            inputs = shape_inputs(axis, parse_values(_listed(given, "values")), batch, seq_len, head_dim)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_rule: CheckRule = LabRule() if axis == "square" else CourseRule()
    settings_record = RunSettings(check_rule.describe(), same_within=same_within, sweep=axis, lab_timing=lab_timing)
    record = {"policy": timing.record(), "baseline": baseline, "command": command,
              "settings": settings_record.to_dict()}
    return placed_matrix(ResultKind.SWEEP, chosen, inputs, timing.policy_for, check_rule,
                         placement(gpus, executor, slurm), record, listener, notice, lab_timing=lab_timing,
                         open_here=lambda: open_gpu_for(chosen, device, listed=True), device=device)
