"""The record of a cell's checked samples: its verdict and sentences come from its fields, and it survives saving."""

from __future__ import annotations

import json

import numpy as np

from attnbench.results.resultset import Cell, ResultSet, dumps, loads
from attnbench.results.timed_check import (
    REPEAT,
    TIMED,
    UNPOISONED,
    WARMUP,
    ClockDisagreement,
    DifferingRows,
    SampleErrors,
    SampleFailure,
    TimedCheck,
    WorstElement,
)

N, D = 1024, 64


def errors(nonfinite=0, failing_rows=(), worst=None) -> SampleErrors:
    rows = list(failing_rows)
    return SampleErrors(nonfinite, 5 * N * D + 3 * D + 7 if nonfinite else None, 1375, rows[:8], len(rows),
                        3 * len(rows), worst)


def record(failure=None, clock=None, differing=None) -> TimedCheck:
    return TimedCheck(42, 42, 1375, 20 * N, 5e-3, 0.0, failure, clock, differing, 3)


def test_a_pass_says_how_many_samples_and_rows():
    timed = record()
    assert timed.passed and timed.describe() == ("42 passes, each on a fresh input, each output scanned for NaN and "
                                                 "Inf and 1375 rows checked exactly within |out - exact| <= 0.005")


def test_a_failure_names_the_sample_the_rows_and_the_worst_element():
    worst = WorstElement(3, 17, 5, 0.0, 0.4172, 0.4172)
    failure = SampleFailure(7, TIMED, N, D, errors(failing_rows=[3 * N + 17, 9 * N + 2], worst=worst))
    timed = record(failure)
    assert not timed.passed
    assert timed.describe() == (
        "a launch did not compute the answer: timed sample 7 (on a fresh input): 2 of 1375 rows checked exactly "
        "were wrong (item, row: (3, 17), (9, 2)); worst O[3, 17, 5] = 0, exact 0.4172 (|error| 0.417), outside "
        "|out - exact| <= 0.005")


def test_nan_in_the_output_names_the_first_one():
    failure = SampleFailure(1, WARMUP, N, D, errors(nonfinite=10))
    assert "warm-up pass 1 (on a fresh input): 10 NaN or Inf elements in the output (the first O[5, 3, 7]" \
        in record(failure).describe()


def test_the_launches_after_the_samples_say_what_they_were():
    repeat = SampleFailure(2, REPEAT, N, D, errors(nonfinite=3))
    assert record(repeat).describe().startswith("a launch did not compute the answer: launch 2 of one fresh input "
                                                "launched twice (the output poisoned before each): 3 NaN or Inf")
    stale = SampleFailure(1, UNPOISONED, N, D, errors(failing_rows=[5]))
    assert "the launch on a fresh input with the output not poisoned first: 1 of 1375 rows" in record(stale).describe()
    assert record(stale).to_dict()["failure"]["warmup"] is False


def test_rows_results_give_the_failing_rows_and_the_worst():
    rows = np.array([5, 2 * N + 1, 7])
    results = np.array([[0, 0, 1e-7, 1.0, 1.0], [4, 9, np.inf, np.nan, 0.25], [1, 3, 0.2, 0.5, 0.3]])
    e = SampleErrors.from_row_results(0, 123, rows, results, N)
    assert e.failing_rows == [2 * N + 1, 7] and e.failing_row_count == 2 and e.failing_elements == 5
    assert e.first_nonfinite is None and not e.passed
    assert (e.worst.item, e.worst.row, e.worst.column, e.worst.want, e.worst.error) == (2, 1, 9, 0.25, np.inf)


def test_the_record_round_trips_through_strict_json():
    worst = WorstElement(3, 17, 5, float("nan"), 0.4172, float("inf"))
    failure = SampleFailure(7, TIMED, N, D, errors(nonfinite=2, failing_rows=[3 * N + 17], worst=worst))
    for timed in (record(clock=ClockDisagreement(0.01, 27.9, 2.0125), differing=DifferingRows([4, N + 2], 2, N)),
                  record(failure)):
        # a cell without a measurement (an ok one must carry one): the record is what round-trips here
        result = ResultSet("compare", {}, {}, [], [], [Cell("x", "t08", "wrong", timed.describe(), None, None, {},
                                                            timed.to_dict())])
        text = dumps(result)
        json.loads(text, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))  # no NaN or Infinity
        again = TimedCheck.from_dict(loads(text).cells[0].timed_check)
        assert again.describe() == timed.describe() and again.passed == timed.passed


def test_the_warnings_carry_their_remedies():
    timed = record(clock=ClockDisagreement(0.01, 27.9, 2.0125), differing=DifferingRows([4, N + 2], 2, N))
    clock, race = timed.warnings()
    assert "0.010 ms" in clock.sentence() and clock.remedy in clock.sentence()
    assert "different bits in 2 output rows (item, row: (0, 4), (1, 2))" in race.text and "racecheck" in race.remedy


def test_verified_passes_saved_before_fresh_samples_still_load():
    old = {"passes": [{"kinds": [], "poisoned": True, "time_ms": 1.0, "wall_ms": 1.0, "failing": 9, "nonfinite": 0,
                       "max_abs_error": 0.0}], "elements": 10, "atol": 5e-3, "rtol": 0.0, "expected_from": "",
           "median_ms": 1.0, "max_sample_ms": 1.0, "time_limit_ms": 2.0, "failure": "wrong_values"}
    timed = TimedCheck.from_dict(old)
    assert not timed.passed and "wrong values" in timed.describe()


def test_cells_saved_before_the_verified_passes_load_without_them():
    cell = Cell.from_dict({"variant": "qreg", "case": "t10", "status": "ok"})
    assert cell.timed_check is None
