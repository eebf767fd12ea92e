"""The precision ladder's points (attnbench.analysis.precision): worst error over the tolerance, geometric-mean
speed over the timed cells, WRONG cells kept with their error and no speed, the Pareto front."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from attnbench.analysis.precision import (
    PrecisionPoint,
    error_share,
    mark_pareto,
    pareto_front,
    precision_points,
    spans_precisions,
)
from attnbench.results.resultset import VariantInfo
from tests.synthetic import COURSE_SHAPES, result_set

ARITHMETIC = {"wgmma3x": "3xTF32 (wgmma)", "wgmma16s": "split FP16 + FP16", "torch": "3xTF32", "torch:fp16": "FP16",
              "torch:bf16": "BF16"}


def ladder(times: dict, errors: dict) -> object:
    """A result with each variant's arithmetic and each cell's worst error under the course's absolute rule."""
    result = result_set(times, COURSE_SHAPES)
    result.variants = [VariantInfo(v, "x", "t", "gpu", None, None, (), "float32", ARITHMETIC[v]) for v in times]
    for cell in result.cells:
        cell.check = {**cell.check, "atol": 5e-3, "rtol": 0.0, "max_abs_error": errors[cell.variant][cell.case]}
    return result


def test_one_point_per_variant_its_worst_cell_and_its_geomean_speed():
    cases = ("t10", "t22")
    times = {"wgmma3x": {c: 1.0 for c in cases}, "wgmma16s": {"t10": 0.5, "t22": 0.25},
             "torch:fp16": {"t10": 0.01, "t22": None}, "torch:bf16": {c: None for c in cases}}
    errors = {"wgmma3x": {"t10": 1e-6, "t22": 2e-6}, "wgmma16s": {"t10": 1e-3, "t22": 0.5e-3},
              "torch:fp16": {"t10": 4e-3, "t22": 7e-3}, "torch:bf16": {"t10": 2e-2, "t22": 4e-2}}
    points = {p.variant: p for p in precision_points(ladder(times, errors))}
    exact, split, fp16, bf16 = (points[v] for v in times)
    assert exact.worst_share == pytest.approx(4e-4) and split.worst_share == pytest.approx(0.2)
    assert split.arithmetic == "split FP16 + FP16" and split.passes and split.timed == 2 and split.wrong == 0
    t10, t22 = (COURSE_SHAPES[c].flops for c in cases)
    assert split.tflops == pytest.approx(math.sqrt(t10 / 0.5e-3 * t22 / 0.25e-3) / 1e12, rel=1e-3)
    # partly WRONG: its worst error is the wrong cell's; its speed is that of the cell that was timed
    assert fp16.worst_share == pytest.approx(1.4) and not fp16.passes and (fp16.timed, fp16.wrong) == (1, 1)
    assert fp16.tflops == pytest.approx(t10 / 0.01e-3 / 1e12, rel=1e-3)
    # WRONG everywhere: an error, no speed, never on the front
    assert bf16.tflops is None and bf16.worst_share == pytest.approx(8.0) and not bf16.pareto and bf16.wrong == 2
    assert [p.variant for p in pareto_front(list(points.values()))] == ["wgmma3x", "wgmma16s", "torch:fp16"]


def test_the_front_leaves_out_what_another_beats_on_both():
    def point(name: str, share: float, tflops: float | None) -> PrecisionPoint:
        return PrecisionPoint(name, "", share, tflops, 1, int(tflops is not None), 0, 5e-3)

    marked = mark_pareto([point("slow_exact", 1e-4, 50.0), point("fast_exact", 1e-4, 120.0),
                          point("fast_loose", 0.3, 120.0), point("faster_loose", 0.3, 250.0),
                          point("fastest_wrong", 2.0, 450.0), point("untimed", 1e-6, None)])
    assert [p.variant for p in marked if p.pareto] == ["fast_exact", "faster_loose", "fastest_wrong"]
    assert [p.variant for p in pareto_front(marked)] == ["fast_exact", "faster_loose", "fastest_wrong"]


def test_no_ladder_without_two_arithmetics_or_an_absolute_check():
    times = {"wgmma3x": {"t10": 1.0}, "torch": {"t10": 2.0}}
    result = ladder(times, {"wgmma3x": {"t10": 1e-6}, "torch": {"t10": 1e-6}})
    assert spans_precisions(precision_points(result))  # 3xTF32 (wgmma) and 3xTF32
    result.variants = [replace(info, arithmetic="") for info in result.variants]  # saved before it was recorded
    assert not spans_precisions(precision_points(result))
    for cell in result.cells:
        cell.check["rtol"] = 1e-3  # a relative rule: no share of an absolute tolerance
    assert precision_points(result) == [] and error_share(result.cells[0]) is None
