"""The terminal renderer's progress lines: the noise written as the tables write it."""

from attnbench.cases.testcase import Shape
from attnbench.output.terminal import cell_line
from attnbench.results.measurement import Measurement
from attnbench.results.resultset import OK, Cell
from attnbench.results.stats import KernelStats


def cell_of(samples: list[float]) -> Cell:
    measurement = Measurement(variant="cpu", case="t02", shape=Shape(2, 8, 4), device="CPU", compute_s=0.1,
                              kernel=KernelStats(samples))
    return Cell("cpu", "t02", OK, "", measurement)


def test_an_unknown_noise_is_a_question_mark_not_nan():
    line = cell_line(cell_of([1.0, 1.1, 0.9]))
    assert "±?" in line and "nan" not in line.lower()
    assert "±?" not in cell_line(cell_of([1.0 + i / 1000 for i in range(12)]))
