"""attnbench.kernels.default_rules: each default-variant rule is a record naming the run it came from."""

from __future__ import annotations

from pathlib import Path

from attnbench.cases.testcase import Shape
from attnbench.kernels.builtin_variants import REGISTRY
from attnbench.kernels.catalogue import default_variant
from attnbench.kernels.default_rules import ACCURACIES, DEFAULT_RULES

REFERENCE_RUNS = Path(__file__).resolve().parents[2] / "docs" / "results"


def test_every_measured_rule_names_a_reference_run_that_exists():
    for rule in DEFAULT_RULES:
        if rule.measured_in is not None:
            found = [REFERENCE_RUNS / f"{rule.measured_in}{suffix}" for suffix in (".json", ".md")]
            assert any(path.is_file() for path in found), (rule.variant, rule.measured_in)
        assert rule.finding, rule.variant


def test_every_rule_names_a_builtin_variant_once_with_a_known_accuracy():
    names = [rule.variant for rule in DEFAULT_RULES]
    assert len(names) == len(set(names)) and set(names) <= set(REGISTRY)
    assert {rule.accuracy for rule in DEFAULT_RULES} <= set(ACCURACIES)


def test_the_fallbacks_come_after_every_measured_rule():
    measured = [rule.measured_in is not None for rule in DEFAULT_RULES]
    assert measured == sorted(measured, reverse=True) and not measured[-1]


def test_the_default_is_the_first_rule_that_leads_and_runs():
    shape = Shape(1, 256, 256)  # the square lab's: the flash variants refuse d = 256
    first = next(rule for rule in DEFAULT_RULES if rule.accuracy == "float32" and rule.applies(shape)
                 and REGISTRY[rule.variant].refusal(shape) is None
                 and REGISTRY[rule.variant].runs_on((8, 0)))
    assert default_variant(shape, gpu_usable=True, compute_capability=(8, 0)).name == first.variant == "gemmtc"
    assert default_variant(shape, gpu_usable=True, compute_capability=(7, 5)).name == "gemm"


def test_every_measured_lead_region_names_a_reference_run_that_exists():
    from attnbench.kernels.default_rules import lead_regions

    regions = lead_regions("wgmma16s")
    assert regions
    for region in regions:
        found = [REFERENCE_RUNS / f"{region.measured_in}{suffix}" for suffix in (".json", ".md")]
        assert any(path.is_file() for path in found), region
        assert region.finding


def test_a_new_measured_region_in_the_data_alone_moves_the_course_default(tmp_path, monkeypatch):
    # d = 128 below N = 2048 was not measured: the float32 default there, until a region with its run is added
    from attnbench.kernels import default_rules

    shape = Shape(5, 1000, 128)
    assert default_variant(shape, gpu_usable=True, compute_capability=(9, 0), accuracy="course").name == "wgmma3x"
    data = default_rules.MEASURED_LEADS.read_text() + (
        '\n[[wgmma16s]]\nd_min = 65\nd_max = 128\nn_max = 2047\nmeasured_in = "a later compare"\n'
        'finding = "faster at d = 128 below N = 2048"\n')
    edited = tmp_path / "measured_leads.toml"
    edited.write_text(data)
    rules = tuple(default_rules.DefaultRule(r.variant, r.measured_in, r.finding,
                                            default_rules.MeasuredLeads(r.variant, edited), r.accuracy)
                  if isinstance(r.leads, default_rules.MeasuredLeads) else r for r in DEFAULT_RULES)
    monkeypatch.setattr("attnbench.kernels.catalogue.DEFAULT_RULES", rules)
    assert default_variant(shape, gpu_usable=True, compute_capability=(9, 0), accuracy="course").name == "wgmma16s"
    assert default_variant(Shape(5, 1000, 96), gpu_usable=True, compute_capability=(9, 0), accuracy="course").name \
        != "wgmma16s"  # outside every region (and a head dim it refuses)


def test_a_region_holds_its_bounds_inclusively_and_leaves_the_missing_ones_open():
    from attnbench.kernels.default_rules import LeadRegion

    region = LeadRegion(65, 128, 2048, None, "run", "finding")
    assert region.holds(Shape(1, 2048, 128)) and region.holds(Shape(1, 65536, 65))
    assert not region.holds(Shape(1, 2047, 128)) and not region.holds(Shape(1, 4096, 64))
