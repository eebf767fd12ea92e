import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attnbench.bench import verify
from attnbench.bench.verify import compare_outputs
from attnbench.host_threads import HOST_THREADS_ENV
from attnbench.results.verification import Mismatch


def test_identical_outputs_pass_with_zero_errors(rng):
    ref = rng.standard_normal((2, 5, 3)).astype(np.float32)
    report = compare_outputs(ref.copy(), ref)
    assert report.passed and report.failing == 0
    assert report.max_abs_error == 0 and report.rel_l2_error == 0


def test_metrics_and_positions_of_failures():
    ref = np.ones((3, 4, 5), dtype=np.float32)
    out = ref.copy()
    out[1, 2, 3] += 0.1  # the worst
    out[2, 0, 1] -= 0.006  # just over 5e-3
    out[0, 0, 0] += 0.004  # within tolerance
    report = compare_outputs(out, ref)
    assert not report.passed
    assert report.failing == 2
    assert (report.worst.batch, report.worst.row, report.worst.col) == (1, 2, 3)
    assert report.max_abs_error == pytest.approx(0.1, rel=1e-5)
    assert report.max_rel_error == pytest.approx(0.1, rel=1e-5)
    expected_l2 = np.sqrt(0.1**2 + 0.006**2 + 0.004**2) / np.sqrt(ref.size)
    assert report.rel_l2_error == pytest.approx(expected_l2, rel=1e-4)
    positions = [(m.batch, m.row, m.col) for m in report.first_failures]
    assert positions == [(1, 2, 3), (2, 0, 1)]


def test_nan_and_inf_always_fail_and_are_counted():
    ref = np.zeros((1, 2, 2), dtype=np.float32)
    out = ref.copy()
    out[0, 0, 0] = np.nan
    out[0, 1, 1] = np.inf
    report = compare_outputs(out, ref, atol=1e9)
    assert not report.passed
    assert (report.nan_count, report.inf_count, report.failing) == (1, 1, 2)
    assert report.rel_l2_error == float("inf")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_reference_holding_nan_or_inf_is_refused_not_blamed_on_the_output(monkeypatch, bad):
    """`verify out.bin ref.bin` with a NaN in ref.bin failed the output (exit 1): no output can match it."""
    from attnbench.errors import ReferenceNotFinite

    monkeypatch.setattr(verify, "CHUNK_ELEMENTS", 4)
    ref = np.zeros((1, 3, 4), dtype=np.float32)
    ref[0, 2, 3] = bad  # in the last chunk
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "invalid value encountered" reached the user's terminal raw
        with pytest.raises(ReferenceNotFinite, match="NaN or Inf in 1 of 12 elements"):
            compare_outputs(np.zeros_like(ref), ref)


def test_relative_tolerance_widens_the_rule():
    ref = np.full((1, 1, 4), 100.0, dtype=np.float32)
    out = ref + 0.05
    assert not compare_outputs(out, ref).passed
    report = compare_outputs(out, ref, atol=5e-3, rtol=1e-3)
    assert report.passed, report
    assert (report.failing, report.rtol) == (0, 1e-3)
    assert report.rule() == "|out - ref| <= 0.005 + 0.001*|ref|"


def test_relative_tolerance_scales_with_the_reference_not_the_output():
    """rtol widens the rule by rtol*|ref| per element: 0.005 + 0.001*100 = 0.105 here, 0.006 at ref=1."""
    ref = np.array([[[100.0, 100.0, 1.0, 1.0, -100.0]]], dtype=np.float32)
    out = ref + np.array([[[0.104, 0.106, 0.0059, 0.0061, -0.104]]], dtype=np.float32)
    report = compare_outputs(out, ref, atol=5e-3, rtol=1e-3)
    assert not report.passed
    assert report.failing == 2
    assert [(m.col, m.want) for m in report.first_failures] == [(1, 100.0), (3, 1.0)]
    # Judged against |out| instead of |ref|, an output of 3 for a reference of 1 would pass at rtol=1.
    assert not compare_outputs(np.full((1, 1, 1), 3.0, np.float32), np.ones((1, 1, 1), np.float32),
                               atol=0.0, rtol=1.0).passed


def test_chunked_scan_finds_the_worst_element_anywhere(monkeypatch):
    import attnbench.bench.verify as verify

    monkeypatch.setattr(verify, "CHUNK_ELEMENTS", 7)
    ref = np.zeros((2, 3, 5), dtype=np.float32)
    out = ref.copy()
    out[1, 2, 4] = 1.0
    out[0, 1, 0] = 0.5
    report = compare_outputs(out, ref)
    assert (report.worst.batch, report.worst.row, report.worst.col) == (1, 2, 4)
    assert report.failing == 2


def test_an_error_exactly_at_the_tolerance_passes():
    ref = np.zeros((1, 1, 3), dtype=np.float32)
    out = np.array([[[0.5, -0.5, 0.25]]], dtype=np.float32)
    assert compare_outputs(out, ref, atol=0.5).passed
    assert compare_outputs(out, ref, atol=0.4999).failing == 2


def test_at_most_keep_failures_are_listed_in_order():
    ref = np.zeros((1, 3, 3), dtype=np.float32)
    out = ref + 1.0
    report = compare_outputs(out, ref)
    assert report.failing == 9 and report.elements == 9
    assert [(m.row, m.col) for m in report.first_failures] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    assert len(compare_outputs(out, ref, keep_failures=7).first_failures) == 7
    assert report.first_failures[0] == Mismatch(0, 0, 0, got=1.0, want=0.0, index=0)
    assert report.first_failures[4] == Mismatch(0, 1, 1, got=1.0, want=0.0, index=4)


def test_nan_is_the_worst_error_and_infinite():
    ref = np.zeros((1, 1, 3), dtype=np.float32)
    out = np.array([[[0.1, np.nan, 0.2]]], dtype=np.float32)
    report = compare_outputs(out, ref)
    assert report.max_abs_error == float("inf")
    assert (report.worst.col, np.isnan(report.worst.got)) == (1, True)
    assert report.rel_l2_error == float("inf")
    only_inf = compare_outputs(np.array([[[np.inf, 0, 0]]], dtype=np.float32), ref)
    assert (only_inf.nan_count, only_inf.inf_count, only_inf.rel_l2_error) == (0, 1, float("inf"))


def test_max_relative_error_is_over_the_reference():
    ref = np.array([[[2.0, 0.0, -4.0]]], dtype=np.float32)
    out = np.array([[[2.5, 0.001, -4.2]]], dtype=np.float32)
    report = compare_outputs(out, ref)
    assert report.max_rel_error == pytest.approx(0.25, rel=1e-6)  # 0.5 / 2; the zero reference is left out
    assert report.max_abs_error == pytest.approx(0.5, rel=1e-6)


def test_relative_l2_of_a_zero_reference_is_the_absolute_l2():
    ref = np.zeros((1, 1, 4), dtype=np.float32)
    out = np.array([[[0.3, 0.4, 0.0, 0.0]]], dtype=np.float32)
    assert compare_outputs(out, ref).rel_l2_error == pytest.approx(0.5, rel=1e-6)
    small = np.full((1, 1, 4), 0.25, dtype=np.float32)  # |ref|^2 = 0.25: below 1, still divided by
    assert compare_outputs(small + 0.01, small).rel_l2_error == pytest.approx(0.02 / 0.5, rel=1e-4)


def test_a_shape_mismatch_is_refused_with_both_shapes():
    with pytest.raises(ValueError, match=r"output shape \(1, 2, 3\) differs from reference shape \(1, 3, 2\)"):
        compare_outputs(np.zeros((1, 2, 3), np.float32), np.zeros((1, 3, 2), np.float32))


def test_chunks_add_up_counts_and_norms_and_keep_the_first_worst(monkeypatch):
    import attnbench.bench.verify as verify

    monkeypatch.setattr(verify, "CHUNK_ELEMENTS", 4)
    ref = np.full((1, 3, 4), 2.0, dtype=np.float32)  # three chunks of one row each
    out = ref.copy()
    out[0, 0, 0] = 3.0  # the worst, at flat index 0
    out[0, 0, 2] = np.inf
    out[0, 1, 1] = np.nan
    out[0, 1, 3] = -np.inf
    out[0, 2, 2] = np.nan
    report = compare_outputs(out, ref, atol=10.0)
    assert (report.nan_count, report.inf_count, report.failing) == (2, 2, 4)
    assert [(m.row, m.col) for m in report.first_failures] == [(0, 2), (1, 1), (1, 3), (2, 2)]
    assert [(m.row, m.col) for m in compare_outputs(out, ref, atol=10.0, keep_failures=2).first_failures] == [
        (0, 2), (1, 1)]  # the list stops at keep_failures even when a later chunk has more
    finite = ref.copy()
    finite[0, 0, 0] = 3.0  # error 1 in chunk 0 ...
    finite[0, 2, 1] = 3.0  # ... and an equal one in chunk 2: the first stays the worst
    finite[0, 1, 2] = 2.5
    report = compare_outputs(finite, ref)
    assert (report.worst.row, report.worst.col) == (0, 0)
    assert report.rel_l2_error == pytest.approx(np.sqrt(2.25 / (12 * 4.0)), rel=1e-6)
    assert [(m.row, m.col) for m in report.first_failures] == [(0, 0), (1, 2), (2, 1)]


def test_identical_outputs_name_the_first_element_as_worst():
    ref = np.ones((2, 2, 2), dtype=np.float32)
    report = compare_outputs(ref.copy(), ref)
    assert report.worst == Mismatch(0, 0, 0, got=1.0, want=1.0, index=0)
    assert report.to_dict()["worst"] == {"batch": 0, "row": 0, "col": 0, "got": 1.0, "want": 1.0, "index": 0}
    assert report.to_dict()["elements"] == 8 and report.rule() == "|out - ref| <= 0.005"


def test_empty_outputs_pass_and_have_no_worst_element():
    empty = np.zeros((0, 4, 2), dtype=np.float32)
    report = compare_outputs(empty, empty)
    assert report.passed and report.worst is None and report.elements == 0 and report.rel_l2_error == 0.0


def test_a_chunked_output_file_with_a_wrong_element_in_its_second_chunk(tmp_path, monkeypatch, rng):
    """Both sides read from files a chunk at a time: the failure, its position and the sums across chunks."""
    import attnbench.bench.verify as verify
    from attnbench.cases.testcase import OutputFile, Shape, write_output

    monkeypatch.setattr(verify, "CHUNK_ELEMENTS", 8)
    ref = rng.uniform(-1, 1, size=(2, 3, 4)).astype(np.float32)  # 24 elements: three chunks
    out = ref.copy()
    out[0, 2, 1] += 0.25  # flat index 9: the second chunk
    out[1, 0, 0] -= 0.001  # within the tolerance, in the second chunk too
    out[1, 2, 3] += 0.002  # the last element, in the third chunk
    write_output(tmp_path / "out.bin", out)
    write_output(tmp_path / "ref.bin", ref)
    with OutputFile(tmp_path / "out.bin", Shape(2, 3, 4)) as got, OutputFile(tmp_path / "ref.bin") as want:
        report = compare_outputs(got, want)
    assert (report.passed, report.failing, report.elements, report.positions) == (False, 1, 24, "batch, row, col")
    wrong = Mismatch(0, 2, 1, got=float(out[0, 2, 1]), want=float(ref[0, 2, 1]), index=9)
    assert report.first_failures == [wrong] and report.worst == wrong
    errors = np.abs(out.astype(np.float64) - ref.astype(np.float64))
    assert report.l1_error == pytest.approx(errors.sum(), rel=1e-12)  # summed over all three chunks
    assert report.l1_error == pytest.approx(0.253, rel=1e-3)
    assert report.max_abs_error == pytest.approx(errors.max(), rel=1e-12)
    with OutputFile(tmp_path / "out.bin") as got:  # a file and an array: the same verdict
        assert compare_outputs(got, ref).first_failures == [wrong]


def test_without_a_shape_positions_are_flat_indices():
    ref = np.zeros(6, dtype=np.float32)
    out = ref.copy()
    out[4] = 1.0
    report = compare_outputs(out, ref)
    assert report.positions == "flat"
    assert report.worst == Mismatch(None, None, None, got=1.0, want=0.0, index=4) == report.first_failures[0]
    assert str(report.worst) == "(element 4): got 1, want 0"
    from attnbench.cases.testcase import Shape

    given = compare_outputs(out, ref, shape=Shape(1, 2, 3))  # a shape given names (batch, row, col)
    assert given.positions == "batch, row, col" and given.worst == Mismatch(0, 1, 1, got=1.0, want=0.0, index=4)


def test_positions_come_from_whichever_side_knows_the_shape(tmp_path):
    from attnbench.cases.testcase import OutputFile, write_output

    ref = np.zeros((1, 2, 3), dtype=np.float32)
    out = ref.copy()
    out[0, 1, 2] = 1.0
    write_output(tmp_path / "out.bin", out)
    write_output(tmp_path / "ref.bin", ref)
    with OutputFile(tmp_path / "out.bin") as flat_out, OutputFile(tmp_path / "ref.bin") as flat_ref:
        for got, want in ((flat_out, ref), (out, flat_ref)):
            report = compare_outputs(got, want)
            assert report.positions == "batch, row, col", (got, want)
            assert (report.worst.batch, report.worst.row, report.worst.col, report.worst.index) == (0, 1, 2, 5)
        assert compare_outputs(flat_out, flat_ref).positions == "flat"


def test_sides_of_different_sizes_are_refused_with_both_sizes(tmp_path):
    from attnbench.cases.testcase import OutputFile, write_output

    write_output(tmp_path / "out.bin", np.zeros((1, 2, 3), np.float32))
    with OutputFile(tmp_path / "out.bin") as got:
        with pytest.raises(ValueError, match=r"^the output has 6 elements and the reference 8$"):
            compare_outputs(got, np.zeros((1, 2, 4), np.float32))


def test_the_l1_error_adds_up_over_chunks_and_is_infinite_with_nan(monkeypatch):
    import attnbench.bench.verify as verify

    monkeypatch.setattr(verify, "CHUNK_ELEMENTS", 2)
    ref = np.zeros((1, 1, 5), dtype=np.float32)
    out = np.array([[[0.5, -0.25, 0.0, 1.0, -2.0]]], dtype=np.float32)
    assert compare_outputs(out, ref).l1_error == 3.75
    out[0, 0, 2] = np.nan
    assert compare_outputs(out, ref).l1_error == float("inf")


def test_the_finite_check_counts_nan_and_inf_in_every_chunk(monkeypatch):
    import attnbench.bench.verify as verify

    monkeypatch.setattr(verify, "CHUNK_ELEMENTS", 4)
    output = np.ones((2, 3, 2), dtype=np.float32)  # 12 elements: three chunks
    output[0, 0, 0] = np.nan  # the first element
    output[1, 0, 1] = np.inf  # in the second chunk
    output[1, 2, 1] = -np.inf  # the last element
    check = verify.finite_check(output)
    assert (check.nonfinite, check.elements, check.passed) == (3, 12, False)
    assert check.describe() == "3 of 12 output elements are NaN or Inf"
    assert check.to_dict() == {"rule": "every element finite", "passed": False, "nonfinite": 3, "elements": 12}
    clean = verify.finite_check(np.ones((1, 1, 5), dtype=np.float32))
    assert (clean.nonfinite, clean.elements, clean.passed) == (0, 5, True)


outputs_and_references = st.integers(1, 120).flatmap(lambda n: st.tuples(
    arrays(np.float32, n, elements=st.floats(-4, 4, width=32) | st.sampled_from([np.nan, np.inf, -np.inf, 1e30])),
    arrays(np.float32, n, elements=st.floats(-4, 4, width=32)),
))


@settings(max_examples=80, deadline=None)
@given(sides=outputs_and_references, chunk=st.integers(1, 9), atol=st.sampled_from([5e-3, 0.5]),
       rtol=st.sampled_from([0.0, 0.1]))
def test_the_report_does_not_depend_on_the_number_of_threads(sides, chunk, atol, rtol):
    """Chunks are compared on several threads: counts, sums, extremes and first failures must be
    exactly those of one thread going through them in order."""
    out, ref = sides
    reports = []
    for threads in ("1", "4"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(verify, "CHUNK_ELEMENTS", chunk)
            patch.setenv(HOST_THREADS_ENV, threads)
            reports.append(compare_outputs(out, ref, atol, rtol, keep_failures=3).to_dict())
    assert repr(reports[0]) == repr(reports[1])  # repr: a NaN element equals itself
    diff = np.abs(out.astype(np.float64) - ref)
    diff[~np.isfinite(out)] = np.inf
    bad = np.flatnonzero(~(diff <= atol + rtol * np.abs(ref.astype(np.float64))))
    assert reports[0]["failing"] == bad.size
    assert [m["index"] for m in reports[0]["first_failures"]] == bad[:3].tolist()
    assert reports[0]["worst"]["index"] == int(np.argmax(diff))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_the_tolerance_boundary_with_rtol_passes_and_one_ulp_beyond_fails(sign):
    """Exactly representable values: |1.5 - 1.0| = 0.5 = atol + rtol * |ref| with atol = rtol = 0.25."""
    ref = np.full((1, 2, 2), sign * 1.0, np.float32)
    out = np.full((1, 2, 2), sign * 1.5, np.float32)
    assert compare_outputs(out, ref, atol=0.25, rtol=0.25).passed
    out[0, 1, 1] = np.nextafter(np.float32(sign * 1.5), np.float32(sign * 2.0))
    report = compare_outputs(out, ref, atol=0.25, rtol=0.25)
    assert not report.passed and report.failing == 1
    assert not compare_outputs(np.full((1, 2, 2), sign * 1.5, np.float32), ref, atol=0.25, rtol=0.0).passed


def test_an_output_of_one_chunk_is_compared_without_starting_a_thread(monkeypatch):
    """t01-t10's outputs are one chunk: a pool's thread took 2 ms to start, the comparison 0.05 ms."""
    from attnbench.bench import verify

    monkeypatch.setattr(verify, "ThreadPoolExecutor", lambda *a, **k: pytest.fail("a pool for one chunk"))
    ref = np.linspace(-1, 1, verify.CHUNK_ELEMENTS, dtype=np.float32).reshape(1, -1, 8)
    report = verify.compare_outputs(ref + np.float32(1e-3), ref)
    assert report.passed and report.elements == ref.size
