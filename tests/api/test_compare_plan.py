"""The compare command's API: what a compare runs (a saved run's selection when it repeats one), and
what it leaves for the renderers."""

import pytest

from attnbench import api
from attnbench.api.compare_plan import CompareOptions, plan_compare
from attnbench.errors import UsageError
from attnbench.output.export import save
from tests.synthetic import COURSE_SHAPES, result_set

QUICK = api.TimingOptions(reps=3)


@pytest.fixture
def saved_run(tmp_path):
    result = api.compare("cpu", "odd_17x48", timing=QUICK)
    return save(result, tmp_path, "saved")[0]


def test_a_compare_against_a_saved_run_repeats_its_variants_cases_and_baseline(saved_run):
    plan = plan_compare(CompareOptions(against=str(saved_run), timing=QUICK))
    assert (plan.variants, plan.cases, plan.baseline) == ("cpu", "odd_17x48", "cpu")
    assert plan.saved is not None and plan.save_selector == "odd_17x48"


def test_given_variants_and_cases_win_over_the_saved_runs(saved_run):
    plan = plan_compare(CompareOptions(variants="cpu", cases="odd_17x48,odd_100x32", against=str(saved_run)))
    assert plan.cases == "odd_17x48,odd_100x32" and plan.save_selector is None  # a list names no saved file


def test_a_compare_needs_variants_and_cases_unless_it_resumes(tmp_path):
    with pytest.raises(UsageError):
        plan_compare(CompareOptions(variants="cpu"))
    plan = plan_compare(CompareOptions(resume=str(tmp_path)))
    assert (plan.variants, plan.cases, plan.saved) == ("", "", None)


def test_the_outcome_carries_the_verdicts_against_the_saved_run_and_the_exit_status(saved_run):
    outcome = plan_compare(CompareOptions(against=str(saved_run), timing=QUICK, same_within=10.0)).run()
    assert not outcome.is_sweep and outcome.ladder == {}
    assert outcome.report is not None and outcome.report.regressions == 0 and outcome.exit_status == 0
    assert outcome.result.settings.against["saved_path"] == str(saved_run)


def test_the_ladder_is_there_only_when_asked_for(monkeypatch):
    from attnbench.api import compare_plan as matrix

    monkeypatch.setattr(matrix, "ladder_steps", lambda result, same_within: {"odd_17x48": [same_within]})
    asked = CompareOptions(variants="cpu", cases="odd_17x48", timing=QUICK, ladder=True, same_within=0.03)
    outcome = plan_compare(asked).run()
    assert outcome.ladder == {"odd_17x48": [0.03]} and outcome.report is None
    assert plan_compare(CompareOptions(variants="cpu", cases="odd_17x48", timing=QUICK)).run().ladder == {}


def test_a_wrong_cell_makes_exit_status_1():
    outcome = plan_compare(CompareOptions(variants="cpu", cases="odd_17x48", timing=QUICK, atol=0.0)).run()
    assert outcome.exit_status == 1


def test_a_judges_results_are_refused_as_the_run_to_compare_against_naming_the_file(tmp_path):
    """`compare --against` a judge's saved results said "no variant named 'attention'", naming no file."""
    judged = save(result_set({"attention": {"t10": 400.0}}, {"t10": COURSE_SHAPES["t10"]}, kind="judge"),
                  tmp_path, "judged")[0]
    with pytest.raises(UsageError, match=f"{judged}: a judge's results"):
        plan_compare(CompareOptions(against=str(judged)))


@pytest.mark.parametrize("given", [{"fail_slower": 0.05}, {"allow_other_gpu": True}, {"allow_other_inputs": True}])
def test_an_option_of_against_without_against_is_refused_not_ignored(given):
    """`compare ... --fail-slower 5%` without --against ran and exited 0, the option dropped without a word."""
    with pytest.raises(UsageError, match="--against RESULTS.json"):
        plan_compare(CompareOptions(variants="cpu", cases="odd_17x48", **given))
