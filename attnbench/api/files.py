"""The API over files on disk: check an output against a reference (`verify`), generate suite cases,
load saved results and compare a run against one. The command line renders what these return."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from attnbench.api.notices import Notice, quiet
from attnbench.analysis.against import AgainstReport, against, check_comparable
from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN
from attnbench.bench.verify import COURSE_ATOL, compare_outputs
from attnbench.cases import suite
from attnbench.cases.inputs import ProgressFactory, SuiteInput, no_progress, resolve
from attnbench.cases.testcase import OutputFile, Shape, read_shape
from attnbench.errors import TestcaseError
from attnbench.results.resultset import ResultSet, load
from attnbench.results.verification import VerifyReport




def _suite_reference(name: str, progress: ProgressFactory, notice: Notice) -> tuple[Path, Shape]:
    """A suite case's stored float64 reference, made (and said so) the first time it is asked for."""
    case = suite.SUITE[name]
    bench_input = SuiteInput(case)
    bench_input.prepare(progress)
    if not suite.has_reference(case):
        notice(f"computing the float64 reference of {name} ({case.shape}) once; it is stored for next time")
        with progress(f"float64 reference of {name}", case.shape.B * case.shape.N) as advance:
            suite.generate_reference(case, advance)
    return suite.reference_path(case), case.shape


def _known_shape(ref_path: Path, case: str | None, progress: ProgressFactory) -> Shape | None:
    """B, N, d from --case, or from an input file beside the reference; None when neither says."""
    if case is not None:
        bench_input = resolve(case)
        bench_input.prepare(progress)
        return bench_input.shape
    sibling = ref_path.with_suffix(".in")
    return read_shape(sibling) if sibling.is_file() and sibling != ref_path else None


def verify(
    out: str | Path,
    ref: str | Path,
    *,
    case: str | None = None,
    atol: float = COURSE_ATOL,
    rtol: float = 0.0,
    progress: ProgressFactory = no_progress,
    notice: Notice = quiet,
) -> tuple[VerifyReport, Path]:
    """Check an output file against a reference file, or a suite case's float64 reference (REF named as
    the case). Positions are (batch, row, column) when the shape is known from `case`, an input file
    beside REF, or the suite; otherwise flat element indices. Returns the report and the reference used."""
    ref_text = str(ref)
    ref_path = Path(ref)
    if not ref_path.exists() and ref_text in suite.SUITE:
        ref_path, shape = _suite_reference(ref_text, progress, notice)
    elif not ref_path.exists():
        raise TestcaseError(f"{ref_text}: no such file, and no suite case of that name")
    else:
        shape = _known_shape(ref_path, case, progress)
    with OutputFile(out, shape) as got, OutputFile(ref_path, shape) as want:
        if got.size != want.size:
            raise TestcaseError(f"{out}: {got.size * 4} bytes, but the reference {ref_text} has {want.size * 4}; "
                                "they cannot hold the same output")
        if shape is None:
            notice("B, N, d unknown: positions are flat element indices (pass --case for batch, row, column)")
        report = compare_outputs(got, want, atol, rtol, shape=shape)
    return report, ref_path


def generate(names: Sequence[str], *, reference: bool = True, force: bool = False,
             progress: ProgressFactory = no_progress) -> list[suite.SuiteCase]:
    """Generate suite inputs (and their float64 references) from their recorded seeds."""
    chosen = suite.cases_in(names)
    for case in chosen:
        if force or not suite.is_generated(case):
            with progress(f"generating {case.name}", 3 * case.shape.elements) as advance:
                suite.generate_input(case, advance, force=force)
        if reference and (force or not suite.has_reference(case)):
            with progress(f"float64 reference of {case.name}", case.shape.B * case.shape.N) as advance:
                suite.generate_reference(case, advance, force=force)
    return chosen


def suite_cases(selector: str | Sequence[str] = "all") -> list[suite.SuiteCase]:
    """The suite's cases a selector names: names, groups (`all`, `course`, `known`, ...) and ranges (t01-t10)."""
    return suite.cases_in(selector)


def load_results(path: str | Path) -> ResultSet:
    """A saved compare, sweep or judge (any schema version this attnbench reads)."""
    return load(path)


def against_saved(result: ResultSet, saved: ResultSet, same_within: float = DEFAULT_SAME_WITHIN,
                  fail_slower: float | None = None, allow_other_gpu: bool = False,
                  allow_other_inputs: bool = False) -> AgainstReport:
    """Each cell of `result` against the same cell of a saved run, with regressions counted."""
    notes = check_comparable(result, saved, allow_other_gpu, allow_other_inputs)
    return against(result, saved, same_within, fail_slower, notes)
