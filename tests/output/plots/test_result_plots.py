import pytest

from attnbench.cases.sweeps import SQUARE_SIZES
from attnbench.cases.testcase import Shape
from attnbench.output.export import save
from attnbench.output.plots import result_plots as plots
from attnbench.output.render.report import write_report
from attnbench.results import resultset as results
from tests.synthetic import COURSE_SHAPES, H200, result_set

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


def test_the_ceilings_chart_draws_the_roofline_roofs_of_the_gpu(monkeypatch):
    from attnbench.output.plots import roofline

    monkeypatch.setattr(roofline, "newest_for_name", lambda name: None)  # nothing cached on this machine
    r = result_set({"a": {"t10": 1.0}}, {"t10": COURSE_SHAPES["t10"]})  # its GPU without the datasheet's facts
    assert plots.device_ceilings(r) == [("FP32 peak from the clocks (datasheet; run `attnbench ceilings`)", 66.9)]
    r = result_set({"a": {"t10": 1.0}}, {"t10": COURSE_SHAPES["t10"]}, gpu={**H200, "memory_bus_bits": 6144})
    assert plots.device_ceilings(r) == [(roof.label, roof.tflops) for roof in roofline.roofs(r)]
    names = [name for name, _ in plots.device_ceilings(r)]
    assert names[0].startswith("FP32 FFMA peak") and any("3xTF32" in name for name in names)


def test_each_plot_is_written_and_listed_once(tmp_path):
    r = result_set({"a": {"t10": 1.0, "t11": 2.0}}, {k: COURSE_SHAPES[k] for k in ("t10", "t11")})
    written = plots.plots_for(r, tmp_path, "x")
    assert len(written) == len(set(written)) and tmp_path / "x_roofline.png" in written


def _precision_ladder(all_wrong: bool = True):
    """wgmma3x and wgmma16s timed; torch:fp16 WRONG on one case; torch:bf16 WRONG on every case (no speed)."""
    cases = ("t10", "t22")
    times = {"wgmma3x": {c: 1.0 for c in cases}, "wgmma16s": {c: 0.5 for c in cases},
             "torch:fp16": {"t10": 0.2, "t22": None}}
    arithmetic = {"wgmma3x": "3xTF32 (wgmma)", "wgmma16s": "split FP16 + FP16", "torch:fp16": "FP16"}
    if all_wrong:
        times["torch:bf16"] = {c: None for c in cases}
        arithmetic["torch:bf16"] = "BF16"
    r = result_set(times, {c: COURSE_SHAPES[c] for c in cases})
    r.variants = [results.VariantInfo(v, "x", "t", "gpu", None, None, (), "float32", a) for v, a in arithmetic.items()]
    errors = {"wgmma3x": 1e-6, "wgmma16s": 1e-3, "torch:fp16": 7e-3, "torch:bf16": 4e-2}
    for cell in r.cells:
        cell.check = {**cell.check, "atol": 5e-3, "rtol": 0.0, "max_abs_error": errors[cell.variant]}
    return r


@pytest.mark.parametrize("all_wrong", [True, False], ids=["with a no-speed strip", "every variant timed somewhere"])
def test_the_precision_ladder_plot(tmp_path, all_wrong):
    from attnbench.output.plots.precision_ladder import error_vs_speed, has_precision_ladder

    r = _precision_ladder(all_wrong)
    assert has_precision_ladder(r)
    path = error_vs_speed(r, tmp_path / "p.png")
    assert path.read_bytes().startswith(PNG)
    assert tmp_path / "x_precision.png" in plots.plots_for(r, tmp_path, "x")


def test_the_report_draws_the_precision_ladder_and_tables_it(tmp_path):
    path = save(_precision_ladder(), tmp_path, "ladder")[0]
    outcome = write_report([results.load(path)], tmp_path / "report.md")
    assert tmp_path / "report_1_precision.png" in outcome.plots
    text = outcome.path.read_text()
    assert "![Precision ladder: worst error against speed](report_1_precision.png)" in text
    assert "Precision ladder: worst error against speed" in text and "| torch:bf16 | BF16 | 8 | no speed |" in text


def test_no_precision_ladder_where_one_arithmetic_ran(tmp_path):
    from attnbench.output.plots.precision_ladder import has_precision_ladder

    r = result_set({"a": {"t10": 1.0}, "b": {"t10": 2.0}}, {"t10": COURSE_SHAPES["t10"]})
    assert not has_precision_ladder(r)
    assert not any(p.name.endswith("_precision.png") for p in plots.plots_for(r, tmp_path, "x"))
