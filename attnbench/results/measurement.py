"""One variant on one testcase: phase times, kernel statistics, throughput and its check.

A measurement whose median is below the physical floor of its shape on its device (`floor`) is
impossible: it keeps its samples and the floor, but has no throughput and no share of any peak.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attnbench.cases.testcase import Shape
from attnbench.results.compute_units import COMPUTE_UNITS
from attnbench.results.course_clock import CourseClock
from attnbench.results.floor import PhysicalFloor
from attnbench.results.run_warnings import RunWarning
from attnbench.results.stats import KernelStats
from attnbench.results.timed_check import TimedCheck
from attnbench.results.verification import VerifyReport


@dataclass
class Measurement:
    """One variant on one testcase: phase times, kernel statistics, throughput, verdict."""

    variant: str
    case: str
    shape: Shape
    device: str
    compute_s: float
    kernel: KernelStats
    compile_s: float = 0.0
    input_s: float | None = None
    output_s: float | None = None
    peak_flops: float | None = None
    verification: VerifyReport | None = None
    warnings: list[RunWarning] = field(default_factory=list)
    nonfinite: int = 0  # NaN or Inf elements in the output: a wrong answer, whatever its speed
    ceiling: dict | None = None  # the measured ceiling that applies, and the fraction reached (attnbench ceilings)
    clock: CourseClock | None = None  # the pipelined first pass's stages; None for the unpipelined path
    floor: PhysicalFloor | None = None  # the least time a pass can take here; None when the device is not known
    timed_check: TimedCheck | None = None  # the check of the timed samples (fresh inputs, every output checked)
    unit: str | None = None  # what the variant runs on (ffma, tf32x3, wgmma3x, tensor, memory): its peak applies
    sampling_s: float | None = None  # wall time of the timed passes after the first (warm-ups, samples, their checks)
    check_s: float | None = None  # wall time of the check of the first pass: its float64 reference (made when not
    # stored: seconds to minutes on the host) and the comparison
    wall_s: float | None = None  # the whole cell as a command runs it: input made, compile, first pass, samples, check

    @property
    def impossible(self) -> bool:
        """The median is below the physical floor (margin included): not a speed."""
        return self.floor is not None and self.floor.refuses(self.kernel.median * 1e-3)

    def impossible_reason(self) -> str | None:
        """The sentence with both numbers, when impossible."""
        if not self.impossible or self.floor is None:
            return None
        return self.floor.sentence(self.kernel.median, (self.shape.B, self.shape.N, self.shape.d))

    @property
    def suspect(self) -> bool:
        """A speed above the peak of the variant's own unit: the unit it declared is wrong, or the timing is.
        A memory-bound unit is left to the physical floor (its share is of DRAM, which an L2 can beat)."""
        moves_bytes = self.unit in COMPUTE_UNITS and COMPUTE_UNITS[self.unit].moves_bytes
        return (not self.impossible and self.has_speed and bool(self.ceiling) and not moves_bytes
                and float(self.ceiling["fraction"]) > 1.0)

    def suspect_reason(self) -> str | None:
        """The sentence with the unit, the peak and the speed, when suspect."""
        if not self.suspect or not self.ceiling:
            return None
        peak = float(self.ceiling["value"]) / 1e12
        source = "measured" if self.ceiling.get("measured") else "datasheet"
        return (f"{self.tflops:.3g} TFLOP/s is above the peak of its unit {self.unit or 'ffma'}, the "
                f"{self.ceiling['name']} of {peak:.3g} TFLOP/s ({source}): declare the unit it runs on "
                "(unit = ... in its launch facts), or the timing is wrong")

    def all_warnings(self) -> list[RunWarning]:
        """Every warning: the run's own, the sampler's and the clock's."""
        return self.warnings + self.kernel.all_warnings()

    @property
    def has_speed(self) -> bool:
        """False when a checked launch failed (the samples' times are not the time of computing the answer)
        or the median is below the physical floor."""
        return (self.timed_check is None or self.timed_check.passed) and not self.impossible

    @property
    def flops(self) -> int:
        return self.shape.flops

    @property
    def tflops(self) -> float:
        return self.flops / (self.kernel.median * 1e-3) / 1e12

    @property
    def peak_fraction(self) -> float | None:
        """The share reached of the peak of the variant's unit (`ceiling`: measured, else the datasheet's);
        None when impossible or when no peak applies. `peak_flops` is the FP32 peak, a fact of the GPU: a
        tensor-core variant's share of it would exceed 100%, so it is never one."""
        if self.impossible or not self.ceiling:
            return None
        return float(self.ceiling["fraction"])

    @property
    def total_s(self) -> float:
        """The whole run: the pipeline's wall time, or input + compute + output when they ran one after another."""
        if self.clock is not None:
            return self.clock.wall_s
        return (self.input_s or 0.0) + self.compute_s + (self.output_s or 0.0)

    def to_dict(self) -> dict:
        return {
            "variant": self.variant,
            "case": self.case,
            "shape": {"B": self.shape.B, "N": self.shape.N, "d": self.shape.d},
            "device": self.device,
            "input_s": self.input_s,
            "compute_s": self.compute_s,
            "output_s": self.output_s,
            "total_s": self.total_s,
            "compile_s": self.compile_s,
            "kernel": self.kernel.to_dict(),
            "flops": self.flops,
            "tflops": self.tflops if self.has_speed else None,
            "peak_flops": self.peak_flops,
            "peak_fraction": self.peak_fraction if self.has_speed else None,
            "ceiling": self.ceiling,
            "floor": self.floor.to_dict() if self.floor is not None else None,
            "impossible": self.impossible_reason(),
            "verification": self.verification.to_dict() if self.verification else None,
            "nonfinite": self.nonfinite,
            "warnings": [warning.to_dict() for warning in self.all_warnings()],
            "pipeline": self.clock.to_dict() if self.clock is not None else None,
            "timed_check": self.timed_check.to_dict() if self.timed_check is not None else None,
            "unit": self.unit,
            "suspect": self.suspect_reason(),
            "sampling_s": self.sampling_s,
            "check_s": self.check_s,
            "wall_s": self.wall_s,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Measurement":
        """Rebuild a measurement from `to_dict` (saved results also keep each cell's check beside it)."""
        kernel = KernelStats.from_dict(data["kernel"])
        shape = data["shape"]
        if not all(isinstance(shape[k], int) and not isinstance(shape[k], bool) and shape[k] > 0 for k in "BNd"):
            raise ValueError(f"shape {shape}: B, N and d must be positive whole numbers")  # FLOPs, TFLOP/s from them
        return cls(
            variant=data["variant"],
            case=data["case"],
            shape=Shape(shape["B"], shape["N"], shape["d"]),
            device=data["device"],
            compute_s=data["compute_s"],
            kernel=kernel,
            compile_s=data.get("compile_s", 0.0),
            input_s=data.get("input_s"),
            output_s=data.get("output_s"),
            peak_flops=data.get("peak_flops"),
            verification=VerifyReport.from_dict(data["verification"]) if data.get("verification") else None,
            nonfinite=data.get("nonfinite", 0),
            ceiling=data.get("ceiling"),
            warnings=_own_warnings(data.get("warnings", []), kernel),
            clock=CourseClock.from_dict(data["pipeline"]) if data.get("pipeline") else None,
            floor=PhysicalFloor.from_dict(data["floor"]) if data.get("floor") else None,
            timed_check=TimedCheck.from_dict(data["timed_check"]) if data.get("timed_check") else None,
            unit=data.get("unit"),
            sampling_s=data.get("sampling_s"),
            check_s=data.get("check_s"),
            wall_s=data.get("wall_s"),
        )


def _own_warnings(saved: list, kernel: KernelStats) -> list[RunWarning]:
    """The saved warnings less the kernel statistics' own (saved with them, and remade from the samples).
    Compared by sentence: a file older than schema version 4 saved every one as a sentence."""
    kernels = {warning.sentence() for warning in kernel.all_warnings()}
    warnings = [RunWarning.from_saved(item) for item in saved]
    return [warning for warning in warnings if warning.sentence() not in kernels]
