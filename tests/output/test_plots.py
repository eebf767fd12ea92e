import pytest

from attnbench.cases.sweeps import SQUARE_SIZES
from attnbench.cases.testcase import Shape
from attnbench.output import plots
from attnbench.output.report import write_report
from attnbench.output.save import save
from attnbench.results import resultset as results
from tests.synthetic import COURSE_SHAPES, result_set

pytest.importorskip("matplotlib", reason="matplotlib (the plot extra) is not installed")

PNG = b"\x89PNG\r\n\x1a\n"


def test_throughput_against_size(tmp_path):
    shapes = {f"sq{n}": Shape(1, n, n) for n in SQUARE_SIZES[:12]}
    r = result_set({"gemm": {k: 0.01 * s.N for k, s in shapes.items()}}, shapes, kind="sweep",
                   settings={"sweep": "square"})
    path = plots.throughput_vs_size(r, tmp_path / "t.png")
    assert path.read_bytes().startswith(PNG)


def test_ladder_and_ceilings_through_the_report(tmp_path):
    times = {v: {c: 10.0 / (i + 1) for c in COURSE_SHAPES} for i, v in enumerate(("kernels", "fused", "splitq", "qreg"))}
    r = result_set(times, COURSE_SHAPES)
    path = save(r, tmp_path, "x")[0]
    outcome = write_report([results.load(path)], tmp_path / "report.md")
    names = sorted(p.name for p in outcome.plots)
    assert names == ["report_1_ceilings.png", "report_1_roofline.png", "report_ladder_1.png"]
    assert all(p.read_bytes().startswith(PNG) for p in outcome.plots)
    text = outcome.path.read_text()
    assert "![Against the ceilings](report_1_ceilings.png)" in text and "report_ladder_1.png" in text


def test_ceilings_known_for_the_h200():
    r = result_set({"a": {"t10": 1.0}}, {"t10": COURSE_SHAPES["t10"]})
    names = [name for name, _ in plots.device_ceilings(r)]
    assert "FP32 FFMA (register chains)" in names and "FP32 peak from the clocks" in names


def test_each_plot_is_written_and_listed_once(tmp_path):
    r = result_set({"a": {"t10": 1.0, "t11": 2.0}}, {k: COURSE_SHAPES[k] for k in ("t10", "t11")})
    written = plots.plots_for(r, tmp_path, "x")
    assert len(written) == len(set(written)) and tmp_path / "x_roofline.png" in written
