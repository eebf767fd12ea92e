import numpy as np
import pytest

from attnbench.verify import compare_outputs


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
    import attnbench.verify as verify

    monkeypatch.setattr(verify, "_CHUNK_ELEMENTS", 7)
    ref = np.zeros((2, 3, 5), dtype=np.float32)
    out = ref.copy()
    out[1, 2, 4] = 1.0
    out[0, 1, 0] = 0.5
    report = compare_outputs(out, ref)
    assert (report.worst.batch, report.worst.row, report.worst.col) == (1, 2, 4)
    assert report.failing == 2
