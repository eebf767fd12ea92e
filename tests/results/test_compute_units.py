"""attnbench.results.compute_units: each compute unit's facts, once."""

from __future__ import annotations

from fractions import Fraction

from attnbench.kernels.catalogue import all_variants, with_flavours
from attnbench.results.ceilings import Ceiling, CeilingSet, applied_ceiling
from attnbench.results.compute_units import COMPUTE_UNITS
from attnbench.results.datasheet import DeviceFacts, unit_peak

H100 = DeviceFacts("NVIDIA H100 80GB HBM3", (9, 0), 132, 1_980_000, 50 << 20, 2_619_000, 5120)


def test_every_unit_names_its_arithmetic_ceiling_and_datasheet_peak():
    """A unit without its arithmetic, its measured ceiling or its datasheet peak would leave a variant of it
    without the precision fact or without a share of any peak."""
    for name, unit in COMPUTE_UNITS.items():
        assert unit.name == name and unit.arithmetic and unit.ceiling_key and unit.ceiling_label, name
        assert unit_peak(name, H100) is not None, name
    tf32 = unit_peak("tensor", H100)[1]
    assert unit_peak("fp16", H100)[1] == unit_peak("bf16", H100)[1] == 2 * tf32  # half precision: twice TF32
    assert unit_peak("bf16x3", H100)[1] == 2 * tf32 / 3 and unit_peak("bf16x6", H100)[1] == unit_peak("tf32x3", H100)[1]


def test_every_variant_and_flavour_runs_on_a_unit_of_the_table():
    for variant in with_flavours(all_variants()):
        assert variant.compute_unit is COMPUTE_UNITS[variant.unit], variant.name


def test_the_oldest_gpu_of_each_unit():
    oldest = {name: unit.min_capability for name, unit in COMPUTE_UNITS.items() if unit.min_capability}
    assert oldest == {"tf32x3": (8, 0), "wgmma3x": (9, 0), "wgmma16s": (9, 0), "bf16": (8, 0), "bf16x3": (8, 0),
                      "bf16x6": (8, 0)}


def test_a_units_share_of_a_measured_ceiling_follows_its_divisor():
    ceilings = CeilingSet("H100", "580", "sm_90", 132, 1980.0, "2026-11-26", [
        Ceiling("tf32_wgmma", "TF32 wgmma", 300.0, "TFLOP/s"), Ceiling("dram_copy", "DRAM copy", 3000.0, "GB/s")])
    assert COMPUTE_UNITS["bf16x3"].divisor == Fraction(3, 2)
    applied = applied_ceiling("bf16x3", 100e12, 1.0, (1, 1, 1), ceilings)
    assert applied.name == "BF16 wgmma / 3 (3xBF16)" and applied.value == 200e12 and applied.fraction == 0.5
    memory = applied_ceiling("memory", 0.0, 1.0, (1, 1024, 64), ceilings)
    assert memory.value == 3000e9 and memory.fraction == 16 * 1024 * 64 / 3000e9
