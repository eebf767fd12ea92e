import csv
import json
import math

import pytest

from attnbench.cases.inputs import CaseInfo
from attnbench.errors import ResultsError
from attnbench.output.export import save
from attnbench.results import resultset as results
from attnbench.results.measurement import Measurement
from attnbench.results.resultset import Cell, ResultSet
from attnbench.results.run_warnings import RunWarning, WarningKind
from tests.synthetic import COURSE_SHAPES, measurement, result_set


def sample_set() -> ResultSet:
    times = {"naive": {"t10": 5.0, "t11": 7.0}, "bankfree": {"t10": 1.25, "t11": None}}
    shapes = {k: COURSE_SHAPES[k] for k in ("t10", "t11")}
    r = result_set(times, shapes, baseline="naive")
    r.cells.append(Cell("naive", "t29", "refused", "naive needs N <= 16384, and the case has N=32768"))
    r.cells.append(Cell("bankfree", "t29", "error", "bankfree: launching kernel k failed: out of resources"))
    r.cases.append(CaseInfo("t29", COURSE_SHAPES["t29"], "cd" * 32, "suite"))
    r.cells[0].check["rel_l2_error"] = math.inf  # non-finite numbers must survive strict JSON
    return r


def test_json_round_trip_keeps_every_field():
    original = sample_set()
    text = results.dumps(original)
    json.loads(text)  # strict JSON: no NaN/Infinity literals
    assert "Infinity" not in text.replace('"Infinity"', "")
    back = results.loads(text)
    assert back.to_dict() == original.to_dict()
    cell = back.cell("naive", "t10")
    assert cell.ok and cell.stats.samples_ms == original.cell("naive", "t10").stats.samples_ms
    assert cell.check["rel_l2_error"] == math.inf
    assert back.cell("bankfree", "t11").status == "wrong" and back.cell("bankfree", "t11").measurement is None
    assert back.case("t10").shape == COURSE_SHAPES["t10"] and back.case("t10").input_sha256 == "ab" * 32
    assert back.variant("naive").nvcc_options == ("-O3",)



def test_a_cells_timing_samples_stay_on_one_line_and_the_rest_is_indented():
    original = sample_set()
    text = results.dumps(original)
    samples = original.cell("naive", "t10").stats.samples_ms
    line = next(line for line in text.splitlines() if '"samples_ms"' in line)
    assert json.loads(line.strip().rstrip(",").split(": ", 1)[1]) == samples
    assert '\n "cells": [\n  {' in text  # objects keep their indentation
    assert results.loads(text).to_dict() == original.to_dict()

def test_measurement_round_trip():
    m = measurement("naive", "t10", COURSE_SHAPES["t10"], 3.0)
    m.warnings.append(RunWarning(WarningKind.GENERIC, "the GPU reports clock throttling"))
    m.kernel.warnings.append(RunWarning(WarningKind.NOISE, "noise is high", "rerun"))
    back = Measurement.from_dict(m.to_dict())
    assert back.to_dict() == m.to_dict()
    assert back.warnings == [RunWarning(WarningKind.GENERIC, "the GPU reports clock throttling")]
    assert back.kernel.warnings == [RunWarning(WarningKind.NOISE, "noise is high", "rerun")]


def test_save_writes_json_csv_and_markdown_with_a_readable_name(tmp_path):
    r = sample_set()
    paths = save(r, tmp_path, selector="t10,t11")
    assert [p.suffix for p in paths] == [".json", ".csv", ".md"]
    assert paths[0].name == "2026-11-21_compare_h200_t10-t29.json"
    again = save(sample_set(), tmp_path, selector="known")
    assert again[0].name == "2026-11-21_compare_h200_known.json"
    third = save(sample_set(), tmp_path, selector="known")
    assert third[0].name == "2026-11-21_compare_h200_known_2.json"
    loaded = results.load(paths[0])
    assert loaded.path == paths[0] and loaded.name == paths[0].stem


def test_csv_is_full_precision(tmp_path):
    r = sample_set()
    path = save(r, tmp_path)[1]
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == len(r.cells)
    row = next(x for x in rows if x["variant"] == "bankfree" and x["case"] == "t10")
    stats = r.cell("bankfree", "t10").stats
    assert float(row["median_ms"]) == stats.median  # exact round trip
    assert float(row["stdev_ms"]) == stats.stdev
    assert float(row["speedup"]) == pytest.approx(4.0) and row["verdict"] == "FASTER"
    wrong = next(x for x in rows if x["status"] == "wrong")
    assert wrong["median_ms"] == "" and wrong["check_passed"] == "false"


def test_markdown_has_the_tables_and_the_failures(tmp_path):
    path = save(sample_set(), tmp_path)[2]
    text = path.read_text()
    assert "| variant | t10 | t11 | t29 |" in text
    assert "WRONG" in text and "refused" in text and "ERROR" in text
    assert "4.00 ± 0.0" in text and "FASTER" in text
    assert "NVIDIA H200" in text and "commit 000000000000" in text
    assert "out of resources" in text


def test_a_class_scoreboard_given_as_results_says_what_it_is_and_where_to_read_it():
    """`report` or `compare --against` of a scoreboard the judge saved said "not an attnbench results file"."""
    from attnbench.results.scoreboard import Scoreboard

    with pytest.raises(ResultsError) as caught:
        results.loads(Scoreboard(["t01"], []).to_json(), "res/2026-11-29_class_t01.json")
    assert str(caught.value).startswith("res/2026-11-29_class_t01.json: a class's scoreboard, not a run's results")
    assert "judge --history" in str(caught.value)


def test_other_schemas_and_newer_versions_are_refused(tmp_path):
    with pytest.raises(ResultsError, match="not an attnbench results file"):
        results.loads(json.dumps({"benchmarks": []}), "x.json")
    data = sample_set().to_dict()
    data["schema_version"] = results.SCHEMA_VERSION + 1
    with pytest.raises(ResultsError, match="newer than this attnbench reads"):
        results.loads(json.dumps(data), "x.json")
    with pytest.raises(ResultsError, match="not a JSON file"):
        results.loads("{", "x.json")
    del data["cells"]
    data["schema_version"] = 1
    with pytest.raises(ResultsError, match="malformed"):
        results.loads(json.dumps(data), "x.json")
    with pytest.raises(ResultsError, match="no such results file"):
        results.load(tmp_path / "missing.json")


def test_a_folder_is_not_a_results_file(tmp_path):
    """attnbench.load_results(a folder) raised IsADirectoryError, not the library's one-line error."""
    with pytest.raises(ResultsError, match="is a folder, not a results file"):
        results.load(tmp_path)


def test_default_names():
    r = sample_set()
    assert results.default_name(r) == "2026-11-21_compare_h200_t10-t29"
    assert results.default_name(r, "course") == "2026-11-21_compare_h200_course"
    r.metadata["gpu"] = None
    assert results.default_name(r, "a b/c") == "2026-11-21_compare_cpu_t10-t29"


def test_result_kind_is_the_enum_and_saved_as_its_word():
    r = results.ResultSet("sweep", {}, {}, [], [], [])
    assert r.kind is results.ResultKind.SWEEP
    assert json.loads(results.dumps(r))["kind"] == "sweep"
    assert results.loads(results.dumps(r)).kind is results.ResultKind.SWEEP


def test_an_unknown_result_kind_is_a_malformed_file():
    text = results.dumps(results.ResultSet("compare", {}, {}, [], [], [])).replace('"compare"', '"bench"')
    with pytest.raises(ResultsError, match="malformed"):
        results.loads(text)


@pytest.mark.parametrize("damage", [{"cells": "oops"}, {"cells": ["oops"]}, {"variants": "x"}, {"cases": 7},
                                    {"schema_version": "five"}, {"schema_version": 0}, {"schema_version": True},
                                    {"policy": "p"}, {"metadata": [1]}, {"settings": 3}, {"cases": {}}])
def test_a_damaged_field_is_a_malformed_file_not_a_traceback(damage):
    data = {**sample_set().to_dict(), **damage}
    with pytest.raises(ResultsError) as refused:
        results.loads(json.dumps(data), "x.json")
    assert "newer than this attnbench" not in str(refused.value)


@pytest.mark.parametrize("field, value", [("samples_ms", []), ("samples_ms", [-1.0]), ("samples_ms", [0.0]),
                                          ("samples_ms", ["a"]), ("samples_ms", "fast"), ("shape", {"B": 0, "N": 4, "d": 8}),
                                          ("shape", {"B": "1", "N": 4, "d": 8})])
def test_a_damaged_measurement_is_a_malformed_file_not_a_later_traceback(field, value):
    """These loaded, then `report` and `compare --against` ended in a traceback (math domain error, an empty
    median) when they used them."""
    data = sample_set().to_dict()
    measured = next(cell["measurement"] for cell in data["cells"] if cell.get("measurement"))
    (measured["kernel"] if field == "samples_ms" else measured)[field] = value
    with pytest.raises(ResultsError, match="malformed"):
        results.loads(json.dumps(data), "x.json")


@pytest.mark.parametrize("field, value", [("check", "yes"), ("check", [1]), ("timed_check", "x"),
                                          ("check.max_abs_error", "x"), ("check.atol", [1]),
                                          ("check.rel_l2_error", "x"), ("check.failing", True),
                                          ("timed_check.samples", "32"), ("variant", 7), ("case", 12),
                                          ("message", 5)])
def test_a_damaged_cell_check_is_a_malformed_file_not_a_traceback_in_report(field, value):
    """A hand-damaged check loaded, then `report` ended in a traceback formatting it ('str' object has no
    attribute 'get'; unknown format code 'g' for a str)."""
    data = sample_set().to_dict()
    cell = next(c for c in data["cells"] if c.get("check"))
    cell["timed_check"] = {"samples": 32, "fresh_inputs": 30, "passed": True}
    table, _, key = field.rpartition(".")
    (cell[table] if table else cell)[key] = value
    with pytest.raises(ResultsError, match=f"x.json: malformed results file .*{key}"):
        results.loads(json.dumps(data), "x.json")


@pytest.mark.parametrize("gpu", ["\x1b[2J", [1], 7, {"name": 5}, {"name": ["H200"]}])
def test_damaged_gpu_facts_are_a_malformed_file_not_a_traceback(gpu):
    """metadata.gpu as text, a list or a number (or a name that is no text) loaded, then `report`, `roof
    --saved` and `compare --against` ended in a traceback ('str' object has no attribute 'get')."""
    data = sample_set().to_dict()
    data["metadata"]["gpu"] = gpu
    with pytest.raises(ResultsError, match="x.json: malformed results file .*metadata.gpu"):
        results.loads(json.dumps(data), "x.json")


def test_no_gpu_facts_still_load():
    data = sample_set().to_dict()
    data["metadata"]["gpu"] = None
    assert results.loads(json.dumps(data), "x.json").metadata["gpu"] is None
    del data["metadata"]["gpu"]
    assert "gpu" not in results.loads(json.dumps(data), "x.json").metadata


def test_a_checks_missing_or_null_numbers_still_load():
    data = sample_set().to_dict()
    cell = next(c for c in data["cells"] if c.get("check"))
    cell["check"]["max_abs_error"] = None
    assert results.loads(json.dumps(data), "x.json").cell(cell["variant"], cell["case"]).check["max_abs_error"] is None


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"schema": ' + "1" * 5000 + "}"],
                         ids=["nested-100000-deep", "a-5000-digit-integer"])
def test_json_python_cannot_read_is_not_a_results_file_not_a_traceback(text):
    """Nesting past the recursion limit and an integer past Python's digit limit were a RecursionError and a
    ValueError traceback in `report`, `compare --against` and `roof --saved`."""
    with pytest.raises(ResultsError, match="x.json: not a results file"):
        results.loads(text, "x.json")
