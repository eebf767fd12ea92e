"""Each fact of the package is defined once, as data; these tests hold that no second copy comes back."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attnbench"


def sources_matching(pattern: str, allowed: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """The package's modules (but `allowed`) with lines matching `pattern`."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(ROOT))
        if name in allowed:
            continue
        lines = [line.strip() for line in path.read_text().splitlines() if re.search(pattern, line)]
        if lines:
            found[name] = lines
    return found


def test_result_kinds_are_compared_as_the_enum_never_as_strings():
    assert not sources_matching(r"""kind\s*[!=]=\s*["'](compare|sweep|judge)["']|kind=["'](compare|sweep|judge)["']""")


def test_the_check_rule_sentence_is_written_only_by_check_rule_describe():
    assert not sources_matching(r"per element, float64 reference|n\^2 FLT_EPSILON \(the lab",
                                allowed=("attnbench/bench/check_rule.py",))


def test_the_course_time_limits_are_read_only_from_the_suite_manifest():
    # as string literals or as code (comments may give the example)
    assert not sources_matching(r"[\"'](2/6/10|t01-t10 2 s|GTX 1080[\"'])|<= 10 else|<= 20 else")


def test_shapes_typed_by_a_person_are_read_only_by_shape_parse():
    # a B,N,d or BxNxd split by hand, in the package or in the tools
    hand_made = r"int\(\w+\) for \w+ in [\w.]*(lower\(\))?\.?split\([\"'][x,][\"']\)\)\s*$|split\([\"']x[\"']\)"
    assert not sources_matching(hand_made)
    tools = {str(p.relative_to(ROOT)) for p in (ROOT / "tools").rglob("*.py")
             if re.search(r"split\([\"']x[\"']\)", p.read_text())}
    assert not tools


def test_the_sweep_axes_are_listed_only_in_cases_sweeps():
    assert not sources_matching(r"[\"']head-dim[\"']|[\"']128\.\.32768[\"']|[\"']seq[\"']",
                                allowed=("attnbench/cases/sweeps.py",))


def test_the_compute_units_facts_are_read_from_their_table():
    # a unit's name compared, or its facts keyed by it, outside the table (and the Triton peer's own precisions)
    unit_names = r"(ffma|tf32x3|wgmma3x|wgmma16s|tensor|memory|fp16|bf16|bf16x3|bf16x6)"
    assert not sources_matching(rf"unit (==|!=|in) \(?[\"']{unit_names}[\"']|[\"']{unit_names}[\"']: \(", allowed=(
        "attnbench/results/compute_units.py", "attnbench/backends/triton_peer.py"))
    assert not sources_matching(r"UNIT_CEILINGS|UNIT_ARITHMETIC|UNIT_MIN_CAPABILITY")
    assert not (PACKAGE / "ceilings.json").exists()  # the ceilings chart draws the same roofs as the roofline


def test_the_default_variant_rules_are_records_only():
    assert not sources_matching(r"FASTEST_FIRST|DEFAULT_ONLY_WHERE")
    assert not sources_matching(r"docs/results/20", allowed=(
        "attnbench/api/__init__.py", "attnbench/api/compare_plan.py", "attnbench/cli/matrix_commands.py"))  # examples


def test_a_result_sets_settings_are_read_as_the_records_fields():
    assert not sources_matching(r"(result|partial|saved|spread)\.settings(\.get\(|\[)")
