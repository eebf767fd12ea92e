"""attnbench.output.tables.result_tables: the fraction-of-ceiling table of a compare or sweep."""

from __future__ import annotations

from attnbench.analysis.view import MatrixView
from attnbench.output.tables.result_tables import ceiling_table, matrix_tables
from tests.synthetic import COURSE_SHAPES, result_set

WGMMA_CEILING = {"name": "TF32 wgmma / 3 (3xTF32)", "value": 156.6e12, "measured": True}


def _with_ceilings(result, fractions: dict[tuple[str, str], float]):
    for cell in result.cells:
        fraction = fractions.get((cell.variant, cell.case))
        if fraction is not None and cell.measurement is not None:
            cell.measurement.ceiling = {**WGMMA_CEILING, "fraction": fraction}
    return result


def _rows(table) -> list[list[str]]:
    return [[str(cell) for cell in row] for row in table.rows]


def test_each_cell_shows_its_share_of_the_variants_ceiling_named_once_per_variant():
    times = {"wgmma3x": {"t10": 0.156, "t11": 0.529, "t22": None}, "torch": {"t10": 0.394, "t11": 1.685, "t22": 15.2}}
    result = _with_ceilings(result_set(times, COURSE_SHAPES), {("wgmma3x", "t10"): 0.4398, ("wgmma3x", "t11"): 0.3442})
    table = ceiling_table(MatrixView(result))
    assert table is not None
    rows = {row[0]: row[1:] for row in _rows(table)}
    # wgmma3x has a ceiling (named once), a wrong cell keeps its status; torch has no measured ceiling;
    # t29 and t30 have no cells
    assert rows["wgmma3x"] == ["TF32 wgmma / 3 (3xTF32) (measured)", "44.0%", "34.4%", "WRONG", "-", "-"]
    assert rows["torch"] == ["-"] * 6


def test_no_ceiling_table_when_no_ceiling_was_measured():
    result = result_set({"qreg": {"t10": 1.0}, "torch": {"t10": 0.4}}, COURSE_SHAPES)
    view = MatrixView(result)
    assert ceiling_table(view) is None
    assert not any("peak" in table.title for table in matrix_tables(view))
    _with_ceilings(result, {("qreg", "t10"): 0.16})
    assert any("peak" in table.title for table in matrix_tables(MatrixView(result)))


def test_one_sample_shows_no_stddev_and_a_relative_error_only_where_the_rule_uses_it():
    import numpy as np

    from attnbench.bench.verify import compare_outputs
    from attnbench.cases.testcase import Shape
    from attnbench.output.tables.run_tables import measurement_table, verify_table
    from attnbench.results.measurement import Measurement
    from attnbench.results.stats import KernelStats

    one = Measurement(variant="cpu", case="t02", shape=Shape(1, 2, 2), device="CPU", compute_s=0.1,
                      kernel=KernelStats([1.5]))
    stddev = [r for r in _rows(measurement_table(one)) if r[0] == "pass stddev"]
    assert stddev == [["pass stddev", "-", "one sample: no spread, noise unknown"]]
    ref = np.array([[[1e-9, 1.0], [2.0, 3.0]]], np.float32)
    out = ref + np.float32(1e-4)
    absolute = [r[0] for r in _rows(verify_table(compare_outputs(out, ref), "t"))]
    assert "max relative error" not in absolute and "max abs error" in absolute
    relative = [r[0] for r in _rows(verify_table(compare_outputs(out, ref, rtol=0.01), "t"))]
    assert "max relative error" in relative


def test_refused_cells_group_by_their_refusals_fields_not_their_words():
    from attnbench.output.tables.result_tables import grouped_notes
    from attnbench.results.refusal import Refusal, RefusalKind
    from attnbench.results.resultset import REFUSED, Cell

    result = result_set({"naive": {"t10": 1.0}}, {"t10": COURSE_SHAPES["t10"]})
    result.cells += [
        Cell.refused("t22", Refusal("naive", RefusalKind.MAX_SEQ_LEN, 16384, 32768)),
        Cell.refused("t29", Refusal("naive", RefusalKind.MAX_SEQ_LEN, 16384, 65536)),
        Cell.refused("t22", Refusal("wgmma3x", RefusalKind.ARCH, "sm_90a", "sm_80")),
        Cell.refused("t29", Refusal("wgmma3x", RefusalKind.ARCH, "sm_90a", "sm_80")),
        Cell("bankfree", "t29", REFUSED, "an older file's sentence, and the case has d=48"),
    ]
    assert grouped_notes(result) == [
        "refused: naive needs N <= 16384 (t22, t29)",
        "refused: wgmma3x runs on sm_90a only, and this GPU is sm_80 (t22, t29)",
        "refused: an older file's sentence, and the case has d=48 (t29)",
    ]


def test_warnings_group_by_their_fields_with_the_cells_that_got_them():
    from attnbench.bench.sampler import NOISE_WARNING
    from attnbench.output.tables.result_tables import grouped_notes, grouped_warnings

    times = {v: {c: 1.0 for c in ("t10", "t11", "t22")} for v in ("a", "b", "c")}
    result = result_set(times, {c: COURSE_SHAPES[c] for c in ("t10", "t11", "t22")})
    for cell in result.cells:
        cell.measurement.kernel.warnings.append(NOISE_WARNING)
    assert grouped_warnings(result) == [(NOISE_WARNING, [f"{v}/{c}" for v in times for c in times[v]])]
    assert grouped_notes(result) == [
        f"warning (a/t10, a/t11, a/t22, b/t10, b/t11, b/t22 and 3 more): {NOISE_WARNING.sentence()}"]


def test_each_speed_shows_its_worst_error_as_a_share_of_the_tolerance():
    """Speed bought with precision shows beside the speed: split FP16 at 0.2 of the tolerance, 3xTF32 near 0."""
    from attnbench.output.tables.result_tables import check_text, error_share, tflops_table

    result = result_set({"wgmma3x": {"t10": 0.2}, "wgmma16s": {"t10": 0.1}}, COURSE_SHAPES)
    for cell in result.cells:
        cell.check = {**(cell.check or {}), "atol": 5e-3, "rtol": 0.0}
    result.cell("wgmma16s", "t10").check["max_abs_error"] = 1.0e-3
    assert error_share(result.cell("wgmma16s", "t10")) == 0.2
    rows = {row[0]: row[1] for row in _rows(tflops_table(MatrixView(result)))}
    assert rows["wgmma16s"].endswith(", err 0.2 tol") and rows["wgmma3x"].endswith(", err 0.0002 tol")
    assert "(0.2 of the tolerance)" in str(check_text(result.cell("wgmma16s", "t10")))
    # a relative rule (or a check without its tolerance, as in older files) has no share to show
    result.cell("wgmma16s", "t10").check["rtol"] = 1e-3
    assert error_share(result.cell("wgmma16s", "t10")) is None
    assert error_share(result.cell("wgmma3x", "t10")) is not None
    del result.cell("wgmma3x", "t10").check["atol"]
    assert error_share(result.cell("wgmma3x", "t10")) is None


def test_the_precision_ladder_table_most_accurate_first_with_wrong_variants_kept():
    from attnbench.output.tables.result_tables import matrix_tables, precision_table
    from attnbench.results.resultset import VariantInfo

    result = result_set({"wgmma3x": {"t10": 0.2}, "wgmma16s": {"t10": 0.1}, "torch:fp16": {"t10": None}}, COURSE_SHAPES)
    for cell in result.cells:
        cell.check = {**(cell.check or {}), "atol": 5e-3, "rtol": 0.0}
    result.cell("wgmma16s", "t10").check["max_abs_error"] = 1.0e-3
    result.cell("torch:fp16", "t10").check["max_abs_error"] = 7.5e-3
    assert precision_table(result) is None  # no arithmetic recorded (as in older files): no ladder to show
    arithmetic = {"wgmma3x": "3xTF32 (wgmma)", "wgmma16s": "split FP16 + FP16", "torch:fp16": "FP16"}
    result.variants = [VariantInfo(v, "x", "t", "gpu", None, None, (), "float32", a) for v, a in arithmetic.items()]
    table = precision_table(result)
    rows = _rows(table)
    assert [row[0] for row in rows] == ["wgmma3x", "wgmma16s", "torch:fp16"]
    assert rows[1][1:] == ["split FP16 + FP16", "0.2", f"{result.cell('wgmma16s', 't10').measurement.tflops:.3g}",
                           "1 timed of 1", "front"]
    assert rows[2][2:] == ["1.5", "no speed", "0 timed, 1 WRONG of 1", ""]
    assert table.title in [t.title for t in matrix_tables(MatrixView(result))]


def test_a_run_without_time_says_whether_rounding_or_a_launch_that_did_not_compute_cost_it():
    from dataclasses import replace

    from attnbench.cases.testcase import Shape
    from attnbench.output.tables.run_tables import measurement_table
    from attnbench.results.measurement import Measurement
    from attnbench.results.stats import KernelStats
    from attnbench.results.timed_check import TIMED, SampleErrors, SampleFailure, TimedCheck, WorstElement

    worst = WorstElement(0, 5, 3, 1.006, 1.0, 0.006)
    failure = SampleFailure(1, TIMED, 16, 8, SampleErrors(0, None, 16, [5], 1, 1, worst))
    failed = TimedCheck(1, 1, 16, 16, 5e-3, 0.0, failure)
    m = Measurement(variant="wgmma16s", case="v6", shape=Shape(1, 16, 8), device="GPU", compute_s=0.1,
                    kernel=KernelStats([1.0]), peak_flops=1e15, timed_check=failed)
    rows = {r[0]: r[2] for r in _rows(measurement_table(m))}
    assert rows["kernel"] == "no time: a launch did not compute the answer (see below)"
    m.timed_check = replace(failed, precision="FP16's rounding of V, P and the scores explains: up to 0.0061")
    rows = {r[0]: r[2] for r in _rows(measurement_table(m))}
    assert rows["kernel"] == "no time: its arithmetic's rounding put an element outside the tolerance (see below)"
