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
