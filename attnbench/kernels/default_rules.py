"""Which variant `run` picks by default, as records: each rule names its variant, the shapes where it leads,
and the measurement that showed it (a reference run under docs/results/).

`attnbench.kernels.catalogue.default_variant` takes the first rule, in this order, whose variant leads on
the shape, accepts it and runs on the GPU. A rule whose measurement is `None` is a fallback, not a speed
claim: it only takes the shapes that every measured rule refuses. A new measurement that changes a default
changes one record here, and names its run; where a course-accuracy variant leads is data
(`measured_leads.toml`), one region per measurement.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the dependency is declared for these versions
    import tomli as tomllib

from attnbench.cases.testcase import Shape
from attnbench.kernels.variant import cdiv

# The accuracies a default can be asked for: "float32" (the default: the course rule and relL2 <= 1e-5) and
# "course" (the course rule with margin: half its tolerance), whose own rules are tried first.
ACCURACIES = ("float32", "course")

# Where the course-accuracy variants were measured to lead, each region with its run: the lead edits data only.
MEASURED_LEADS = Path(__file__).with_name("measured_leads.toml")


@dataclass(frozen=True)
class DefaultRule:
    """One variant's claim to be the default, with its evidence."""

    variant: str
    measured_in: str | None  # the reference run it came from (a file stem in docs/results/); None: a fallback
    finding: str  # what that run showed, in one line
    leads: Callable[[Shape], bool] | None = None  # the shapes where it leads; None: wherever it runs
    accuracy: str = "float32"  # "course": tried first, and only when the course's accuracy is asked for

    def applies(self, shape: Shape) -> bool:
        return self.leads is None or self.leads(shape)


def wgmma3x_leads(shape: Shape) -> bool:
    """wgmma3x leads from N = 512; below that, on the H200:
    - d = 32 in whole 128-row tiles from a full wave of blocks (8 x 132 = 1056 items); on its short path
      (N <= 128, 8 whole items a block) 1.11-1.14x tf32x3 at B = 1056, 4096 and 13600, 0.27-0.48x at B = 5
      and 320 (2026-11-24);
    - d = 32, N = 256 (its persistent streaming path) from 80 units of 128 rows: 1.19x at B = 40, 1.00x at
      80, 1.08x on t03 (B = 160), 1.24-1.25x at 320 and 1056; 0.93x at B = 20
      (2026-11-25);
    - d = 64 up to N = 256 (the same path) from 80 units at N <= 128 and 20 units above: 1.21x on t02
      (160 units), 0.96-0.98x at 5 to 40 units of N = 128 (all about 12 us, launch-bound); at N = 256
      1.44x at 20 units, 1.17x at 40, 1.23x on t04 (the same sweep);
    - d = 128 from N = 65, with its two consumer warpgroups (on an H100,
      2026-11-26): 1.02-1.42x tf32x3 at N = 128, 1.24-1.70x at N = 256 and
      384, for B from 5 to 1000; at N = 64 0.81-0.97x but for B = 80 (1.08x), so it stays with tf32x3."""
    units = shape.B * cdiv(shape.N, 128)
    d32_full_wave = shape.d == 32 and (shape.N <= 128 or shape.N % 128 == 0) and shape.B >= 1056
    d32_streamed = shape.d == 32 and 128 < shape.N <= 256 and shape.N % 128 == 0 and units >= 80
    d64_streamed = shape.d == 64 and shape.N <= 256 and units >= (80 if shape.N <= 128 else 20)
    d128 = shape.d == 128 and shape.N > 64
    return shape.N >= 512 or d32_full_wave or d32_streamed or d64_streamed or d128


def square_lab_shape(shape: Shape) -> bool:
    """The head dimensions the flash variants leave to the GEMM variants, as the square lab's."""
    return shape.d > 128 and shape.N >= 64


@dataclass(frozen=True)
class LeadRegion:
    """Shapes where a variant was measured to lead (bounds inclusive, None: open), and the run that showed it."""

    d_min: int | None
    d_max: int | None
    n_min: int | None
    n_max: int | None
    measured_in: str
    finding: str

    def holds(self, shape: Shape) -> bool:
        return ((self.d_min is None or shape.d >= self.d_min) and (self.d_max is None or shape.d <= self.d_max)
                and (self.n_min is None or shape.N >= self.n_min) and (self.n_max is None or shape.N <= self.n_max))


def lead_regions(variant: str, path: Path = MEASURED_LEADS) -> tuple[LeadRegion, ...]:
    """The regions `measured_leads.toml` (or `path`) gives `variant`; none when it has none."""
    with path.open("rb") as f:
        entries = tomllib.load(f).get(variant, [])
    return tuple(LeadRegion(e.get("d_min"), e.get("d_max"), e.get("n_min"), e.get("n_max"), e["measured_in"],
                            e["finding"]) for e in entries)


@dataclass(frozen=True)
class MeasuredLeads:
    """A rule's `leads` read from the measurements' data: the shapes inside one of the variant's regions."""

    variant: str
    path: Path = MEASURED_LEADS

    def __call__(self, shape: Shape) -> bool:
        return any(region.holds(shape) for region in lead_regions(self.variant, self.path))


# In the order they are tried. The switch points of wgmma3x and tf32x3 come from sweeps on an H200
# (2026-11-21 to 25) and an H100 (2026-11-26); the run named is the reference that shows the result on every
# course case.
DEFAULT_RULES: tuple[DefaultRule, ...] = (
    DefaultRule("wgmma16s", "2026-11-27_h100_precision_ladder_t16-t30",
                "1.12-2.60x wgmma3x on t01-t30 and (8, 4096, 128) at the course's accuracy (the t01-t15 half in "
                "2026-11-27_h100_precision_ladder_t01-t15_b8); where it leads is data, each region with its run, "
                "in measured_leads.toml", MeasuredLeads("wgmma16s"), accuracy="course"),
    DefaultRule("wgmma3x", "2026-11-26_h100_final_default_peers_t01-t30",
                "on Hopper 1.1-1.8x tf32x3 from N = 512 for d = 32, 64 and 128, and below where enough items "
                "fill the GPU: the fastest timed built-in on every course case", wgmma3x_leads),
    DefaultRule("tf32x3", "2026-11-26_h100_final_default_peers_t01-t30",
                "leads wherever wgmma3x does not (and off Hopper, from sm_80)"),
    DefaultRule("fa2simt", "2026-11-24_h200_compare_kernels",
                "the fastest FFMA variant for d in {32, 64, 128}: 25-45 TFLOP/s against gemm's 13-24"),
    DefaultRule("gemmwg3x", "2026-11-24_h200_sweep_square_gemmwg3x_gemmtc_gemm_torch",
                "on the square lab's shapes on Hopper from n = 1025: 1.3-1.5x gemmtc, 1.9-5.3x torch from n = 2048",
                lambda s: square_lab_shape(s) and s.N > 1024),
    DefaultRule("gemmtc", "2026-11-24_h200_sweep_square_gemmwg3x_gemmtc_gemm_torch",
                "on the square lab's shapes below that and on sm_80+: 1.0-1.8x gemm from n = 64", square_lab_shape),
    DefaultRule("gemm", "2026-11-24_h200_compare_kernels",
                "the next FFMA variant, from N = 128 to 32768 and on square shapes"),
    DefaultRule("qreg", "2026-11-22_h200_ladder_steps_vs_report004", "the top of report 004's ladder"),
    # online takes the large head dimensions gemm cannot hold; singlehead is left out (its unsafe softmax can
    # overflow)
    DefaultRule("online", None, "takes the head dimensions the variants above cannot hold"),
    DefaultRule("naive", None, "takes any shape"),
)
