"""tools/lab/pipeline_bench.py's summary: medians, the checks and the issue's targets, from saved run lines."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from attnbench.cases.testcase import Shape
from attnbench.results.measurement import Measurement
from attnbench.results.stats import KernelStats
from tests.results.test_course_clock import t22_clock

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("pipeline_bench", ROOT / "tools" / "lab" / "pipeline_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(path: str, total: float, clock=None) -> dict:
    m = Measurement(variant="tf32x3", case="t22", shape=Shape(500, 2048, 64), device="NVIDIA H200",
                    compute_s=clock.compute_s if clock else 0.221, kernel=KernelStats([10.0, 10.1, 10.2]),
                    input_s=clock.read_s if clock else 0.26, output_s=clock.write_s if clock else 0.104,
                    peak_flops=6.69e13, clock=clock)
    data = m.to_dict()
    data["total_s"] = total
    return {"case": "t22", "variant": "tf32x3", "path": path, "exit": 0, "measurement": data}


def test_summary_medians_checks_and_targets(tool):
    records = [record("pipeline", t, t22_clock(wall_s=t)) for t in (0.21, 0.2, 0.3)]
    records += [record("no-pipeline", 0.586), {"case": "t22", "variant": "tf32x3", "kind": "check", "identical": True,
                                               "verify": {"passed": True}}]
    records.append({"case": "t22", "variant": "qreg", "path": "pipeline", "exit": 3, "measurement": None, "error": "x"})
    ceilings = {"gpu": {"device": "NVIDIA H200", "h2d_pinned_gbps": 55.5, "d2h_pinned_gbps": 55.3,
                        "h2d_pageable_gbps": 9.6, "d2h_pageable_gbps": 17.5, "pin_bytes": 787 << 20, "pin_s": 0.253},
                "files": {"t22": {"input_bytes": 786432012, "output_bytes": 262144000, "cat_s": 0.09, "write_s": 0.07}}}
    summary = tool.summarize(records, ceilings)
    rows = {r["path"]: r for r in summary["rows"]}
    assert set(rows) == {"pipeline", "no-pipeline"}
    piped = rows["pipeline"]
    assert piped["runs"] == 3 and piped["total_s"] == 0.21 and piped["clock"]["bound"] == "read"
    assert piped["identical"] is True and piped["verified"] is True
    t = piped["targets"]
    limit = max(786432000 / 55.5e9, 0.0101) + 5 * 4 * 2048 * 64 / 55.3e9
    assert t["compute_limit_s"] == pytest.approx(limit)
    assert t["compute_over_limit"] == pytest.approx(0.032 / limit)
    assert t["input_over_cat"] == pytest.approx(0.124 / 0.09)
    assert t["output_over_write"] == pytest.approx(0.08 / 0.07)
    assert t["total_under_0_25_s"] is True
    assert rows["no-pipeline"]["targets"] == {}
    assert summary["failures"] == [{"case": "t22", "variant": "qreg", "path": "pipeline", "exit": 3, "error": "x"}]
    text = tool.markdown(summary)
    assert "| t22 | tf32x3 | pipeline | 0.124 | 0.032 | 0.080 | 0.210 |" in text
    assert "h2d pinned | 55.5" in text
    assert f"| t22 | tf32x3 | {0.032 / limit:.2f} (" in text
    assert "- t22 qreg pipeline: exit 3: x" in text


def test_summary_of_nothing_is_still_a_document(tool, tmp_path):
    tool.write_summary(tmp_path)
    assert (tmp_path / "summary.md").read_text().startswith("# The course clock")


def test_the_spread_of_the_total_is_reported(tool):
    totals = [0.143, 0.232, 0.310, 0.119, 0.148, 0.288, 0.12, 0.13, 0.14, 0.15]
    records = [record("pipeline", t, t22_clock(wall_s=t)) for t in totals]
    row = tool.summarize(records, None)["rows"][0]
    sp = row["total_spread"]
    assert (sp["min"], sp["max"]) == (0.119, 0.310)
    assert sp["median"] == pytest.approx(0.1455) and sp["p90"] == 0.288  # the 9th of 10 sorted
    assert sp["p90_over_median"] == pytest.approx(0.288 / 0.1455)
    assert "0.119 / 0.145 / 0.288 / 0.310 (10)" in tool.markdown(tool.summarize(records, None))
