"""What `attnbench profile --save` and `attnbench ceilings` name: the profile's file stem, the ceilings' cache."""

import datetime as dt

from attnbench.output.tables.explain_tables import cache_line, profile_stem
from attnbench.results.ceilings import CeilingSet, cache_path


def test_a_saved_profile_is_named_by_date_gpu_case_and_variants():
    stem = profile_stem({"gpu": {"name": "NVIDIA H200"}}, "t29", ["qreg", "bankfree"])
    assert stem == f"{dt.date.today().isoformat()}_h200_profile_t29_qreg-bankfree"


def test_the_cache_line_is_the_cache_of_that_gpu_and_driver():
    found = CeilingSet("NVIDIA H200", "580.65", "sm_90", 132, 1980.0, "2026-11-22")
    assert cache_line(found) == f"cache: {cache_path('NVIDIA H200', '580.65')}"
