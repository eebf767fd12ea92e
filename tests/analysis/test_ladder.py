import pytest

from attnbench.analysis.ladder import has_ladder, ladder_order, ladder_steps, load_claims
from tests.synthetic import COURSE_SHAPES, result_set


def test_claims_are_report_004s_computing_seconds_with_their_source():
    claims = load_claims()
    assert "004" in claims.source and claims.device == "NVIDIA GeForce GTX 1080"
    assert claims.seconds("t10", "kernels") == 4.305 and claims.seconds("t10", "cpu") == 21.61
    assert claims.seconds("t29", "bankfree") == 0.737 and claims.seconds("t30", "qreg") == 0.878
    assert claims.seconds("t11", "kernels") is None
    assert [len(claims.steps[c]) for c in ("t10", "t11", "t22", "t29", "t30")] == [5, 7, 7, 7, 7]


def test_ladder_order_keeps_the_reports_order_and_drops_peers():
    assert ladder_order(["torch", "splitq", "kernels", "fused"]) == ["kernels", "fused", "splitq"]


def test_each_step_against_the_one_before_next_to_the_claim():
    times = {"kernels": {"t10": 40.0}, "fused": {"t10": 10.0}, "maxsmem": {"t10": 10.1}, "splitq": {"t10": 20.0},
             "torch": {"t10": 1.0}}
    r = result_set(times, {"t10": COURSE_SHAPES["t10"]})
    steps = ladder_steps(r)["t10"]
    assert [s.variant for s in steps] == ["kernels", "fused", "maxsmem", "splitq"]
    first, fused, maxsmem, splitq = steps
    assert first.vs_previous is None and first.claimed_s == 4.305 and first.claimed_speedup is None
    assert fused.previous == "kernels" and fused.vs_previous.speedup == pytest.approx(4.0)
    assert fused.claimed_speedup == pytest.approx(4.305 / 0.984) and fused.agreement == "agrees"
    assert maxsmem.vs_previous.verdict.value == "SAME" and maxsmem.agreement == "differs"  # 004: 2.27x faster
    assert splitq.vs_previous.verdict.value == "SLOWER" and splitq.agreement == "differs"
    assert has_ladder(r)


def test_a_wrong_step_is_skipped_as_the_step_before():
    times = {"kernels": {"t10": 40.0}, "fused": {"t10": None}, "maxsmem": {"t10": 10.0}}
    r = result_set(times, {"t10": COURSE_SHAPES["t10"]})
    steps = ladder_steps(r)["t10"]
    assert steps[1].kernel_ms is None and steps[1].vs_previous is None
    assert steps[2].previous == "kernels" and steps[2].vs_previous.speedup == pytest.approx(4.0)
    assert steps[2].claimed_speedup == pytest.approx(4.305 / 0.434)


def test_one_step_is_no_ladder():
    r = result_set({"kernels": {"t10": 1.0}, "torch": {"t10": 1.0}}, {"t10": COURSE_SHAPES["t10"]})
    assert not has_ladder(r) and ladder_steps(r) == {}
