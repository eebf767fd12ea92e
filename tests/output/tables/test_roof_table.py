"""attnbench.output.tables.roof_table: each cell's roof and the share of it reached, as the issue's table."""

from __future__ import annotations

from attnbench.output.render.markdown import markdown_document
from attnbench.output.tables.roof_table import roof_table
from tests.synthetic import COURSE_SHAPES, H200, result_set


def _rows(table) -> dict[str, list[str]]:
    return {row[0].text: [cell.text for cell in row[1:]] for row in table.rows}


def test_each_input_gets_its_work_its_roof_and_each_variants_share_of_it():
    # wgmma16s at 84.0 TFLOP/s on t11 (28.5213 GFLOP / 84e12 = 0.33954 ms) and 195 on t29 (549.756 GFLOP / 195e12
    # = 2.81926 ms); t11 is bound by HBM (185.7 us), t29 by the exponentials (1,027.1 us)
    times = {"wgmma16s": {"t11": 28.5212672e9 / 84e12 * 1e3, "t29": 549.755813888e9 / 195e12 * 1e3},
             "wgmma3x": {"t11": None, "t29": 4.5}}
    result = result_set(times, {c: COURSE_SHAPES[c] for c in ("t11", "t29")})
    table = roof_table(result)
    assert table is not None
    assert table.title.startswith("The roof of each cell on H200 SXM (HBM3e 4.8 TB/s, tensor FP16 989.5 TFLOP/s")
    rows = _rows(table)
    assert rows["t11"] == ["891.3 MB", "28.52", "2.23e+08", "185.7 us", "28.8 us", "53.3 us", "HBM",
                           "55% (2.62 TB/s)", "WRONG"]
    # t29: 1,027.08 / 2,819.26 = 36.4%; 4.295e9 exponentials / 2.81926 ms = 1.52 T/s; wgmma3x 1,027.08 / 4,500 = 23%
    assert rows["t29"][6:] == ["exp", "36% (1.52 T exp/s)", "23% (0.954 T exp/s)"]


def test_a_card_not_in_the_data_has_no_roof_table_and_the_markdown_page_says_nothing_of_one():
    unknown = {**H200, "name": "NVIDIA Future GPU"}
    result = result_set({"wgmma16s": {"t11": 0.34}}, {"t11": COURSE_SHAPES["t11"]}, gpu=unknown)
    assert roof_table(result) is None
    assert "The roof of each cell" not in markdown_document(result)


def test_the_compare_markdown_page_carries_the_roof_table():
    result = result_set({"wgmma16s": {"t11": 0.34}}, {"t11": COURSE_SHAPES["t11"]})
    page = markdown_document(result)
    assert "The roof of each cell on H200 SXM" in page
    assert "| t11 | 891.3 MB |" in page
