"""The compare matrix: variants x inputs, each cell checked before it is timed, and its verdicts.

`run_matrix` runs the cells (input by input, so each testcase and reference is loaded once);
`MatrixView` turns a result set into speedups against a baseline with their uncertainty, verdicts
and geometric means; `against` compares a run with a saved one, cell by cell, and counts regressions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

from attnbench.errors import AttnbenchError, ResultsError, UnknownName
from attnbench.inputs import BenchInput, CaseInfo, ProgressFactory, no_progress
from attnbench.results import ERROR, OK, REFUSED, WRONG, Cell, ResultSet
from attnbench.runner import Timer, execute_checked
from attnbench.timing import TimingPolicy
from attnbench.variants import REGISTRY, Variant, get_variant
from attnbench.verdict import (
    DEFAULT_SAME_WITHIN,
    GeometricMean,
    TimeComparison,
    Verdict,
    compare_stats,
    geometric_mean,
    geometric_mean_speedup,
    is_regression,
)
from attnbench.verify import COURSE_ATOL, VerifyReport, compare_outputs

# The ladder of the reports, in the order the reports climb it (report 004 first, then the others);
# `--variants ladder` takes the registered ones, in registry order.
LADDER_VARIANTS = (
    "kernels", "fused", "maxsmem", "splitq", "float4", "restructure", "coalesced", "reglm", "bankfree", "qreg",
    "tiled", "gemm", "online", "singlehead", "naive",
)
PEER_NAMES = ("torch",)
EXIT_CAP = 255


# -- choosing variants ------------------------------------------------------------------------
def variants_for(selector: str) -> list[Variant]:
    """Variants named by a comma list: names, `all` (every GPU variant), `ladder`, `torch`, `exe:PATH` (a program)."""
    chosen: list[Variant] = []
    for part in (p.strip() for p in selector.split(",") if p.strip()):
        if part == "all":
            group = [v for v in REGISTRY.values() if v.backend == "gpu"]
        elif part == "ladder":
            group = [v for v in REGISTRY.values() if v.name in LADDER_VARIANTS]
            if not group:
                raise UnknownName("no ladder variant is registered yet (see `attnbench list`)")
        elif part.startswith("exe:"):
            from attnbench.bench.programs import program_variant

            group = [program_variant(part)]
        else:
            group = [get_variant(part)]
        chosen.extend(v for v in group if v not in chosen)
    if not chosen:
        raise UnknownName("no variant named; give --variants, e.g. --variants naive,bankfree,torch")
    return chosen


# -- running the matrix ---------------------------------------------------------------------------
class MatrixListener(Protocol):
    """What the matrix tells its user while it runs."""

    progress: ProgressFactory

    def start(self, total_cells: int, total_work: float) -> None: ...

    def cell_started(self, variant: str, case: str) -> None: ...

    def cell_finished(self, cell: Cell, work: float) -> None: ...


class QuietListener:
    progress: ProgressFactory = staticmethod(no_progress)  # type: ignore[assignment]

    def start(self, total_cells: int, total_work: float) -> None:
        pass

    def cell_started(self, variant: str, case: str) -> None:
        pass

    def cell_finished(self, cell: Cell, work: float) -> None:
        pass


Check = Callable[[np.ndarray, np.ndarray], Any]  # (output, reference) -> object with `passed` and `to_dict()`


def course_check(atol: float = COURSE_ATOL, rtol: float = 0.0) -> Check:
    """The course's rule (every element within atol + rtol*|ref|), with every error metric recorded."""
    return lambda output, reference: compare_outputs(output, reference, atol, rtol)


def failure_summary(check: Any) -> str:
    """One line saying how an output failed its check."""
    if isinstance(check, VerifyReport):
        text = f"{check.failing} of {check.elements} elements fail {check.rule()}"
        if check.nan_count or check.inf_count:
            text += f" ({check.nan_count} NaN, {check.inf_count} Inf)"
        if check.worst is not None:
            text += f"; worst {check.worst}"
        return text
    describe = getattr(check, "describe", None)
    return describe() if callable(describe) else "the output failed its check"


@dataclass
class MatrixSettings:
    """How each cell is checked and timed."""

    policy: Callable[[Variant], TimingPolicy]
    check: Check = field(default_factory=course_check)
    timer: Timer | None = None


def _cell_work(variant: Variant, bench_input: BenchInput) -> float:
    """Expected cost of a cell for the ETA: its FLOPs (a host variant counts 50x)."""
    return float(bench_input.shape.flops) * (50.0 if variant.backend == "cpu" else 1.0)


def run_matrix(
    variants: list[Variant],
    inputs: list[BenchInput],
    gpu: Any | None,
    settings: MatrixSettings,
    listener: MatrixListener | None = None,
) -> tuple[list[CaseInfo], list[Cell]]:
    """Run every (variant, input) cell: refused shapes are recorded, wrong outputs get no speed."""
    listener = listener or QuietListener()
    work = {(v.name, i.label): _cell_work(v, i) for i in inputs for v in variants if v.refusal(i.shape) is None}
    listener.start(len(variants) * len(inputs), sum(work.values()))
    infos: list[CaseInfo] = []
    cells: list[Cell] = []
    lost: str | None = None  # why the CUDA context is gone (a kernel fault): the remaining cells are not run
    for bench_input in inputs:
        takers = [v for v in variants if v.refusal(bench_input.shape) is None]
        testcase = reference = None
        if takers and not lost:
            testcase = bench_input.load(listener.progress)
            infos.append(bench_input.info(testcase))
            reference = bench_input.reference(testcase, listener.progress)
        else:  # nothing to run: do not generate or load it
            infos.append(CaseInfo(bench_input.label, bench_input.shape, None, "not loaded", "",
                                  lost or "every variant refused it"))
        for variant in variants:
            reason = variant.refusal(bench_input.shape)
            if reason is not None or lost:
                cell = Cell(variant.name, bench_input.label, REFUSED if reason else ERROR, reason or lost or "")
                listener.cell_finished(cell, 0.0)
                cells.append(cell)
                continue
            listener.cell_started(variant.name, bench_input.label)
            cell = _run_cell(variant, bench_input.label, testcase, reference, gpu, settings)
            listener.cell_finished(cell, work[(variant.name, bench_input.label)])
            cells.append(cell)
            if cell.status == ERROR and gpu is not None and variant.backend != "cpu":
                broken = gpu.context_error()
                if broken is not None:
                    lost = (f"not run: the CUDA context was lost after {variant.name} failed on {bench_input.label} "
                            f"({broken})")
        del testcase, reference
    return infos, cells


def _run_cell(variant: Variant, label: str, testcase: Any, reference: np.ndarray, gpu: Any | None,
              settings: MatrixSettings) -> Cell:
    if variant.backend == "program":  # a whole program: process time and its output's check, no kernel time
        from attnbench.bench.programs import program_cell

        return program_cell(variant, label, testcase, reference, settings.check, failure_summary)
    extra: dict[str, Any] = {}
    try:
        if variant.backend == "gpu":
            extra["defines"] = variant.defines(testcase.shape)
        run = execute_checked(variant, testcase, label, gpu, settings.policy(variant),
                              lambda output: settings.check(output, reference), settings.timer)
    except AttnbenchError as exc:
        return Cell(variant.name, label, ERROR, str(exc), extra=extra)
    except Exception as exc:  # a driver error that escaped the runner's wrapping
        if type(exc).__module__.split(".")[0] in ("pycuda", "torch"):
            return Cell(variant.name, label, ERROR, f"{type(exc).__name__}: {exc}", extra=extra)
        raise
    check = run.check.to_dict() if hasattr(run.check, "to_dict") else None
    timer_extra = getattr(settings.timer, "last_extra", None)
    if run.measurement is None:
        return Cell(variant.name, label, WRONG, failure_summary(run.check), None, check, extra)
    if timer_extra:
        extra.update(timer_extra)
    return Cell(variant.name, label, OK, "", run.measurement, check, extra)


# -- reading a matrix ------------------------------------------------------------------------------
@dataclass
class MatrixView:
    """Speedups against a baseline, verdicts and geometric means, for display and export."""

    result: ResultSet
    baseline: str | None = None
    same_within: float = DEFAULT_SAME_WITHIN

    def __post_init__(self) -> None:
        if self.baseline is None:
            self.baseline = self.result.baseline
        if self.baseline is not None and self.baseline not in self.result.variant_names:
            self.baseline = None

    def comparison(self, variant: str, case: str) -> TimeComparison | None:
        """This cell against the baseline's cell on the same input, when both were timed."""
        if self.baseline is None:
            return None
        base, cell = self.result.cell(self.baseline, case), self.result.cell(variant, case)
        if base is None or cell is None or not base.ok or not cell.ok:
            return None
        assert base.stats is not None and cell.stats is not None
        return compare_stats(base.stats, cell.stats, self.same_within)

    def speedups(self, variant: str) -> list[TimeComparison]:
        found = (self.comparison(variant, case) for case in self.result.case_labels)
        return [c for c in found if c is not None]

    def geomean_speedup(self, variant: str) -> GeometricMean | None:
        return geometric_mean_speedup(self.speedups(variant))

    def geomean_tflops(self, variant: str) -> float | None:
        values = [c.measurement.tflops for c in self.result.cells if c.variant == variant and c.ok and c.measurement]
        return geometric_mean(values)

    def counts(self, variant: str) -> dict[str, int]:
        found = {OK: 0, WRONG: 0, REFUSED: 0, ERROR: 0}
        for cell in self.result.cells:
            if cell.variant == variant:
                found[cell.status] += 1
        return found


def failures(result: ResultSet) -> int:
    """Cells whose output was wrong or that failed to run."""
    return sum(1 for c in result.cells if c.status in (WRONG, ERROR))


def exit_status(result: ResultSet, report: "AgainstReport | None" = None) -> int:
    """Wrong or failed cells, plus regressions against a saved run, capped at 255."""
    count = failures(result) + (report.regressions if report is not None else 0)
    return min(EXIT_CAP, count)


# -- against a saved run ----------------------------------------------------------------------------
NOW_WRONG, STILL_WRONG, FIXED, NEW, GONE = "NOW WRONG", "STILL WRONG", "FIXED", "NEW", "NOT RUN"


@dataclass
class AgainstRow:
    variant: str
    case: str
    saved: Cell | None
    current: Cell | None
    comparison: TimeComparison | None
    outcome: str  # SAME / FASTER / SLOWER, or NOW WRONG, STILL WRONG, FIXED, NEW, NOT RUN, refused
    regression: bool
    note: str = ""


@dataclass
class AgainstReport:
    """Every common cell of two runs with its verdict; regressions are counted for the exit status."""

    saved_name: str
    rows: list[AgainstRow]
    fail_slower: float | None
    same_within: float
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> int:
        """Speed regressions (SLOWER beyond noise and past --fail-slower) among cells timed in both runs."""
        return sum(1 for r in self.rows if r.regression)

    @property
    def timed_rows(self) -> list[AgainstRow]:
        return [r for r in self.rows if r.comparison is not None]

    def tally(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for row in self.rows:
            found[row.outcome] = found.get(row.outcome, 0) + 1
        return found

    @property
    def same_fraction(self) -> float | None:
        timed = self.timed_rows
        if not timed:
            return None
        return sum(1 for r in timed if r.outcome == Verdict.SAME.value) / len(timed)

    def summary(self) -> str:
        """'against X: FASTER 1, SAME 30, SLOWER 2; SAME on 91% of the cells timed in both; 1 regression(s) ...'"""
        tally = ", ".join(f"{k} {v}" for k, v in sorted(self.tally().items()))
        same = self.same_fraction
        same_text = f"; SAME on {100 * same:.0f}% of the cells timed in both" if same is not None else ""
        threshold = f" and by more than {100 * self.fail_slower:g}%" if self.fail_slower is not None else ""
        return (f"against {self.saved_name}: {tally}{same_text}; "
                f"{self.regressions} regression(s) (SLOWER beyond noise{threshold})")


def check_same_gpu(gpu_facts: dict | None, saved: ResultSet, allow_other_gpu: bool = False) -> list[str]:
    """Refuse a saved run from another device (name and SM count) unless allowed; returns notes."""
    now_gpu, then_gpu = gpu_facts or {}, saved.metadata.get("gpu") or {}
    now_name, then_name = now_gpu.get("name", "no GPU"), then_gpu.get("name", "no GPU")
    if (now_name, now_gpu.get("sm_count")) == (then_name, then_gpu.get("sm_count")):
        return []
    message = (f"{saved.name} was measured on {then_name} ({then_gpu.get('sm_count', '?')} SMs) and this run on "
               f"{now_name} ({now_gpu.get('sm_count', '?')} SMs)")
    if not allow_other_gpu:
        raise ResultsError(message + "; pass --allow-other-gpu to compare anyway")
    return [message]


def check_same_inputs(cases: list[CaseInfo], saved: ResultSet, allow_other_inputs: bool = False) -> list[str]:
    """Refuse inputs whose bytes (sha256) differ from the saved run's, unless allowed; returns notes."""
    notes = []
    for case in cases:
        then = saved.case(case.label)
        if then is None or not case.input_sha256 or not then.input_sha256 or case.input_sha256 == then.input_sha256:
            continue
        message = (f"input {case.label} differs from the one {saved.name} measured "
                   f"(sha256 {case.input_sha256[:12]}... vs {then.input_sha256[:12]}...)")
        if not allow_other_inputs:
            raise ResultsError(message + "; pass --allow-other-inputs to compare anyway")
        notes.append(message)
    return notes


def check_comparable(current: ResultSet, saved: ResultSet, allow_other_gpu: bool = False,
                     allow_other_inputs: bool = False) -> list[str]:
    """Refuse a saved run from another device or with other input bytes, unless allowed; returns notes
    on what else differs (L2 flushing, variant sources, compiler options)."""
    notes = check_same_gpu(current.metadata.get("gpu"), saved, allow_other_gpu)
    notes += check_same_inputs(current.cases, saved, allow_other_inputs)
    if saved.policy and current.policy.get("flush_l2") != saved.policy.get("flush_l2"):
        notes.append("one run flushed the L2 cache before each sample and the other did not (--hot)")
    for variant in current.variants:
        then_variant = saved.variant(variant.name)
        if then_variant is None:
            continue
        if then_variant.source_hash and variant.source_hash and then_variant.source_hash != variant.source_hash:
            notes.append(f"{variant.name}: its source changed since {saved.name}")
        elif then_variant.nvcc_options != variant.nvcc_options:
            notes.append(f"{variant.name}: compiled with other options than in {saved.name}")
    return notes


def against(current: ResultSet, saved: ResultSet, same_within: float = DEFAULT_SAME_WITHIN,
            fail_slower: float | None = None, notes: list[str] | None = None) -> AgainstReport:
    """Each cell of `current` against the same (variant, input) in `saved`."""
    rows: list[AgainstRow] = []
    for cell in current.cells:
        then = saved.cell(cell.variant, cell.case)
        if then is None:
            rows.append(AgainstRow(cell.variant, cell.case, None, cell, None, NEW, False, "not in the saved run"))
            continue
        if cell.status == REFUSED:
            rows.append(AgainstRow(cell.variant, cell.case, then, cell, None, REFUSED, False, cell.message))
        elif cell.status == OK and cell.measurement is None:  # a whole program: no kernel time to compare
            rows.append(AgainstRow(cell.variant, cell.case, then, cell, None, "-", False,
                                   "a program: process time only, not compared"))
        elif cell.ok and then.ok:
            assert then.stats is not None and cell.stats is not None
            comparison = compare_stats(then.stats, cell.stats, same_within)
            rows.append(AgainstRow(cell.variant, cell.case, then, cell, comparison, comparison.verdict.value,
                                   is_regression(comparison, fail_slower)))
        elif cell.ok:
            rows.append(AgainstRow(cell.variant, cell.case, then, cell, None, FIXED, False,
                                   f"was {then.status} in the saved run"))
        elif then.ok:
            rows.append(AgainstRow(cell.variant, cell.case, then, cell, None, NOW_WRONG, False, cell.message))
        else:
            rows.append(AgainstRow(cell.variant, cell.case, then, cell, None, STILL_WRONG, False, cell.message))
    for then in saved.cells:
        if current.cell(then.variant, then.case) is None and then.variant in current.variant_names \
                and then.case in current.case_labels:
            rows.append(AgainstRow(then.variant, then.case, then, None, None, GONE, False))
    if not any(r.saved is not None and r.current is not None for r in rows):
        raise ResultsError(f"this run and {saved.name} have no (variant, input) cell in common")
    return AgainstReport(saved.name, rows, fail_slower, same_within, list(notes or []))


def expected_inputs(inputs: list[BenchInput]) -> list[CaseInfo]:
    """What the inputs' bytes will be before they are loaded: the suite's recorded sha256 where known."""
    from attnbench.inputs import SuiteInput

    return [CaseInfo(i.label, i.shape, i.case.input_sha256, "suite") for i in inputs if isinstance(i, SuiteInput)]


def common_selection(saved: ResultSet) -> tuple[str, str]:
    """The variants and inputs of a saved run, as --variants and --cases selectors."""
    return ",".join(saved.variant_names), ",".join(saved.case_labels)


def relative_noise_text(noise: float) -> str:
    return f"±{100 * noise:.1f}%" if math.isfinite(noise) else "±?"
