"""What each compute unit a variant runs on is, stated once as data: its arithmetic, the oldest GPU with its
instructions, the measured ceiling and the datasheet peak it is held to, and whether the roofline draws it.

A variant declares its unit (`Variant.unit`); the catalogue, the refusals, the ceilings, the datasheet and
the roofline read this table, never the unit's name. A new unit is one record here.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from attnbench.results.precision_envelope import SPLIT_FP16_WITH_FP16_PV, Rounding

# The datasheet figure a unit's peak is a share of: FP32 FFMA, dense TF32 tensor cores, DRAM bandwidth.
PeakSource = Literal["fp32", "tf32", "dram"]


@dataclass(frozen=True)
class ComputeUnit:
    """The facts of one compute unit."""

    name: str
    arithmetic: str  # the precision its products keep (Q K^T and P V), as `attnbench list` and results show it
    min_capability: tuple[int, int] | None  # the oldest GPU with its instructions; None: any GPU
    ceiling_key: str  # the measured ceiling it is held to (`attnbench ceilings`: a key of Ceiling)
    ceiling_label: str  # that ceiling's name once divided
    peak_source: PeakSource  # the datasheet figure it is held to without measured ceilings
    peak_label: str  # that peak's name once divided
    # The ceiling's and the peak's rate over this: 3 for 3xTF32 (three TF32 products per useful one),
    # 1/2 for FP16 (twice the TF32 rate).
    divisor: Fraction = Fraction(1)
    roof: bool = False  # the roofline draws its ceiling (the units the built-in variants run on, and TF32)
    # What its arithmetic rounds beyond float32, where that can cost the course's tolerance on some inputs: a
    # variant on it refuses an input whose ranges put the check out of reach (`precision_envelope`). None: none.
    rounding: Rounding | None = None

    @property
    def moves_bytes(self) -> bool:
        """Its ceiling is a bandwidth (bytes per second), its rate the bytes a pass must move."""
        return self.peak_source == "dram"

    def share_of(self, rate: float) -> float:
        """A ceiling's or peak's rate (FLOP/s, bytes/s) divided as this unit does its work."""
        return rate * self.divisor.denominator / self.divisor.numerator


# Hopper wgmma in split FP16 does four FP16 products per two useful ones at twice the TF32 rate: the TF32 rate.
# The half-precision peers: FP16 and BF16 run at twice the TF32 rate; their ceiling is wgmma's, the higher of
# the two instructions, so that no peer's backend (mma.sync or wgmma) is held under a ceiling it can pass.
# TF32 mma.sync came with Ampere (sm_80), wgmma with Hopper (sm_90), BF16 tensor cores with Ampere; FFMA and
# memory-bound kernels build for any GPU, the course's GTX 1080 (sm_61) too.
COMPUTE_UNITS: dict[str, ComputeUnit] = {
    unit.name: unit
    for unit in (
        ComputeUnit("ffma", "FP32 FFMA", None, "ffma", "FP32 FFMA", "fp32", "FP32 FFMA peak", roof=True),
        ComputeUnit("tf32x3", "3xTF32", (8, 0), "tf32_mma", "TF32 mma.sync / 3 (3xTF32)",  # big*big + big*small +
                    "tf32", "TF32 tensor-core peak / 3 (3xTF32)", Fraction(3), roof=True),  # small*big, FP32 sums
        ComputeUnit("wgmma3x", "3xTF32 (wgmma)", (9, 0), "tf32_wgmma", "TF32 wgmma / 3 (3xTF32)",
                    "tf32", "TF32 tensor-core peak / 3 (3xTF32)", Fraction(3), roof=True),
        # Q K^T as hi*hi + hi*lo + lo*hi in FP16, P V one FP16 product; FP32 sums
        ComputeUnit("wgmma16s", "split FP16 + FP16", (9, 0), "tf32_wgmma",
                    "FP16 wgmma / 2 (split FP16 Q K^T + FP16 P V)", "tf32", "FP16 tensor-core peak / 2 (split FP16)",
                    rounding=SPLIT_FP16_WITH_FP16_PV),
        ComputeUnit("tensor", "TF32", None, "tf32_mma", "TF32 mma.sync",  # one product, a 10-bit mantissa
                    "tf32", "TF32 tensor-core peak", roof=True),
        ComputeUnit("memory", "FP32", None, "dram_copy", "DRAM copy bandwidth", "dram", "DRAM bandwidth"),
        # inputs rounded to float16 (11-bit significand), FP32 sums
        ComputeUnit("fp16", "FP16", None, "tf32_wgmma", "FP16 wgmma (twice TF32)",
                    "tf32", "FP16 tensor-core peak", Fraction(1, 2)),
        # inputs rounded to bfloat16 (8-bit significand), FP32 sums
        ComputeUnit("bf16", "BF16", (8, 0), "tf32_wgmma", "BF16 wgmma (twice TF32)",
                    "tf32", "BF16 tensor-core peak", Fraction(1, 2)),
        # each operand as hi + lo in BF16, hi*hi + hi*lo + lo*hi
        ComputeUnit("bf16x3", "3xBF16", (8, 0), "tf32_wgmma", "BF16 wgmma / 3 (3xBF16)",
                    "tf32", "BF16 tensor-core peak / 3 (3xBF16)", Fraction(3, 2)),
        # each operand in three BF16 parts, the six largest products
        ComputeUnit("bf16x6", "6xBF16", (8, 0), "tf32_wgmma", "BF16 wgmma / 6 (6xBF16)",
                    "tf32", "BF16 tensor-core peak / 6 (6xBF16)", Fraction(3)),
    )
}
