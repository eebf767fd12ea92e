"""A run against a saved one, cell by cell: verdicts from the measured noise, and regressions counted."""

from __future__ import annotations

from dataclasses import dataclass, field

from attnbench.analysis.verdict import DEFAULT_SAME_WITHIN, TimeComparison, Verdict, compare_stats, is_regression
from attnbench.cases.inputs import BenchInput, CaseInfo, SuiteInput
from attnbench.errors import ResultsError
from attnbench.results.resultset import IMPOSSIBLE, OK, REFUSED, Cell, ResultSet

NOW_WRONG, STILL_WRONG, FIXED, NEW, GONE = "NOW WRONG", "STILL WRONG", "FIXED", "NEW", "NOT RUN"
RESHAPED = "NOT COMPARED"  # the same case name, another shape (the suite took the course's real shapes in version 3)
TOO_FAST = "IMPOSSIBLE"  # timed below the physical floor: no speed to compare


@dataclass
class AgainstRow:
    variant: str
    case: str
    saved: Cell | None
    current: Cell | None
    comparison: TimeComparison | None
    outcome: str  # SAME / FASTER / SLOWER, or NOW WRONG, STILL WRONG, IMPOSSIBLE, FIXED, NEW, NOT RUN, refused
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

    def to_dict(self, saved_path: str | None = None) -> dict:
        """What a saved run records of its comparison: the saved run it was measured against (name and
        path), each cell's verdict with its medians and change, the regressions and the summary."""
        def median(cell: Cell | None) -> float | None:
            return cell.stats.median if cell is not None and cell.ok and cell.stats is not None else None

        return {
            "saved": self.saved_name, "saved_path": saved_path, "same_within": self.same_within,
            "fail_slower": self.fail_slower, "regressions": self.regressions, "summary": self.summary(),
            "notes": list(self.notes),
            "cells": [{"variant": r.variant, "case": r.case, "verdict": r.outcome, "regression": r.regression,
                       "saved_ms": median(r.saved), "now_ms": median(r.current),
                       "change": r.comparison.change if r.comparison is not None else None,
                       "change_text": r.comparison.describe_change() if r.comparison is not None else "",
                       "note": r.note} for r in self.rows],
        }

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
        if then is not None and then.shape != case.shape:
            notes.append(reshaped(case, then, saved.name))  # its cells are not compared (`against`)
            continue
        if then is None or not case.input_sha256 or not then.input_sha256 or case.input_sha256 == then.input_sha256:
            continue
        message = (f"input {case.label} differs from the one {saved.name} measured "
                   f"(sha256 {case.input_sha256[:12]}... vs {then.input_sha256[:12]}...)")
        if not allow_other_inputs:
            raise ResultsError(message + "; pass --allow-other-inputs to compare anyway")
        notes.append(message)
    return notes


def reshaped(case: CaseInfo, then: CaseInfo, saved_name: str) -> str:
    """Why a case's cells are not compared: its shape is not the one the saved run measured."""
    def text(shape: object) -> str:
        return "({B}, {N}, {d})".format(**{k: getattr(shape, k) for k in "BNd"})

    return (f"{case.label} is {text(case.shape)} here and was {text(then.shape)} in {saved_name}: the suite's "
            f"version 3 took the course's published shapes, so its cells are not compared")


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
        now_case, then_case = current.case(cell.case), saved.case(cell.case)
        if now_case is not None and then_case is not None and now_case.shape != then_case.shape:
            rows.append(AgainstRow(cell.variant, cell.case, then, cell, None, RESHAPED, False,
                                   reshaped(now_case, then_case, saved.name)))
            continue
        if cell.status == REFUSED:
            rows.append(AgainstRow(cell.variant, cell.case, then, cell, None, REFUSED, False, cell.message))
        elif cell.status == OK and cell.measurement is None:  # a whole program: no kernel time to compare
            rows.append(AgainstRow(cell.variant, cell.case, then, cell, None, "-", False,
                                   "a program: process time only, not compared"))
        elif cell.status == IMPOSSIBLE:
            rows.append(AgainstRow(cell.variant, cell.case, then, cell, None, TOO_FAST, False, cell.message))
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
    return [CaseInfo(i.label, i.shape, i.case.input_sha256, "suite") for i in inputs if isinstance(i, SuiteInput)]


def common_selection(saved: ResultSet) -> tuple[str, str]:
    """The variants and inputs of a saved run, as --variants and --cases selectors (a user's file by
    the path it was given as)."""
    cases = [c.note if c.origin == "file" and c.note else c.label for c in saved.cases]
    return ",".join(saved.variant_names), ",".join(cases)
