"""Reading a matrix spread over several GPUs: verdicts only within one GPU model."""

from __future__ import annotations

from attnbench.analysis.view import MatrixView, gpu_model
from attnbench.output.tables.result_tables import speedup_text
from tests.synthetic import COURSE_SHAPES, result_set

TWO = {k: COURSE_SHAPES[k] for k in ("t10", "t29")}


def spread_over(models: dict[tuple[str, str], str]):
    result = result_set({"a": {"t10": 2.0, "t29": 4.0}, "b": {"t10": 1.0, "t29": 2.0}}, TWO)
    for cell in result.cells:
        cell.extra["gpu"] = {"index": 0, "name": models[(cell.variant, cell.case)], "uuid": None}
    return result


def test_cells_on_one_model_get_verdicts_and_cells_on_two_do_not():
    result = spread_over({("a", "t10"): "NVIDIA H200", ("b", "t10"): "NVIDIA H200",
                          ("a", "t29"): "NVIDIA H100", ("b", "t29"): "NVIDIA H200"})
    view = MatrixView(result, "a")
    assert view.comparison("b", "t10") is not None and round(view.comparison("b", "t10").speedup) == 2
    assert view.missing_reason("b", "t10") is None
    assert view.comparison("b", "t29") is None
    reason = "- (no verdict: a ran on NVIDIA H100, this cell on NVIDIA H200)"
    assert view.missing_reason("b", "t29") == reason
    assert speedup_text(view, "b", "t29").text == reason
    assert len(view.speedups("b")) == 1  # the geometric mean leaves out the cross-model pair


def test_a_cell_without_its_own_record_ran_on_the_runs_gpu():
    result = result_set({"a": {"t10": 2.0}, "b": {"t10": 1.0}}, {"t10": COURSE_SHAPES["t10"]})
    assert gpu_model(result, result.cells[0]) == "NVIDIA H200"
    assert MatrixView(result, "a").comparison("b", "t10") is not None
