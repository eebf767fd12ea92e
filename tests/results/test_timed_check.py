"""The verified passes' record: its verdict and sentences come from its fields, and it survives saving."""

from __future__ import annotations

import json

from attnbench.results.resultset import Cell, ResultSet, dumps, loads
from attnbench.results.timed_check import SKIPPED_WORK, WRONG_VALUES, ClockDisagreement, TimedCheck, VerifiedPass

KINDS = ["batch items permuted", "Q rows permuted", "K and V rows permuted together", "V negated"]


def record(failure=None, passes=None, warning=None) -> TimedCheck:
    passes = passes or [VerifiedPass(KINDS, True, 27.8, 27.9, 0, 0, 1e-6), VerifiedPass(KINDS, False, 27.7, 27.8, 0, 0,
                                                                                         2e-6)]
    return TimedCheck(passes, 1310720, 5e-3, 0.0, "the first pass's output", 0.0093, 0.011, 0.0665, failure, warning,
                      "rule")


def test_a_pass_says_so():
    timed = record()
    assert timed.passed and "2 timed passes on changed inputs gave the expected output" in timed.describe()


def test_wrong_values_name_the_pass_and_the_count():
    timed = record(WRONG_VALUES, [VerifiedPass(KINDS, True, 0.0093, 0.05, 1310720, 1310720, 0.0)])
    assert not timed.passed
    assert timed.describe() == (
        "the timed passes did not produce the checked output: after the samples, verified pass 1 (output poisoned "
        "with NaN, batch items permuted, Q rows permuted, K and V rows permuted together, V negated) gave 1310720 of "
        "1310720 elements outside |out - expected| <= 0.005 of the first pass's output (1310720 NaN or Inf)")


def test_skipped_work_gives_the_ratio_of_the_times():
    passes = [VerifiedPass(KINDS, True, 27.8, 27.9, 0, 0, 1e-6, attempt) for attempt in (1, 2, 3)]
    timed = record(SKIPPED_WORK, passes)
    assert timed.describe().startswith("the timed passes were 2989x faster than a pass that had to compute "
                                       "(0.0093 ms against 27.8 ms on a changed input, over the limit of 0.0665 ms "
                                       "on every one of 3 attempts)")


def test_the_record_round_trips_through_strict_json():
    warning = ClockDisagreement(0.01, 27.9, 2.0125)
    timed = record(warning=warning)
    assert "0.010 ms" in warning.sentence() and warning.remedy in warning.sentence()
    result = ResultSet("compare", {}, {}, [], [], [Cell("lazy", "t22", "wrong", timed.describe(), None, None, {},
                                                        timed.to_dict())])
    text = dumps(result)
    json.loads(text, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))  # no NaN or Infinity
    again = loads(text).cells[0].timed_check
    assert TimedCheck.from_dict(again) == timed and again["passed"] is True


def test_cells_saved_before_the_verified_passes_load_without_them():
    cell = Cell.from_dict({"variant": "qreg", "case": "t10", "status": "ok"})
    assert cell.timed_check is None
