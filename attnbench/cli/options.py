"""Options shared by several commands, and the small conversions between them and the API."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any, Callable

import click

from attnbench.api import EXECUTOR_OPTIONS, TimingOptions, case_names, parse_percent, slurm_options, variant_names
from attnbench.api.timing_options import MAX_PASSES as MAX_REPS
from attnbench.output.render.terminal import err_console, printable


def finite(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A float option's callback: NaN and infinity are refused (click's FloatRange lets them through)."""
    if value is not None and (value != value or value in (float("inf"), float("-inf"))):
        raise click.BadParameter("must be a finite number")
    return value


def file_stem(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--name's callback: an empty stem (an unset variable, say) is refused, not replaced by the default silently."""
    if value is not None and not value.strip():
        raise click.BadParameter('is empty (""): give a file stem, or leave --name out for the default')
    return value


timing_options = [
    click.option("--warmup", type=click.IntRange(0, MAX_REPS), default=None,
                 help=f"Untimed passes first, at most {MAX_REPS:,} [GPU: 2, cpu: 0]."),
    click.option("--reps", type=click.IntRange(1, MAX_REPS), default=None,
                 help=f"Fixed sample count, at most {MAX_REPS:,} (default: sample until the noise is low)."),
    click.option("--hot", is_flag=True, help="Do not flush the L2 cache before each timed pass."),
    click.option("--timeout", type=click.FloatRange(0, min_open=True), default=None, callback=finite,
                 help="Seconds at most for adaptive sampling [GPU: 10, cpu: 2]."),
    click.option("--noise", "noise", type=click.FloatRange(0, min_open=True), default=1.0, show_default=True,
                 callback=finite, help="Target relative noise, percent."),
    click.option("--device", type=click.IntRange(0), default=0, show_default=True, help="CUDA device index."),
]


placement_options = [
    click.option("--gpus", default=None, metavar="all|0,1,...",
                 help="Spread the cases over this host's GPUs, one worker process each (a case's variants share one GPU)."),
    click.option("--executor", type=click.Choice(EXECUTOR_OPTIONS), default="local", show_default=True,
                 help="slurm: run the cells as Slurm jobs of about a minute each, through submitit (the slurm extra)."),
    click.option("--partition", default=None, help="Slurm partition (e.g. nvidia)."),
    click.option("--gres", default=None, help="Slurm generic resources per job (e.g. gpu:1)."),
    click.option("--time", "time_min", type=click.IntRange(1), default=30, show_default=True,
                 help="Slurm time limit of each job, minutes."),
    click.option("--array-parallelism", type=click.IntRange(1), default=16, show_default=True,
                 help="Slurm jobs of the array running at once."),
    click.option("--job-seconds", type=click.FloatRange(0, min_open=True), default=60.0, hidden=True, callback=finite,
                 help="Slurm: the estimated length jobs are packed to."),
]


def placement_from(kwargs: dict[str, Any], results_dir: str) -> dict[str, Any]:
    """Pop --gpus, --executor and the Slurm options: keyword arguments for api.CompareOptions and api.sweep."""
    gpus, executor = kwargs.pop("gpus"), kwargs.pop("executor")
    slurm = slurm_options(executor, results_dir, partition=kwargs.pop("partition"), gres=kwargs.pop("gres"),
                          time_min=kwargs.pop("time_min"), array_parallelism=kwargs.pop("array_parallelism"),
                          job_seconds=kwargs.pop("job_seconds"))
    return {"gpus": gpus, "executor": executor, "slurm": slurm}


def with_options(options: list[Callable]) -> Callable:
    def decorate(f: Callable) -> Callable:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def timing_from(kwargs: dict[str, Any]) -> TimingOptions:
    """Pop the timing options out of a command's keyword arguments."""
    return TimingOptions(warmup=kwargs.pop("warmup"), reps=kwargs.pop("reps"), hot=kwargs.pop("hot"),
                         timeout=kwargs.pop("timeout"), noise=kwargs.pop("noise"))


def percent(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_percent(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def tolerance(name: str, default: float, help_text: str) -> Callable:
    """--atol / --rtol: a finite number >= 0."""
    return click.option(name, type=click.FloatRange(0), default=default, show_default=True, help=help_text,
                        callback=finite)


def command_line() -> str | None:
    """The command as typed, for saved results (None when not run as `attnbench`)."""
    program = Path(sys.argv[0]).name if sys.argv else ""
    if program in ("attnbench", "__main__.py"):
        return " ".join(["attnbench", *map(shlex.quote, sys.argv[1:])])
    return None


def error_line(text: str) -> None:
    """One line on stderr, whatever the terminal's width."""
    err_console.print(f"error: {printable(text)}", highlight=False, markup=False, soft_wrap=True)


def notice(text: str) -> None:
    """A one-line note on stderr."""
    err_console.print(f"note: {printable(text)}", highlight=False, markup=False, soft_wrap=True)


def _complete_list(names: list[str], incomplete: str) -> list:
    """Complete the last part of a comma list (`qreg,ba` -> `qreg,bankfree`)."""
    from click.shell_completion import CompletionItem

    head, comma, last = incomplete.rpartition(",")
    return [CompletionItem(head + comma + name) for name in names if name.startswith(last)]


def complete_variants(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Shell completion of variant names (with flavours and yours), groups and comma lists of them."""
    try:
        return _complete_list(variant_names(), incomplete)
    except Exception:  # a broken attnbench.toml must not break the user's shell: no completion instead
        return []


def complete_cases(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Shell completion of suite case names and groups; a path completes as a file."""
    from click.shell_completion import CompletionItem

    found = _complete_list(case_names(), incomplete)
    return found or [CompletionItem(incomplete, type="file")]


def once(*names: str, **kwargs: Any) -> Callable:
    """An option given at most once (its default None): a second `--variant b` is refused in one line,
    not silently the one that counts."""
    long_name = next(n for n in names if n.startswith("--"))

    def only_once(ctx: click.Context, param: click.Parameter, values: tuple) -> Any:
        if len(values) > 1:
            raise click.UsageError(f"{long_name} given {len(values)} times ({', '.join(map(str, values))}); "
                                   "give it once", ctx=ctx)
        return values[0] if values else None

    return click.option(*names, **kwargs, multiple=True, callback=only_once)


_SAVING = ("plot", "name", "with_html")  # what --no-save makes meaningless
_SLURM = ("partition", "gres", "time_min", "array_parallelism")  # what only --executor slurm reads


def refuse_what_would_be_ignored(ctx: click.Context) -> None:
    """Options the rest of the command line makes meaningless are refused, not dropped without a word:
    `--no-save --plot` wrote no plot and `--partition x` without `--executor slurm` ran here, both with exit 0."""
    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) not in (click.core.ParameterSource.DEFAULT, None)

    def words(names: tuple[str, ...]) -> list[str]:
        return [param.opts[0] for param in ctx.command.params if param.name in names and given(param.name)]

    slurm = ctx.params.get("executor") == "slurm" or ctx.params.get("resume_folder") is not None
    if ctx.params.get("no_save"):
        unsaved = words(_SAVING if slurm else (*_SAVING, "results_dir"))  # a Slurm run keeps its jobs there
        if unsaved:
            raise click.UsageError(f"--no-save saves nothing, so {', '.join(unsaved)} would be ignored; drop "
                                   f"{'it' if len(unsaved) == 1 else 'them'} or --no-save")
    if not slurm:
        unused = words(_SLURM)
        if unused:
            raise click.UsageError(f"{', '.join(unused)} {'is' if len(unused) == 1 else 'are'} for --executor slurm, "
                                   "and this run is here")
