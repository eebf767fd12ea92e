import hashlib
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

from attnbench import suite
from attnbench.errors import TestcaseError, UnknownName
from attnbench.testcase import Shape, read_output, read_testcase


def test_course_names_and_known_shapes():
    course = suite.cases_in("course")
    assert [c.name for c in course] == [f"t{i:02d}" for i in range(1, 31)]
    known = {c.name: (c.shape.B, c.shape.N, c.shape.d) for c in suite.cases_in("known")}
    assert known == {
        "t02": (160, 128, 64), "t10": (10, 2048, 64), "t11": (13600, 128, 32), "t22": (500, 2048, 64),
        "t28": (4, 16384, 64), "t29": (4, 32768, 32), "t30": (2, 32768, 64),
    }
    t01 = suite.get_case("t01")
    assert (t01.shape.N, t01.shape.d, t01.provenance) == (128, 32, "partly known")
    filled = [c for c in course if c.provenance == "filled"]
    assert len(filled) == 22 and all(c.shape.d in (32, 64) for c in filled)


def test_course_fill_pairs_have_equal_sizes_and_rising_n():
    course = suite.cases_in("course")
    for first, second in zip(course[::2], course[1::2]):
        assert (first.shape.d, second.shape.d) == (32, 64)
        assert first.shape.elements == second.shape.elements, (first.name, second.name)
    for group in range(3):
        ns = [c.shape.N for c in course[10 * group : 10 * group + 10]]
        assert ns == sorted(ns)


def test_report_workloads_are_present():
    squares = suite.cases_in("square")
    assert len(squares) == 102
    assert [c.shape.N for c in squares[:3]] == [63, 64, 65]
    assert all(c.shape.N == c.shape.d and c.shape.B == 1 for c in squares)
    heads = {c.name: (c.shape.B, c.shape.N, c.shape.d) for c in suite.cases_in("largehead")}
    assert heads == {"hd512": (4, 64, 512), "hd2048": (4, 64, 2048), "hd4096": (2, 32, 4096), "hd8192": (1, 16, 8192)}
    assert suite.get_case("single").shape.N == 262144
    odd = suite.cases_in("odd")
    assert {1, 17, 100, 1000} <= {c.shape.N for c in odd}
    assert {1, 48, 80, 128} <= {c.shape.d for c in odd}


def test_every_case_records_seed_and_sha256():
    seeds = [c.seed for c in suite.SUITE.values()]
    assert len(set(seeds)) == len(seeds)
    assert all(c.input_sha256 and len(c.input_sha256) == 64 for c in suite.SUITE.values())


@pytest.mark.parametrize("name", ["t02", "odd_17x48", "odd_1x32", "sq63", "hd512"])
def test_generation_reproduces_the_recorded_bytes(name):
    case = suite.get_case(name)
    path = suite.generate_input(case)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == case.input_sha256
    tc = read_testcase(path)
    assert tc.shape == case.shape
    assert tc.qkv.min() >= -3 and tc.qkv.max() < 3


def test_values_do_not_depend_on_chunking(monkeypatch):
    whole = np.concatenate(list(suite.input_values(7, 1000)))
    monkeypatch.setattr(suite, "_GEN_CHUNK", 37)
    chunked = np.concatenate(list(suite.input_values(7, 1000)))
    np.testing.assert_array_equal(whole, chunked)


def test_a_changed_generator_is_caught(monkeypatch):
    case = suite.get_case("odd_17x1")
    monkeypatch.setitem(suite.SUITE, case.name, case)
    wrong = suite.SuiteCase(**{**case.__dict__, "input_sha256": "0" * 64})
    with pytest.raises(TestcaseError, match="the generator is not reproducing the recorded bytes$"):
        suite.generate_input(wrong)
    assert not suite.input_path(wrong).exists()


def attention_by_loops(tc) -> list[list[list[float]]]:
    """softmax(QK^T/sqrt(d))V one element at a time in Python floats (float64), sharing no code with attnbench."""
    out = []
    for q, k, v in zip(tc.q.tolist(), tc.k.tolist(), tc.v.tolist()):
        d = len(q[0])
        rows = []
        for q_row in q:
            scores = [sum(a * b for a, b in zip(q_row, k_row)) / math.sqrt(d) for k_row in k]
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            total = math.fsum(weights)
            rows.append([math.fsum(w * v_row[c] for w, v_row in zip(weights, v)) / total for c in range(d)])
        out.append(rows)
    return out


def test_reference_file_is_exact_attention_rounded_to_float32(tmp_path):
    """The stored reference against attention computed a second way, by explicit loops."""
    case = suite.get_case("odd_17x48")
    suite.generate_input(case)
    path = suite.generate_reference(case)
    expected = np.array(attention_by_loops(read_testcase(suite.input_path(case))))
    stored = read_output(path, case.shape)
    assert stored.dtype == np.float32
    # Both are float64 attention; the file holds it rounded to float32: within half an ulp, plus
    # float64 summation-order noise far below it.
    np.testing.assert_allclose(stored, expected, rtol=2**-24, atol=1e-12)


def test_resolve_names_paths_and_generates_on_first_use(tmp_path):
    resolved = suite.resolve("odd_100x32")
    assert resolved.suite_case.name == "odd_100x32" and resolved.path.exists()
    mine = tmp_path / "mine.in"
    mine.write_bytes(resolved.path.read_bytes())
    assert suite.resolve(str(mine)).suite_case is None
    with pytest.raises(UnknownName, match="neither a file nor a suite case"):
        suite.resolve("t99")
    with pytest.raises(TestcaseError, match="no such file"):
        suite.resolve(str(tmp_path / "missing.in"))


def test_selectors_combine_names_and_groups():
    chosen = [c.name for c in suite.cases_in("t10,known,t10")]
    assert chosen[0] == "t10" and chosen.count("t10") == 1 and "t29" in chosen
    assert len(suite.cases_in("all")) == len(suite.SUITE)


def test_the_suite_file_is_read_field_by_field():
    import json

    raw = {c["name"]: c for c in json.loads(suite.SUITE_FILE.read_text())["cases"]}
    loaded = suite._load_suite()
    assert loaded == suite.SUITE and list(loaded) == list(raw)
    for name in ("t02", "odd_17x48", "single"):
        c, case = raw[name], loaded[name]
        assert (case.name, case.shape, case.seed) == (c["name"], Shape(c["B"], c["N"], c["d"]), c["seed"])
        assert (case.group, case.provenance, case.note, case.input_sha256) == (
            c["group"], c["provenance"], c.get("note", ""), c.get("input_sha256"))


def test_a_case_without_a_note_gets_an_empty_one(monkeypatch, tmp_path):
    import json

    (tmp_path / "suite.json").write_text(json.dumps({"cases": [
        {"name": "x1", "B": 1, "N": 2, "d": 3, "seed": 4, "group": "odd", "provenance": "test"}]}))
    monkeypatch.setattr(suite, "SUITE_FILE", tmp_path / "suite.json")
    assert suite._load_suite() == {"x1": suite.SuiteCase("x1", Shape(1, 2, 3), 4, "odd", "test", "", None)}


def test_data_folder_defaults_to_the_checkout_and_follows_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("ATTNBENCH_DATA")
    assert suite.data_dir() == suite.PROJECT_ROOT / "testcases" / "data"
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "elsewhere"))
    assert suite.data_dir() == tmp_path / "elsewhere"


def test_generation_makes_missing_folders_reports_progress_and_hashes_as_recorded(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "a" / "b"))
    case = suite.get_case("odd_17x1")  # B=2, N=17, d=1: 102 values
    done = []
    path = suite.generate_input(case, done.append)
    assert path == tmp_path / "a" / "b" / "odd_17x1.in" and sum(done) == 3 * case.shape.elements
    assert suite.sha256_file(path) == case.input_sha256 == suite.input_sha256(case)
    assert suite.sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert suite.is_generated(case) and not suite.has_reference(case)
    rows = []
    ref = suite.generate_reference(case, rows.append)
    assert sum(rows) == case.shape.B * case.shape.N
    assert ref.stat().st_size == case.shape.output_bytes and suite.has_reference(case)
    ref.write_bytes(b"\0" * 8)  # a wrong size is not a reference
    path.write_bytes(path.read_bytes()[:-4])
    assert not suite.has_reference(case) and not suite.is_generated(case)



def test_resolve_tells_files_from_names(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in ("missing.in", "missing.bin", "missing.dat", f"sub{os.sep}missing"):
        with pytest.raises(TestcaseError, match=f"^{re.escape(name)}: no such file$"):
            suite.resolve(name)
    source = suite.resolve("odd_17x1")
    (tmp_path / "mine").write_bytes(source.path.read_bytes())  # no folder, no suffix: a file all the same
    mine = suite.resolve("mine")
    assert (mine.label, mine.path, mine.suite_case) == ("mine", Path("mine"), None)
    assert suite.load(mine).shape == Shape(2, 17, 1)
    assert (source.label, source.path, source.suite_case) == ("odd_17x1", suite.input_path(source.suite_case),
                                                               suite.get_case("odd_17x1"))


def test_resolve_hands_a_missing_case_to_the_caller_to_generate(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))  # an empty data folder
    asked = []
    case = suite.get_case("odd_33x64")
    resolved = suite.resolve("odd_33x64", ensure_input=asked.append)
    assert asked == [case] and resolved.suite_case == case and not resolved.path.exists()
