import os
import threading

import pytest
from click.testing import CliRunner

from attnbench.cli import main
from attnbench.errors import PlotsUnavailable
from attnbench.output.export import save
from attnbench.output.plots import result_plots as plots
from attnbench.output.render.report import write_report
from attnbench.results import resultset as results
from tests.synthetic import COURSE_SHAPES, result_set

LADDER = ("kernels", "fused", "maxsmem", "splitq", "float4", "bankfree", "qreg", "torch")


def ladder_results(tmp_path):
    times = {v: {c: 10.0 / (i + 1) for c in COURSE_SHAPES} for i, v in enumerate(LADDER)}
    times["float4"]["t11"] = None
    r = result_set(times, COURSE_SHAPES, baseline="kernels")
    return save(r, tmp_path, "ladder")[0]


@pytest.fixture
def no_matplotlib(monkeypatch):
    def missing():
        raise PlotsUnavailable("plots need matplotlib, which is not installed: pip install 'attnbench[plot]'")

    monkeypatch.setattr(plots, "pyplot", missing)


def test_report_has_environment_tables_ladder_and_claims(tmp_path, no_matplotlib):
    path = ladder_results(tmp_path)
    outcome = write_report([results.load(path)], tmp_path / "report.md")
    text = outcome.path.read_text()
    assert text.startswith("# attnbench report")
    assert "NVIDIA H200" in text and "132 SMs" in text
    assert "### Kernel time" in text and "### TFLOP/s" in text and "### Speedup over kernels" in text
    assert "## The ladder" in text and "GTX 1080" in text
    assert "| fused | 5.000 ms" in text and "2.00 ± 0.0" in text and "4.38x" in text  # 4.305 / 0.984
    assert "| float4 | WRONG" in text
    assert "matplotlib" in " ".join(outcome.notes) and not outcome.plots


def test_report_without_ladder_variants_has_no_ladder_section(tmp_path, no_matplotlib):
    r = result_set({"naive": {"t10": 2.0}, "torch": {"t10": 1.0}}, {"t10": COURSE_SHAPES["t10"]})
    path = save(r, tmp_path, "peers")[0]
    text = write_report([results.load(path)], tmp_path / "r.md").path.read_text()
    assert "## The ladder" not in text
    forced = write_report([results.load(path)], tmp_path / "r2.md", ladder=True).path.read_text()
    assert "fewer than two timed ladder variants" in forced


def test_report_command(tmp_path, no_matplotlib):
    path = ladder_results(tmp_path)
    result = CliRunner().invoke(main, ["report", str(path), "--no-plots"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = path.with_name("ladder_report.md")
    assert out.exists() and "## The ladder" in out.read_text()
    result = CliRunner().invoke(main, ["report", str(tmp_path / "nothing.json")], catch_exceptions=False)
    assert result.exit_code == 2 and "no such results file" in " ".join(result.output.split())


def test_a_cpu_only_report_speaks_of_the_host_clock_not_of_cuda_events(tmp_path, no_matplotlib):
    """A report of runs with no GPU said its times were "medians of CUDA-event samples"."""
    r = result_set({"cpu": {"t10": 2.0}}, {"t10": COURSE_SHAPES["t10"]})
    r.metadata["gpu"] = None
    path = save(r, tmp_path, "cpu_only")[0]
    text = write_report([results.load(path)], tmp_path / "r.md").path.read_text()
    assert "CUDA-event" not in text and "host's wall clock around each pass" in text
    gpu_run = save(result_set({"naive": {"t10": 2.0}}, {"t10": COURSE_SHAPES["t10"]}), tmp_path, "gpu")[0]
    assert "CUDA-event samples" in write_report([results.load(gpu_run)], tmp_path / "g.md").path.read_text()


def test_a_judge_only_report_never_says_its_times_were_checked_before_timed_or_carry_noise(tmp_path, no_matplotlib):
    """A judge's report said "every output was checked ... before it was timed, and a wrong output has no time"
    above a row "NO OUTPUT ... 5.451 s": a judged program runs once and is checked after."""
    judge = result_set({"prog": {"t10": 2.0}}, {"t10": COURSE_SHAPES["t10"]}, kind="judge")
    text = write_report([results.load(save(judge, tmp_path, "judge")[0])], tmp_path / "j.md").path.read_text()
    assert "before it was timed" not in text and "relative noise" not in text
    assert "checked against a float64 reference after it: a failed case keeps its run's time" in text
    both = [results.load(save(judge, tmp_path, "judge2")[0]),
            results.load(save(result_set({"naive": {"t10": 2.0}}, {"t10": COURSE_SHAPES["t10"]}), tmp_path, "g")[0])]
    text = write_report(both, tmp_path / "b.md").path.read_text()
    assert "each printed with its relative noise; every output was checked" in text and "Judged programs" in text


def test_a_report_to_a_pipe_or_device_draws_no_plots_beside_it(tmp_path):
    """`report r.json -o /dev/stdout` wrote its PNG plots into /dev (as root) beside the device."""
    r = result_set({"naive": {"t10": 2.0}, "bankfree": {"t10": 1.0}}, {"t10": COURSE_SHAPES["t10"]})
    path = save(r, tmp_path / "runs", "gpu")[0]
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    read = []
    reader = threading.Thread(target=lambda: read.append(pipe.read_text()))
    reader.start()
    outcome = write_report([results.load(path)], pipe)
    reader.join(timeout=30)
    assert outcome.plots == [] and not list(tmp_path.glob("*.png"))
    assert any("no plots" in note and str(pipe) in note for note in outcome.notes)
    assert read and "# attnbench report" in read[0]


def test_a_results_file_whose_timed_cells_name_no_listed_variant_is_reported_without_a_ceilings_chart(tmp_path):
    """A cell's variant changed by hand (to one the file does not list) ended `report` in a traceback: the ceilings
    chart had nothing to draw (min() of an empty sequence)."""
    r = result_set({"naive": {"t10": 2.0}}, {"t10": COURSE_SHAPES["t10"]})
    r.cells[0].variant = "edited"
    path = save(r, tmp_path / "runs", "edited")[0]
    outcome = write_report([results.load(path)], tmp_path / "r.md")
    assert not any(p.name.endswith("_ceilings.png") for p in outcome.plots) and outcome.path.is_file()


def test_a_saved_command_or_gpu_name_holding_an_escape_code_is_written_escaped(tmp_path, no_matplotlib):
    """The report's Markdown is read with `cat` too: a saved run's command and GPU name went into it raw."""
    r = result_set({"kernels": {c: 1.0 for c in COURSE_SHAPES}}, COURSE_SHAPES, baseline="kernels")
    r.metadata = {**r.metadata, "command": "attnbench compare \x1b[31mred",  # copies: the synthetic metadata
                  "gpu": {**r.metadata["gpu"], "name": "NVIDIA \x1b]0;title\x07H200"}}  # is shared by every test
    path = save(r, tmp_path, "esc")[0]
    text = write_report([results.load(path)], tmp_path / "report.md").path.read_text()
    assert "\x1b" not in text and "\x07" not in text and "\\x1b[31mred" in text


def test_a_plot_never_replaces_a_file_beside_the_report_that_is_no_plot(tmp_path):
    """`report r.json -o notes.md` wrote its roofline over the user's own notes_1_roofline.png (text, not a plot)
    with exit 0; an older plot of the report's is replaced as before."""
    r = result_set({"naive": {"t10": 2.0}}, {"t10": COURSE_SHAPES["t10"]})
    path = save(r, tmp_path / "runs", "gpu")[0]
    mine = tmp_path / "notes_1_roofline.png"
    mine.write_text("my own notes")
    result = CliRunner().invoke(main, ["report", str(path), "-o", str(tmp_path / "notes.md")], prog_name="attnbench")
    assert result.exit_code == 2 and str(mine) in result.output and result.output.count("\n") == 1, result.output
    assert mine.read_text() == "my own notes" and not (tmp_path / "notes.md").exists()
    mine.unlink()
    first = write_report([results.load(path)], tmp_path / "notes.md")
    again = write_report([results.load(path)], tmp_path / "notes.md")
    assert first.plots and again.plots == first.plots


def test_a_sweep_that_lists_no_variant_draws_no_empty_throughput_plot(tmp_path):
    """A sweep file whose `variants` was emptied by hand drew an empty throughput plot, and matplotlib's
    "No artists with labels found to put in legend" warning reached the terminal raw."""
    import warnings

    from attnbench.cases.testcase import Shape

    pytest.importorskip("matplotlib", reason="matplotlib (the plot extra) is not installed")
    shapes = {f"N{n}": Shape(1, n, 16) for n in (16, 32)}
    r = result_set({"cpu": {k: 0.01 * s.N for k, s in shapes.items()}}, shapes, kind="sweep", settings={"sweep": "N"})
    r.variants = []
    path = save(r, tmp_path / "runs", "sweep")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outcome = write_report([results.load(path)], tmp_path / "r.md")
    assert not any(p.name.endswith("_throughput.png") for p in outcome.plots) and outcome.path.is_file()


@pytest.mark.parametrize("name, content", [("notes.md", "my own notes\n"), ("hw4.c", "int main(void) { return 0; }\n"),
                                           ("older_run.json", '{\n "schema": "attnbench-results"\n}\n')])
def test_the_report_never_replaces_a_file_that_is_no_report(tmp_path, no_matplotlib, name, content):
    """`report r.json -o notes.md` (or -o the user's hw4.c, or -o another saved results file of the folder) wrote
    the report over it, exit 0; a report made again still replaces the older one, and an empty file is taken."""
    path = save(result_set({"naive": {"t10": 2.0}}, {"t10": COURSE_SHAPES["t10"]}), tmp_path / "runs", "gpu")[0]
    mine = tmp_path / name
    mine.write_text(content)
    result = CliRunner().invoke(main, ["report", str(path), "-o", str(mine)], prog_name="attnbench")
    assert result.exit_code == 2 and str(mine) in result.output and result.output.count("\n") == 1, result.output
    assert mine.read_text() == content
    again = tmp_path / "again.md"
    write_report([results.load(path)], again)
    write_report([results.load(path)], again)  # a report made again replaces its older self
    empty = tmp_path / "empty.md"
    empty.touch()
    write_report([results.load(path)], empty)
    assert again.read_text().startswith("# attnbench report") and empty.read_text().startswith("# attnbench report")
