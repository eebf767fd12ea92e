"""Repeating a saved run: its selection names a user's file by the path it was given as."""

from attnbench.analysis.against import common_selection
from attnbench.cases.inputs import CaseInfo
from attnbench.cases.testcase import Shape
from attnbench.results import metadata
from tests.synthetic import COURSE_SHAPES, result_set


def test_a_saved_file_input_is_repeated_by_its_path():
    saved = result_set({"cpu": {"t10": 1.0, "mine.in": 2.0}}, {"t10": COURSE_SHAPES["t10"], "mine.in": Shape(2, 8, 4)})
    saved.cases = [CaseInfo("t10", COURSE_SHAPES["t10"], None, "suite"),
                   CaseInfo("mine.in", Shape(2, 8, 4), None, "file", "user file", "/data/cases/mine.in")]
    assert common_selection(saved) == ("cpu", "t10,/data/cases/mine.in")


def test_the_commit_given_to_a_copied_tree_wins_over_its_git(monkeypatch):
    monkeypatch.setenv("ATTNBENCH_GIT_COMMIT", "abc1234")
    assert metadata.git_state() == {"commit": "abc1234", "dirty": None, "source": "ATTNBENCH_GIT_COMMIT"}
    monkeypatch.delenv("ATTNBENCH_GIT_COMMIT")
    assert metadata.git_state().get("source") is None
