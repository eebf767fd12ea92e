"""The public API behind `attnbench compare`: the variants and cases a compare runs (a saved run's,
when it repeats one), the matrix run here, spread out or resumed from a Slurm jobs folder, and the run
judged against the saved one. The command line states its options as `CompareOptions`, calls
`plan_compare` and renders the `CompareOutcome` its plan returns.

    from attnbench.api.compare_plan import CompareOptions, plan_compare
    outcome = plan_compare(CompareOptions(against="docs/results/2026-11-26_h100_final_default_peers_t01-t30.json")).run()
    print(outcome.report.summary(), outcome.exit_status)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnbench.analysis.against import (
    AgainstReport,
    check_same_gpu,
    check_same_inputs,
    common_selection,
    expected_inputs,
)
from attnbench.analysis.ladder import LadderStep, ladder_steps
from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN, parse_percent
from attnbench.analysis.view import exit_status
from attnbench.api.compare_command import compare, variants_from
from attnbench.api.file_commands import against_saved, load_results
from attnbench.api.notices import Notice, quiet
from attnbench.api.spread import SlurmOptions, resume
from attnbench.api.timing_options import TimingOptions
from attnbench.bench.verify import COURSE_ATOL
from attnbench.cases import suite
from attnbench.cases.inputs import BenchInput, names_a_file
from attnbench.errors import UsageError
from attnbench.results.resultset import ResultKind, ResultSet
from attnbench.spread.executor import Listener

SUITE_WORDS = frozenset(suite.SUITE) | frozenset(suite.GROUPS) | {"all", "known"}


@dataclass(frozen=True)
class CompareOptions:
    """A compare as the command line states it: selectors as typed, a saved run by its path."""

    variants: str | None = None  # a comma list of variants [default: the saved run's]
    cases: str | None = None  # a comma list of cases [default: the saved run's]
    baseline: str | None = None  # [default: the saved run's when among the variants, else the first]
    timing: TimingOptions = TimingOptions()
    device: int = 0
    atol: float = COURSE_ATOL
    rtol: float = 0.0
    same_within: float = DEFAULT_SAME_WITHIN
    against: str | None = None  # a saved results JSON to compare every common cell with
    fail_slower: float | None = None
    allow_other_gpu: bool = False
    allow_other_inputs: bool = False
    ladder: bool = False  # also each ladder step against the one before
    resume: str | None = None  # a Slurm run's jobs folder to finish instead of running
    gpus: str | None = None
    executor: str = "local"
    slurm: SlurmOptions | None = None
    command: str | None = None
    sandbox: str = "auto"  # how `exe:` programs are confined, as the judge's --sandbox


@dataclass
class CompareOutcome:
    """What a compare leaves for its renderers: the run (a resumed Slurm run may be a sweep), the
    verdicts against the saved run, the ladder's steps when asked for, and the exit status."""

    result: ResultSet
    save_selector: str | None  # the selector the saved files are named after
    report: AgainstReport | None = None
    ladder: dict[str, list[LadderStep]] = field(default_factory=dict)
    exit_status: int = 0

    @property
    def is_sweep(self) -> bool:
        """A resumed Slurm sweep: rendered and saved as a sweep, with no ladder and no saved run."""
        return self.result.kind is ResultKind.SWEEP


@dataclass(frozen=True)
class ComparePlan:
    """A compare with its variants, cases and baseline settled, not run yet."""

    options: CompareOptions
    variants: str
    cases: str
    baseline: str | None
    saved: ResultSet | None  # the run --against names, loaded
    notes: tuple[str, ...] = ()  # what repeating the saved run leaves out, said when it runs

    @property
    def save_selector(self) -> str | None:
        """The cases selector the saved files are named after: one name or group, never a list."""
        return self.cases if self.cases and "," not in self.cases else None

    def run(self, listener: Listener | None = None, notice: Notice = quiet) -> CompareOutcome:
        """Run (or resume) the matrix; a Ctrl-C raises MatrixInterrupted with what was measured."""
        o = self.options
        for note in self.notes:
            notice(note)
        if o.resume is not None:
            result = resume(o.resume, listener=listener, notice=notice)
        else:
            result = compare(self.variants, self.cases, baseline=self.baseline, timing=o.timing, device=o.device,
                             atol=o.atol, rtol=o.rtol, same_within=o.same_within, listener=listener,
                             command=o.command, before_run=self._refuse_incomparable, gpus=o.gpus,
                             executor=o.executor, slurm=o.slurm, notice=notice, sandbox=o.sandbox)
        if result.kind is ResultKind.SWEEP:
            return CompareOutcome(result, result.settings.sweep, exit_status=exit_status(result))
        ladder = ladder_steps(result, o.same_within) if o.ladder else {}
        report = None
        if self.saved is not None:  # the result carries its verdicts and what they were against, saved with it
            report = against_saved(result, self.saved, o.same_within, o.fail_slower, o.allow_other_gpu,
                                   o.allow_other_inputs)
            result.settings.against = report.to_dict(str(self.saved.path) if self.saved.path else None)
        return CompareOutcome(result, self.save_selector, report, ladder, exit_status(result, report))

    def _refuse_incomparable(self, gpu: Any, inputs: list[BenchInput]) -> None:
        """Refuse an incomparable saved run before spending time on the GPU."""
        if self.saved is not None:
            facts = {"name": gpu.name, "sm_count": gpu.sm_count} if gpu is not None else None
            check_same_gpu(facts, self.saved, self.options.allow_other_gpu)
            check_same_inputs(expected_inputs(inputs), self.saved, self.options.allow_other_inputs)
            check_cells_in_common(self.variants, inputs, self.saved, self.options.against or "")


def plan_compare(options: CompareOptions) -> ComparePlan:
    """Settle what a compare runs: the variants and cases given, or the saved run's (and its baseline
    when among the variants); a resumed Slurm run takes them from its jobs folder."""
    if not options.against:  # each judges against a saved run; without one it was dropped without a word
        given = [word for word, on in (("--fail-slower", options.fail_slower is not None),
                                       ("--allow-other-gpu", options.allow_other_gpu),
                                       ("--allow-other-inputs", options.allow_other_inputs)) if on]
        if given:
            raise UsageError(f"{', '.join(given)} {'weighs' if len(given) == 1 else 'weigh'} a run against a saved "
                             "one: give --against RESULTS.json too, or drop it")
    saved = load_results(options.against) if options.against else None
    if saved is not None and saved.kind is ResultKind.JUDGE:  # its "variants" are programs: "no variant named 'hw4'"
        raise UsageError(f"{options.against}: a judge's results (whole programs, process times), not a compare or "
                         "sweep; --against takes a saved compare (judge a program again to compare it)")
    variants, cases, baseline = options.variants, options.cases, options.baseline
    notes: list[str] = []
    if saved is not None:
        saved_variants, saved_cases = common_selection(saved)
        variants = variants or saved_variants
        if not cases:
            cases, notes = _saved_cases_here(saved_cases, options.against or "")
        if baseline is None and saved.baseline in variants.split(","):
            baseline = saved.baseline
    if options.resume is not None:
        variants = cases = ""
    elif not variants or not cases:
        raise UsageError("give variants and cases, or a saved run to repeat")
    return ComparePlan(options, variants, cases, baseline, saved, tuple(notes))


def _saved_cases_here(saved_cases: str, against: str) -> tuple[str, list[str]]:
    """The saved run's cases that can be run here: a user's file it measured, missing here (it was run
    elsewhere), is left out and said so; none left is refused in one line naming the saved run."""
    kept, notes = [], []
    for part in saved_cases.split(","):
        if part in SUITE_WORDS or not names_a_file(part) or Path(part).is_file():
            kept.append(part)
        else:
            notes.append(f"{against}: its input file {part} is not here; that case is left out (--cases chooses)")
    if not kept:
        raise UsageError(f"{against}: none of its inputs is here (its files were {saved_cases}); "
                         "give --cases to choose what to run against it")
    return ",".join(kept), notes


def check_cells_in_common(variants: str, inputs: list[BenchInput], saved: ResultSet, against: str) -> None:
    """Refuse, before any cell runs, a run with no (variant, case) cell in common with the saved one."""
    names = {v.name for v in variants_from(variants)}
    labels = {i.label for i in inputs}
    if not any(c.variant in names and c.case in labels for c in saved.cells):
        raise UsageError(f"{against}: no cell in common with this run (it measured variants "
                         f"{', '.join(saved.variant_names)} on {', '.join(saved.case_labels)}); nothing to compare")


__all__ = ["CompareOptions", "CompareOutcome", "ComparePlan", "exit_status", "parse_percent", "plan_compare"]
