"""What `attnbench ceilings` names: the ceilings' cache."""

from attnbench.output.tables.explain_tables import cache_line
from attnbench.results.ceilings import CeilingSet, cache_path


def test_the_cache_line_is_the_cache_of_that_gpu_and_driver():
    found = CeilingSet("NVIDIA H200", "580.65", "sm_90", 132, 1980.0, "2026-11-22")
    assert cache_line(found) == f"cache: {cache_path('NVIDIA H200', '580.65')}"
