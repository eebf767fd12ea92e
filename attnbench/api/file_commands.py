"""The API over files on disk: check an output against a reference (`verify`), generate suite cases,
load saved results and compare a run against one. The command line renders what these return."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence

from attnbench.analysis.against import AgainstReport, against, check_comparable
from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN
from attnbench.api.empty_arguments import refuse_empty
from attnbench.api.notices import Notice, quiet
from attnbench.bench.check_rule import refuse_bad_tolerance
from attnbench.bench.verify import COURSE_ATOL, compare_outputs
from attnbench.cases import suite
from attnbench.cases.inputs import ProgressFactory, SuiteInput, no_progress, resolve
from attnbench.cases.testcase import OutputFile, Shape, read_checked_shape
from attnbench.errors import NotResultsFile, OutputError, ReferenceNotFinite, ResultsError, TestcaseError
from attnbench.locations import DATA_ENV
from attnbench.results.resultset import ResultSet, load
from attnbench.results.verification import VerifyReport


def _suite_reference(name: str, progress: ProgressFactory, notice: Notice) -> tuple[Path, Shape]:
    """A suite case's stored float64 reference, made (and said so) the first time it is asked for."""
    case = suite.SUITE[name]
    bench_input = SuiteInput(case)
    bench_input.prepare(progress)
    stored = suite.stored_reference(case)  # a changed one is refused here, before any check
    if stored is None:
        notice(f"computing the float64 reference of {name} ({case.shape}) once; it is stored for next time")
        with progress(f"float64 reference of {name}", case.shape.B * case.shape.N) as advance:
            stored = suite.generate_reference(case, advance)
    return stored, case.shape


def _known_shape(ref_path: Path, case: str | None) -> Shape | None:
    """B, N, d from --case (the suite's manifest, or a file's header: nothing is generated for it), or from an
    input file beside the reference; None when neither says."""
    if case is not None:
        return resolve(case).shape
    sibling = ref_path.with_suffix(".in")
    if not sibling.is_file() or sibling == ref_path:
        return None
    try:  # a guess, not a file the user gave: one that is not a testcase (a report written over it) says nothing
        return read_checked_shape(sibling)
    except (TestcaseError, OSError):
        return None


def _why_no_shape(ref_path: Path, case: str | None) -> str:
    """Why an input beside the reference told no shape, where one is there (a damaged one was passed over in
    silence)."""
    sibling = ref_path.with_suffix(".in")
    if case is not None or not sibling.is_file() or sibling == ref_path:
        return ""
    try:
        read_checked_shape(sibling)
    except (TestcaseError, OSError) as exc:
        return f" (the input beside it is not read: {exc})"
    return ""


def _refuse_an_input_as_reference(path: Path, given: str) -> None:
    """A testcase input given as REF (its header and its size agree) is refused: its bytes compared as an
    output meant nothing, and the same file as OUT and REF passed with exit 0."""
    try:
        shape = read_checked_shape(path)
    except (TestcaseError, OSError):
        return  # not an input: read as an output
    raise TestcaseError(f"{given}: a testcase input ({shape}), not a reference output; give REF as a reference "
                        "output or a suite case's name, and the input with --case")


def _check_if_a_suite_reference(path: Path) -> None:
    """A suite reference named by its path is checked against its record too (a changed one is refused)."""
    found = suite.suite_file_at(path)
    case = suite.SUITE.get(found.stem) if found is not None and found.suffix == ".ref" else None
    if case is not None:
        suite.stored_reference(case)


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
    refuse_bad_tolerance(atol, rtol)
    refuse_empty("out", out, "the output file")
    refuse_empty("ref", ref, "a reference file or a suite case")
    refuse_empty("case", case, "a suite case or an input file")
    ref_text = str(ref)
    ref_path = Path(ref)
    if not ref_path.exists() and ref_text in suite.SUITE:
        shape = suite.SUITE[ref_text].shape  # the manifest's: everything checked before any file is made
        if case is not None:  # a --case must agree with the suite case REF names, never be ignored
            given = _known_shape(ref_path, case)
            if given != shape:
                raise TestcaseError(f"{case}: its shape {given} is not that of the suite case {ref_text} ({shape}); "
                                    "drop --case, or give the matching one")
        OutputFile(out, shape).close()  # a wrong size is said before the input and its reference are made
        ref_path, _ = _suite_reference(ref_text, progress, notice)
    elif not ref_path.exists():
        raise TestcaseError(f"{ref_text}: no such file, and no suite case of that name")
    else:
        _refuse_an_input_as_reference(ref_path, ref_text)
        _check_if_a_suite_reference(ref_path)
        shape = _known_shape(ref_path, case)
    with OutputFile(out, shape) as got, OutputFile(ref_path, shape) as want:
        if got.size != want.size:
            raise TestcaseError(f"{out}: {got.size * 4} bytes, but the reference {ref_text} has {want.size * 4}; "
                                "they cannot hold the same output")
        if shape is None:
            notice(f"B, N, d unknown{_why_no_shape(ref_path, case)}: positions are flat element indices (pass --case "
                   "for batch, row, column)")
        try:
            report = compare_outputs(got, want, atol, rtol, shape=shape)
        except ReferenceNotFinite as exc:
            raise ReferenceNotFinite(f"{ref_text}: {exc}") from None
    return report, ref_path


def generate(names: Sequence[str], *, reference: bool = True, force: bool = False,
             progress: ProgressFactory = no_progress, notice: Notice = quiet) -> list[suite.SuiteCase]:
    """Generate suite inputs (and their float64 references) from their recorded seeds. Inputs already there are
    checked against their recorded sha256 first: one that is not the suite's (changed, or a user's file of that
    name) is refused before anything is written, and replaced only with `force`. A reference whose bytes changed
    since it was computed is computed again, and said so."""
    chosen = suite.cases_in(names)
    if not force:  # every file checked before anything is written: no case replaces a file attnbench did not write
        for case in chosen:
            suite.refuse_foreign_input(case)
            suite.check_input_bytes(case)
    _say_what_will_be_written(chosen, reference, force, notice)
    for case in chosen:
        redo_input = force or not suite.is_generated(case)
        if redo_input:
            with progress(f"generating {case.name}", 3 * case.shape.elements) as advance:
                suite.generate_input(case, advance, force=force)
        if not reference:
            continue
        state = "missing" if force or redo_input else suite.reference_state(case)
        if state == "changed":
            notice(f"{suite.reference_path(case)}: its bytes changed since it was computed; computing it again")
        if state != "ok":
            with progress(f"float64 reference of {case.name}", case.shape.B * case.shape.N) as advance:
                suite.generate_reference(case, advance, force=True)
    return chosen


SIZE_NOTICE_BYTES = 100 << 20  # below this, generating takes seconds and is not worth a line


def _say_what_will_be_written(cases: list[suite.SuiteCase], reference: bool, force: bool, notice: Notice) -> None:
    """Before a large generation (`gen all`: about 15 GB), say how much goes where; refuse one the disk
    cannot hold, before writing anything."""
    total = 0
    for case in cases:
        total += case.shape.input_bytes if force or not suite.is_generated(case) else 0
        if reference:
            total += case.shape.output_bytes if force or not suite.has_reference(case) else 0
    if total < SIZE_NOTICE_BYTES:
        return
    folder = suite.data_dir()
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    free = shutil.disk_usage(existing).free
    if total > free:
        raise OutputError(f"{folder}: {len(cases)} case(s) need {total / 1e9:.1f} GB, but only {free / 1e9:.1f} GB "
                          f"is free there (set {DATA_ENV} to a larger folder)")
    notice(f"writing {total / 1e9:.1f} GB ({len(cases)} case(s): inputs" + (" and float64 references" if reference
           else "") + f") to {folder}; Ctrl-C stops cleanly, and what is done is kept")


def suite_cases(selector: str | Sequence[str] = "all") -> list[suite.SuiteCase]:
    """The suite's cases a selector names: names, groups (`all`, `course`, `known`, ...) and ranges (t01-t10)."""
    return suite.cases_in(selector)


def load_results(path: str | Path) -> ResultSet:
    """A saved compare, sweep or judge (any schema version this attnbench reads)."""
    refuse_empty("path", path, "a results JSON file")
    return load(path)


def results_for_report(paths: Sequence[str | Path], notice: Notice = quiet) -> list[ResultSet]:
    """The saved runs a report is made of. Among several files (`attnbench-results/*.json`), one that is not a
    results file at all (a ceilings cache, a profile) is left out with a note; a results file that is
    damaged, or a single file given alone, is refused."""
    loaded = []
    for path in paths:
        try:
            loaded.append(load(path))
        except NotResultsFile as exc:
            if len(paths) == 1:
                raise
            notice(f"{exc}; left out")
    if not loaded:
        raise ResultsError(f"none of the {len(paths)} files given is an attnbench results file")
    return loaded


def against_saved(result: ResultSet, saved: ResultSet, same_within: float = DEFAULT_SAME_WITHIN,
                  fail_slower: float | None = None, allow_other_gpu: bool = False,
                  allow_other_inputs: bool = False) -> AgainstReport:
    """Each cell of `result` against the same cell of a saved run, with regressions counted."""
    notes = check_comparable(result, saved, allow_other_gpu, allow_other_inputs)
    return against(result, saved, same_within, fail_slower, notes)
