import json
import sys

import pytest
from click.testing import CliRunner

from attnbench.analysis.against import against, check_comparable
from attnbench.analysis.view import MatrixView, exit_status, failures
from attnbench.bench.check_rule import CourseRule
from attnbench.bench.sampler import TimingPolicy
from attnbench.cases.inputs import SyntheticInput
from attnbench.cases.testcase import Shape
from attnbench.cli import main
from attnbench.errors import ResultsError, UnknownName
from attnbench.kernels import catalogue
from attnbench.kernels.catalogue import LADDER_VARIANTS, REGISTRY, variants_for
from attnbench.kernels.variant import Constraints, Variant
from attnbench.output.export import save
from tests.spread.one_device import matrix_here
from tests.synthetic import COURSE_SHAPES, result_set

TWO = {k: COURSE_SHAPES[k] for k in ("t10", "t29")}


@pytest.fixture
def cli(tmp_path):
    runner = CliRunner()

    def invoke(*args):
        result = runner.invoke(main, list(args), catch_exceptions=False)
        result.text = " ".join(result.output.split())  # rich wraps long lines at the console width
        return result

    return invoke


@pytest.fixture
def narrow_cpu(monkeypatch):
    """A host variant that refuses d != 32, registered for the test only."""
    variant = Variant(name="cpu32", report="test", technique="test", backend="cpu",
                      constraints=Constraints(head_dims=(32,)))
    monkeypatch.setitem(REGISTRY, "cpu32", variant)
    return variant


# -- the matrix, with the cpu variant ------------------------------------------------------------------
def test_the_matrix_checks_then_times_and_records_refusals(narrow_cpu):
    inputs = [SyntheticInput(Shape(2, 17, 32), 1), SyntheticInput(Shape(1, 9, 8), 2)]
    policy = lambda v: TimingPolicy(warmup=0, reps=2, flush_l2=False)
    infos, cells = matrix_here([REGISTRY["cpu"], narrow_cpu], inputs, None, policy)
    assert [i.label for i in infos] == ["B2_N17_d32", "B1_N9_d8"]
    assert all(len(i.input_sha256) == 64 for i in infos)
    status = {(c.variant, c.case): c.status for c in cells}
    assert status == {("cpu", "B2_N17_d32"): "ok", ("cpu32", "B2_N17_d32"): "ok",
                      ("cpu", "B1_N9_d8"): "ok", ("cpu32", "B1_N9_d8"): "refused"}
    ok = next(c for c in cells if c.ok)
    assert ok.check["passed"] and ok.check["rel_l2_error"] < 1e-5 and ok.stats.count == 2
    refused = next(c for c in cells if c.status == "refused")
    assert refused.message == "cpu32 needs d in {32}, and the case has d=8" and refused.measurement is None


def test_a_wrong_output_gets_no_time():
    inputs = [SyntheticInput(Shape(1, 9, 8), 3)]
    policy = lambda v: TimingPolicy(warmup=0, reps=5, flush_l2=False)
    _, cells = matrix_here([REGISTRY["cpu"]], inputs, None, policy, CourseRule(atol=0.0))
    (cell,) = cells
    assert cell.status == "wrong" and cell.measurement is None
    assert "elements fail |out - ref| <= 0" in cell.message and "worst (batch" in cell.message
    assert cell.check["passed"] is False


def test_variant_selection():
    assert [v.name for v in variants_for("cpu, cpu")] == ["cpu"]
    assert variants_for("torch")[0].backend == "torch"
    with pytest.raises(UnknownName, match="no variant named 'nope'"):
        variants_for("nope")
    with pytest.raises(UnknownName, match="no variant named; give --variants"):
        variants_for(" , ")
    ladder = [v.name for v in variants_for("ladder")]
    assert ladder == [name for name in REGISTRY if name in LADDER_VARIANTS]  # registry order
    assert {"naive", "bankfree", "singlehead"} <= set(ladder) and "cpu" not in ladder and "tf32x3" not in ladder
    everything = variants_for("all,naive")
    assert [v.name for v in everything] == [v.name for v in REGISTRY.values() if v.backend == "gpu"]


def test_ladder_with_no_ladder_variant_registered_says_so(monkeypatch):
    monkeypatch.setattr(catalogue, "REGISTRY", {"cpu": REGISTRY["cpu"]})
    with pytest.raises(UnknownName, match="no ladder variant is registered yet"):
        variants_for("ladder")


# -- reading a matrix -----------------------------------------------------------------------------------
def test_matrix_view_speedups_and_geomeans():
    r = result_set({"naive": {"t10": 8.0, "t29": 10.0}, "fast": {"t10": 2.0, "t29": None}}, TWO, baseline="naive")
    view = MatrixView(r)
    c = view.comparison("fast", "t10")
    assert c.speedup == pytest.approx(4.0) and c.verdict.value == "FASTER"
    assert view.comparison("fast", "t29") is None  # wrong: no speed
    assert view.geomean_speedup("fast").value == pytest.approx(4.0) and view.geomean_speedup("fast").count == 1
    assert view.counts("fast") == {"ok": 1, "wrong": 1, "refused": 0, "error": 0, "impossible": 0, "suspect": 0}
    assert failures(r) == 1 and exit_status(r) == 1


# -- against a saved run -----------------------------------------------------------------------------------
def test_against_same_faster_slower_and_the_regression_count():
    saved = result_set({"a": {"t10": 1.0, "t29": 1.0}, "b": {"t10": 1.0, "t29": 1.0}}, TWO, seed=1)
    now = result_set({"a": {"t10": 1.005, "t29": 0.8}, "b": {"t10": 1.04, "t29": 1.5}}, TWO, seed=2)
    report = against(now, saved)
    outcome = {(r.variant, r.case): r.outcome for r in report.rows}
    assert outcome == {("a", "t10"): "SAME", ("a", "t29"): "FASTER", ("b", "t10"): "SLOWER", ("b", "t29"): "SLOWER"}
    assert report.regressions == 2 and exit_status(now, report) == 1
    assert report.same_fraction == pytest.approx(0.25)
    lenient = against(now, saved, fail_slower=0.05)
    assert lenient.regressions == 1  # only the 50% one is past 5%
    assert exit_status(now, lenient) == 1


def test_against_counts_new_wrong_outputs_and_notes_fixed_ones():
    saved = result_set({"a": {"t10": 1.0, "t29": None}}, TWO)
    now = result_set({"a": {"t10": None, "t29": 1.0}}, TWO)
    report = against(now, saved)
    outcome = {(r.variant, r.case): r.outcome for r in report.rows}
    assert outcome == {("a", "t10"): "NOW WRONG", ("a", "t29"): "FIXED"}
    assert report.regressions == 0 and exit_status(now, report) == 1  # the wrong cell


def test_exit_status_is_capped():
    shapes = {f"c{i}": Shape(1, 8, 8) for i in range(300)}
    saved = result_set({"a": {c: 1.0 for c in shapes}}, shapes)
    now = result_set({"a": {c: 2.0 for c in shapes}}, shapes)
    report = against(now, saved)
    assert report.regressions == 300 and exit_status(now, report) == 1


def test_other_gpu_and_other_inputs_are_refused_unless_allowed():
    saved = result_set({"a": {"t10": 1.0}}, {"t10": TWO["t10"]})
    other_gpu = result_set({"a": {"t10": 1.0}}, {"t10": TWO["t10"]}, gpu={"name": "NVIDIA A100", "sm_count": 108})
    with pytest.raises(ResultsError, match="NVIDIA A100 .* --allow-other-gpu"):
        check_comparable(other_gpu, saved)
    assert check_comparable(other_gpu, saved, allow_other_gpu=True)
    other_bytes = result_set({"a": {"t10": 1.0}}, {"t10": TWO["t10"]}, sha="ef" * 32)
    with pytest.raises(ResultsError, match="input t10 differs .* --allow-other-inputs"):
        check_comparable(other_bytes, saved)
    assert check_comparable(other_bytes, saved, allow_other_inputs=True)
    unrelated = result_set({"z": {"t10": 1.0}}, {"t10": TWO["t10"]})
    with pytest.raises(ResultsError, match="no .* cell in common"):
        against(unrelated, saved)


def test_a_case_whose_shape_changed_is_not_compared_and_says_why():
    from dataclasses import replace

    """The suite's version 3 took the course's shapes: t12 was (6800, 128, 64) and is (9600, 128, 64)."""
    old, new = {"t12": Shape(6800, 128, 64), "t10": TWO["t10"]}, {"t12": Shape(9600, 128, 64), "t10": TWO["t10"]}
    saved = result_set({"a": {"t12": 1.0, "t10": 1.0}}, old, seed=1)
    now = result_set({"a": {"t12": 3.0, "t10": 1.0}}, new, seed=2)
    now.cases = [replace(c, input_sha256="ef" * 32) if c.label == "t12" else c for c in now.cases]
    notes = check_comparable(now, saved)  # other bytes under another shape: not a refusal, a note
    assert notes == ["t12 is (9600, 128, 64) here and was (6800, 128, 64) in " + saved.name +
                     ": the suite's version 3 took the course's published shapes, so its cells are not compared"]
    report = against(now, saved)
    rows = {r.case: r for r in report.rows}
    assert rows["t12"].outcome == "NOT COMPARED" and rows["t12"].comparison is None and not rows["t12"].regression
    assert "version 3" in rows["t12"].note and rows["t10"].outcome == "SAME"


# -- the command line -----------------------------------------------------------------------------------------
def test_compare_saves_results_and_repeats_against_them(cli, tmp_path):
    out = tmp_path / "results"
    result = cli("compare", "--variants", "cpu", "--cases", "odd_17x48,odd_33x64", "--results-dir", str(out),
                 "--name", "first")
    assert result.exit_code == 0, result.output
    saved = out / "first.json"
    assert saved.exists() and (out / "first.csv").exists() and (out / "first.md").exists()
    data = json.loads(saved.read_text())
    assert data["schema"] == "attnbench-results" and data["kind"] == "compare" and data["baseline"] == "cpu"
    assert data["metadata"]["numpy_version"] and "commit" in data["metadata"]["git"]
    assert {c["label"] for c in data["cases"]} == {"odd_17x48", "odd_33x64"}
    assert all(len(c["input_sha256"]) == 64 for c in data["cases"])

    # Make the saved times 100x shorter: now every cell is SLOWER beyond any noise.
    for cell in data["cells"]:
        cell["measurement"]["kernel"]["samples_ms"] = [s / 100 for s in cell["measurement"]["kernel"]["samples_ms"]]
    (out / "fast.json").write_text(json.dumps(data))
    result = cli("compare", "--against", str(out / "fast.json"), "--no-save")
    assert result.exit_code == 1, result.output  # two regressions, counted in the output
    assert "SLOWER" in result.text and "2 regression(s)" in result.text

    # 100x longer: every cell is FASTER, nothing regressed.
    for cell in data["cells"]:
        cell["measurement"]["kernel"]["samples_ms"] = [s * 1e4 for s in cell["measurement"]["kernel"]["samples_ms"]]
    (out / "slow.json").write_text(json.dumps(data))
    result = cli("compare", "--against", str(out / "slow.json"), "--no-save", "--fail-slower", "5%")
    assert result.exit_code == 0, result.output
    assert "FASTER 2" in result.text and "0 regression(s)" in result.text


def test_compare_refuses_a_run_on_other_input_bytes(cli, tmp_path):
    cli("compare", "--variants", "cpu", "--cases", "odd_17x1", "--results-dir", str(tmp_path), "--name", "base")
    data = json.loads((tmp_path / "base.json").read_text())
    data["cases"][0]["input_sha256"] = "0" * 64
    (tmp_path / "edited.json").write_text(json.dumps(data))
    result = cli("compare", "--against", str(tmp_path / "edited.json"), "--no-save")
    assert result.exit_code == 2
    assert "input odd_17x1 differs" in result.text and "--allow-other-inputs" in result.text
    assert "Traceback" not in result.text
    result = cli("compare", "--against", str(tmp_path / "edited.json"), "--no-save", "--allow-other-inputs",
                 "--fail-slower", "10000%")
    assert result.exit_code == 0, result.output


def test_compare_wrong_cells_exit_1_with_the_count_in_the_output(cli, tmp_path):
    result = cli("compare", "--variants", "cpu", "--cases", "odd_17x48,odd_100x32", "--atol", "0", "--no-save")
    assert result.exit_code == 1  # never the count: 2 would read as bad usage
    assert result.text.count("WRONG") >= 2 and "2 wrong, impossible, suspect or failed cell(s)" in result.text


def test_compare_needs_variants_and_cases(cli):
    result = cli("compare", "--variants", "cpu")
    assert result.exit_code == 2 and "give --variants and --cases" in result.text
    result = cli("compare", "--variants", "cpu", "--cases", "odd_17x1", "--baseline", "naive")
    assert result.exit_code == 2 and "--baseline naive is not among --variants" in result.text
    result = cli("compare", "--variants", "cpu", "--cases", "odd_17x1", "--fail-slower", "lots")
    assert result.exit_code == 2 and "not a percentage" in result.text


def test_torch_without_pytorch_is_one_sentence(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    result = cli("compare", "--variants", "cpu,torch", "--cases", "odd_17x1", "--no-save")
    assert result.exit_code == 3
    assert "the torch peer needs PyTorch" in result.text
    assert result.text.count("error:") == 1 and "Traceback" not in result.text


def test_compare_prints_and_saves_the_ladder_view(cli, tmp_path, monkeypatch):
    # Two host stand-ins named like report 004's first steps, so the view has claims to stand beside.
    for name in ("kernels", "fused"):
        monkeypatch.setitem(REGISTRY, name, Variant(name=name, report="004", technique="stand-in", backend="cpu"))
    result = cli("compare", "--variants", "kernels,fused", "--cases", "odd_33x64", "--ladder",
                 "--results-dir", str(tmp_path), "--name", "steps")
    assert result.exit_code == 0, result.output
    assert "ladder on odd_33x64" in result.text and "kernels" in result.text
    assert "## The ladder" in (tmp_path / "steps.md").read_text()


def test_a_saved_run_from_another_gpu_is_refused_before_running(cli, tmp_path):
    saved = result_set({"cpu": {"odd_17x1": 1.0}}, {"odd_17x1": Shape(2, 17, 1)})  # measured on an H200
    save(saved, tmp_path, "h200")
    result = cli("compare", "--against", str(tmp_path / "h200.json"), "--no-save")
    assert result.exit_code == 2
    assert "measured on NVIDIA H200 (132 SMs) and this run on no GPU" in result.text
    assert "--allow-other-gpu" in result.text and "odd_17x1:" not in result.text  # nothing ran


def test_inputs_can_be_user_files(cli, tmp_path, rng):
    from attnbench.cases.testcase import write_testcase
    from tests.conftest import random_testcase

    path = tmp_path / "mine.in"
    write_testcase(path, random_testcase(2, 20, 8, rng))
    result = cli("compare", "--variants", "cpu", "--cases", f"{path},odd_17x1", "--no-save")
    assert result.exit_code == 0, result.output
    assert "mine.in" in result.text
    result = cli("compare", "--variants", "cpu", "--cases", str(tmp_path / "absent.in"), "--no-save")
    assert result.exit_code == 2 and "no such file" in result.text


# -- impossible speeds, on a fake H200 (a clock that reports too short a time; the output is right) ----------
@pytest.fixture
def fake_h200(monkeypatch, tmp_path):
    from attnbench import api
    from attnbench.backends import gpu_execution
    from attnbench.results.ceilings import CACHE_ENV
    from tests.bench.fake_device import FakeH200, fake_execution

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))

    def install(pass_ms, clocks=None):
        monkeypatch.setattr(gpu_execution, "GpuExecution", fake_execution(pass_ms))
        for command in (api.run_command, api.compare_command, api.sweep_command):  # each opens the GPU it needs
            monkeypatch.setattr(command, "open_gpu_for", lambda variants, device=0, listed=False: FakeH200(clocks))
        return FakeH200(clocks)

    return install


def test_an_impossible_median_is_its_own_status_with_no_speed_and_exit_1(fake_h200):
    from attnbench.output.export.csv_export import CsvExporter
    from attnbench.results.resultset import dumps, loads

    gpu = fake_h200(1e-6)
    inputs = [SyntheticInput(Shape(2, 64, 32), 1)]
    policy = lambda v: TimingPolicy(warmup=0, reps=6, flush_l2=v.backend != "cpu")
    infos, cells = matrix_here([REGISTRY["cpu"], REGISTRY["naive"]], inputs, gpu, policy)
    status = {c.variant: c for c in cells}
    assert status["cpu"].status == "ok"  # the host, honestly timed
    impossible = status["naive"]
    assert impossible.status == "impossible" and impossible.check["passed"] and not impossible.ok
    assert impossible.message.startswith("median 1e-06 ms is below the physical floor ")
    from attnbench.bench.matrix import assemble

    result = assemble("compare", [REGISTRY["cpu"], REGISTRY["naive"]], infos, cells, None, {}, "cpu")
    view = MatrixView(result)
    assert view.comparison("naive", infos[0].label) is None and view.geomean_tflops("naive") is None
    assert failures(result) == 1 and exit_status(result) == 1
    text = dumps(result)
    back = loads(text)  # strict JSON (no NaN), read back whole
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    cell = back.cell("naive", infos[0].label)
    assert cell.status == "impossible" and cell.measurement.impossible and cell.measurement.floor is not None
    row = next(r for r in CsvExporter().rows(back) if r["variant"] == "naive")
    assert row["status"] == "impossible" and row["tflops"] is None and row["floor_ms"] > 0


def test_the_command_line_exits_1_on_an_impossible_median(cli, fake_h200, tmp_path):
    fake_h200(1e-6)
    result = cli("run", "odd_100x32", str(tmp_path / "o.bin"), "--variant", "naive", "--reps", "3", "--no-pipeline")
    assert result.exit_code == 1, result.output
    assert "IMPOSSIBLE" in result.text and "below the physical floor" in result.text and "TFLOP/s" in result.text
    result = CliRunner().invoke(main, ["run", "odd_100x32", str(tmp_path / "o.bin"), "--variant", "naive",
                                       "--reps", "3", "--json", "--no-pipeline"], catch_exceptions=False)
    assert result.exit_code == 1
    data = json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert data["impossible"] and data["tflops"] is None and data["kernel"]["noise"] == "NaN"  # 3 samples: unknown
    result = cli("compare", "--variants", "cpu,naive", "--cases", "odd_17x48", "--reps", "3", "--no-save")
    assert result.exit_code == 1, result.output
    assert "IMPOSSIBLE" in result.text and "1 wrong, impossible, suspect or failed cell(s)" in result.text
    assert "FASTER" not in result.text


def test_a_median_above_its_units_peak_is_suspect_with_its_speed_and_exit_1(cli, fake_h200, tmp_path):
    """naive runs on FP32 FFMA (66.9 TFLOP/s on an H200's datasheet); 5 us a pass on odd_1000x128 is 205 TFLOP/s:
    above that peak, yet above the physical floor (under 1 us): not impossible, suspect."""
    fake_h200(0.005)
    result = cli("run", "odd_1000x128", str(tmp_path / "o.bin"), "--variant", "naive", "--reps", "3", "--no-pipeline")
    assert result.exit_code == 1, result.output
    assert "SUSPECT: naive on odd_1000x128: 205 TFLOP/s is above the peak of its unit ffma" in result.text
    assert "IMPOSSIBLE" not in result.text
    out = tmp_path / "results"
    result = cli("compare", "--variants", "naive", "--cases", "odd_1000x128", "--reps", "3", "--results-dir", str(out),
                 "--name", "suspect")
    assert result.exit_code == 1, result.output
    assert "SUSPECT" in result.text and "1 wrong, impossible, suspect or failed cell(s)" in result.text
    cell = json.loads((out / "suspect.json").read_text())["cells"][0]
    assert cell["status"] == "suspect" and cell["measurement"]["unit"] == "ffma"
    assert cell["measurement"]["tflops"] > 200 and cell["message"] == cell["measurement"]["suspect"]


def test_compare_against_a_saved_run_names_the_impossible_cell(cli, fake_h200, tmp_path):
    fake_h200(1.0, clocks=[1755.0] * 100)
    out = tmp_path / "results"
    result = cli("compare", "--variants", "naive", "--cases", "odd_17x48", "--reps", "3", "--results-dir", str(out),
                 "--name", "honest")
    assert result.exit_code == 0, result.output
    assert "SM clock (NVML, after each sample): 1755 MHz" in result.text
    saved = json.loads((out / "honest.json").read_text())
    kernel = saved["cells"][0]["measurement"]["kernel"]
    assert kernel["sm_clock_mhz"] == [1755.0] * 3 and kernel["clock_warning"] is None
    assert "1755.0" in (out / "honest.csv").read_text()
    fake_h200(1e-6)
    result = cli("compare", "--against", str(out / "honest.json"), "--no-save")
    assert result.exit_code == 1, result.output
    assert "IMPOSSIBLE" in result.text and "regression" in result.text


def test_an_interruption_carries_the_partial_result_set_it_is_given():
    from attnbench.bench.matrix import MatrixInterrupted

    partial = result_set({"naive": {"t10": 1.0}}, {"t10": COURSE_SHAPES["t10"]})
    interrupted = MatrixInterrupted("interrupted", partial.cases, partial.cells, devices="summary")
    assert interrupted.partial is None
    carried = interrupted.with_partial(partial)
    assert carried.partial is partial and str(carried) == "interrupted" and carried.exit_code == 130
    assert (carried.cases, carried.cells, carried.devices) == (partial.cases, partial.cells, "summary")


def test_the_partial_result_set_of_an_interruption_is_marked_interrupted():
    from attnbench.bench.matrix import MatrixInterrupted

    partial = result_set({"naive": {"t10": 1.0}}, {"t10": COURSE_SHAPES["t10"]})
    assert not partial.settings.interrupted
    MatrixInterrupted("interrupted", partial.cases, partial.cells).with_partial(partial)
    assert partial.settings.interrupted is True
