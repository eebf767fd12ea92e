"""run_case_group: a worker's case group, the shared per-input loop wrapped with the worker's own loading
and reporting (every cell reported, whatever happens)."""

from __future__ import annotations

from attnbench.bench.check_rule import CourseRule
from attnbench.bench.sampler import TimingPolicy
from attnbench.cases.inputs import SyntheticInput
from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import variants_for
from attnbench.results.resultset import ERROR
from attnbench.spread.cellgroups import CellPlan, GroupReport, OpenDevice, report_not_run, run_case_group
from tests.bench.fake_cells import LosingGpu, UnreadableInput, fake_cells

FAULT = "an illegal memory access was encountered"
RECORD = {"index": 3, "name": "GPU three", "uuid": None}


def plan_of(names: str) -> CellPlan:
    return CellPlan.of(variants_for(names), lambda v: TimingPolicy(warmup=0, reps=1, flush_l2=False), CourseRule())


def heard() -> tuple[list[tuple], GroupReport]:
    """The report's events as they come: ("info", origin, note), ("started", variant), (variant, status, message)."""
    log: list[tuple] = []
    report = GroupReport(info=lambda info: log.append(("info", info["origin"], info["note"])),
                         started=lambda name: log.append(("started", name)))

    def finished(cell: dict) -> None:
        log.append((cell["variant"], cell["status"], cell["message"]))
        report.cells.append(cell)

    report.finished = finished
    return log, report


def test_an_input_that_cannot_be_loaded_is_an_error_cell_for_each_variant(monkeypatch):
    ran = fake_cells(monkeypatch, {})
    log, report = heard()
    broken = UnreadableInput(Shape(1, 9, 8), 1, "broken")
    assert run_case_group(plan_of("cpu,naive"), broken, ["cpu", "naive"], OpenDevice(None, None), report) is None
    why = "broken: the file ends after 12 of 4096 bytes"
    assert log == [("info", "not loaded", why), ("cpu", ERROR, why), ("naive", ERROR, why)]
    assert ran == []


def test_an_unexpected_exception_is_its_cells_error_and_the_group_goes_on(monkeypatch):
    fake_cells(monkeypatch, {"cpu": RuntimeError("a bug")})
    log, report = heard()
    bench_input = SyntheticInput(Shape(1, 9, 8), 1)
    run_case_group(plan_of("cpu,naive"), bench_input, ["cpu", "naive"], OpenDevice(LosingGpu(None), RECORD), report)
    assert log[0][:2] == ("info", "synthetic")
    assert log[1:] == [("started", "cpu"), ("cpu", ERROR, "RuntimeError: a bug"), ("started", "naive"),
                       ("naive", "ok", "")]
    assert [cell["extra"]["gpu"] for cell in report.cells] == [RECORD, RECORD]  # where each cell ran


def test_a_lost_context_is_returned_and_the_rest_of_the_group_is_not_run(monkeypatch):
    ran = fake_cells(monkeypatch, {"naive": ERROR})
    log, report = heard()
    bench_input = SyntheticInput(Shape(1, 9, 8), 1)
    device = OpenDevice(LosingGpu(FAULT), RECORD)
    lost = run_case_group(plan_of("naive,kernels"), bench_input, ["naive", "kernels"], device, report)
    assert lost == f"the CUDA context was lost after naive failed on {bench_input.label} ({FAULT})"
    assert ran == ["naive"] and log[-1] == ("kernels", ERROR, f"not run: {lost}")
    assert report.cells[-1]["extra"]["gpu"] == RECORD


def test_a_group_not_run_says_why_for_each_cell():
    log, report = heard()
    report_not_run(SyntheticInput(Shape(1, 9, 8), 1, "t02"), ["cpu", "naive"], "not run: gone", report)
    assert log == [("info", "not loaded", "not run: gone"), ("cpu", ERROR, "not run: gone"),
                   ("naive", ERROR, "not run: gone")]


def test_a_user_variant_given_by_its_path_is_found_again_from_any_folder(tmp_path, monkeypatch):
    """A worker (or the one-device run) looks each variant up by name: a kernel given by its path is named for
    its file, which no lookup from another folder finds, so the plan carries the path."""
    from attnbench.kernels.catalogue import get_variant
    from tests.kernels.test_user_variants import GOOD, write_facts

    project = tmp_path / "project"
    project.mkdir()
    write_facts(project, GOOD)
    given = get_variant(str(project / "mine.cu"))
    plan = CellPlan.of([given], lambda v: TimingPolicy(warmup=0, reps=1, flush_l2=False), CourseRule())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    found = plan.variant(given.name)
    assert found.name == given.name == "mine" and found.source == given.source
    assert [v.name for v in plan.variants()] == ["mine"]
