import hashlib
import math

import numpy as np
import pytest

from attnbench import suite
from attnbench.errors import TestcaseError, UnknownName
from attnbench.testcase import read_output, read_testcase


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
    with pytest.raises(TestcaseError, match="not reproducing the recorded bytes"):
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
