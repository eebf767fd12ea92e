"""A run's problems and exit status, read from its measurement (the command line prints and exits with them)."""

from __future__ import annotations

import numpy as np

from attnbench.analysis.run_verdict import RunOutcome, run_exit_status, run_problems
from attnbench.bench.verify import compare_outputs
from attnbench.cases.testcase import Shape
from tests.synthetic import measurement

SHAPE = Shape(2, 16, 8)


def test_a_clean_run_has_no_problem_and_exits_0():
    outcome = RunOutcome.of(measurement("naive", "t02", SHAPE, 1.0), "out.bin")
    assert outcome.problems == () and outcome.exit_status == 0


def test_nan_without_a_check_is_named_with_the_output_file_and_exits_1():
    m = measurement("naive", "t02", SHAPE, 1.0)
    m.nonfinite = 3
    line = (f"3 of {SHAPE.elements} elements of out.bin are NaN or Inf: the output is wrong (run with --check for "
            "the worst elements)")
    assert run_problems(m, "out.bin") == [line]
    assert run_exit_status(m) == 1


def test_a_failed_check_has_its_own_table_not_a_problem_line_and_exits_1():
    m = measurement("naive", "t02", SHAPE, 1.0)
    reference = np.zeros(SHAPE.elements, dtype=np.float32)
    output = reference.copy()
    output[:2] = np.nan
    m.verification = compare_outputs(output, reference)
    m.nonfinite = 2
    assert run_problems(m, "out.bin") == [] and run_exit_status(m) == 1


def test_an_outcome_has_to_dict_and_from_dict_as_the_docs_promise():
    """docs/running.md: each returned object "has `to_dict`, and `from_dict` rebuilds it"; a RunOutcome had neither
    (AttributeError)."""
    m = measurement("naive", "t02", SHAPE, 1.0)
    outcome = RunOutcome(m, ("SUSPECT: naive on t02: a reason",), 1)
    again = RunOutcome.from_dict(outcome.to_dict())
    assert again.to_dict() == outcome.to_dict() and again.problems == outcome.problems and again.exit_status == 1
