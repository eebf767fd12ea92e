"""attnbench.bench.check_rule: the check of every cell as a record (the course's or the lab's)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from attnbench.bench.check_rule import CourseRule, LabRule, refuse_bad_tolerance
from attnbench.bench.sampler import TimingPolicy
from attnbench.bench.squarelab import lab_check
from attnbench.bench.verify import COURSE_ATOL
from attnbench.errors import UsageError
from attnbench.spread.cellgroups import CellPlan


def test_the_course_rule_checks_with_its_tolerances_and_holds_every_samples_check_to_them():
    rule = CourseRule(atol=0.01, rtol=0.1)
    reference = np.ones((1, 4, 8), dtype=np.float32)
    assert rule.tolerance == (0.01, 0.1)
    assert rule.check()(reference + 0.05, reference).passed  # within 0.01 + 0.1 * 1
    assert not CourseRule(atol=0.01).check()(reference + 0.05, reference).passed


def test_the_lab_rule_checks_by_the_labs_rule_and_keeps_the_course_tolerance_for_the_passes():
    assert LabRule().check() is lab_check and LabRule().tolerance == (COURSE_ATOL, 0.0)


def test_a_cell_plan_pickles_with_its_rule_and_makes_the_settings_from_it():
    plan = pickle.loads(pickle.dumps(CellPlan(("cpu",), {"cpu": TimingPolicy()}, LabRule(), lab_timing=True)))
    assert plan.rule == LabRule() and plan.settings().check is lab_check
    course = CellPlan(("cpu",), {"cpu": TimingPolicy()}, CourseRule(0.001, 0.0)).settings()
    assert course.tolerance == (0.001, 0.0) and course.timer is None


def test_each_rule_describes_itself_in_the_sentence_results_save():
    assert CourseRule().describe() == "|out - ref| <= 0.005 per element, float64 reference"
    assert CourseRule(0.01, 0.1).describe() == "|out - ref| <= 0.01 + 0.1*|ref| per element, float64 reference"
    assert LabRule().describe() == "sum |Y - Y_ref| <= 100 n^2 FLT_EPSILON (the lab's rule), float64 reference"


@pytest.mark.parametrize("atol, rtol", [(float("nan"), 0.0), (-1.0, 0.0), (5e-3, float("inf")), (5e-3, -0.1),
                                        ("0.005", 0.0), (True, 0.0)])
def test_a_tolerance_that_is_no_finite_number_at_least_zero_is_refused_not_a_wrong_verdict(atol, rtol):
    """From Python, compare(atol=nan) marked the cpu variant WRONG: nothing passes |err| <= nan."""
    with pytest.raises(UsageError, match="a tolerance must be a finite number >= 0"):
        CourseRule(atol, rtol)
    with pytest.raises(UsageError):
        refuse_bad_tolerance(atol, rtol)
    refuse_bad_tolerance(0, 0.0)
    refuse_bad_tolerance(COURSE_ATOL, 1e-3)
