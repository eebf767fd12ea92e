"""This GPU's measured ceilings (FFMA, TF32 mma.sync and on Hopper wgmma, MUFU ex2, DRAM copy), cached
per GPU and driver: the model, its cache, and the share of a ceiling a run reached.

`attnbench.explain.ceiling_benchmarks` measures them (the micro-benchmarks of `cuda/ceilings.cu`). Results are
cached as JSON in a per-user cache folder (platformdirs' user cache dir, or ~/.cache/attnbench; the
ATTNBENCH_CACHE variable overrides it), one file per GPU name and driver version, so `run`, `compare` and `report` can say which fraction of
the ceiling that applies to a variant it reached.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnbench import strict_json
from attnbench.locations import CACHE_ENV, cache_dir  # noqa: F401 - CACHE_ENV: this module's readers name it here
from attnbench.results.compute_units import COMPUTE_UNITS
from attnbench.results.datasheet import DeviceFacts, unit_peak
from attnbench.results.described_device import DescribedDevice

CACHE_VERSION = 1  # 1: first format (gpu, driver, ceilings as key/label/value/unit)

@dataclass(frozen=True)
class Ceiling:
    """One measured ceiling."""

    key: str  # ffma, tf32_mma, ex2, dram_copy
    label: str
    value: float  # in `unit`
    unit: str  # "TFLOP/s", "Gop/s", "GB/s"
    detail: str = ""


@dataclass
class CeilingSet:
    """All ceilings of one GPU under one driver."""

    gpu: str
    driver: str
    arch: str
    sm_count: int
    sm_clock_mhz: float
    date: str
    ceilings: list[Ceiling] = field(default_factory=list)

    def get(self, key: str) -> Ceiling | None:
        return next((c for c in self.ceilings if c.key == key), None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["version"] = CACHE_VERSION
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CeilingSet":
        if data.get("version") != CACHE_VERSION:
            raise ValueError(f"ceilings cache version {data.get('version')!r}, expected {CACHE_VERSION}")
        ceilings = [Ceiling(**c) for c in data["ceilings"]]
        return cls(data["gpu"], str(data["driver"]), data["arch"], int(data["sm_count"]), float(data["sm_clock_mhz"]),
                   data["date"], ceilings)


# -- the cache ---------------------------------------------------------------------------------------
def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "gpu"


def cache_path(gpu: str, driver: str | int) -> Path:
    return cache_dir() / f"ceilings_{_slug(gpu)}_driver-{_slug(str(driver))}.json"


def save(ceilings: CeilingSet) -> Path:
    """Write the set to its cache file (atomically) and return the path."""
    path = cache_path(ceilings.gpu, ceilings.driver)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(strict_json.dumps(ceilings.to_dict()))
    tmp.replace(path)
    return path


def load_cached(gpu: str, driver: str | int) -> CeilingSet | None:
    """The cached set for exactly this GPU and driver; None when absent or unreadable."""
    path = cache_path(gpu, driver)
    try:
        return CeilingSet.from_dict(strict_json.restore(json.loads(path.read_text(encoding="utf-8"))))
    except (OSError, ValueError, KeyError, TypeError):
        return None


_NVRM = re.compile(r"Kernel Module.*?\s(\d+\.\d+(?:\.\d+)?)\s")


def driver_version(gpu: DescribedDevice) -> str:
    """The NVIDIA driver's version (580.159.04), which the cache is keyed by; where the kernel module
    does not say, the CUDA driver API version pycuda reports (cuda-13000)."""
    try:
        found = _NVRM.search(Path("/proc/driver/nvidia/version").read_text())
        if found:
            return found[1]
    except OSError:
        pass
    return f"cuda-{gpu.driver.get_driver_version()}"


def cached_for(gpu: DescribedDevice) -> CeilingSet | None:
    """The cached set for an open attnbench.gpu.Gpu under the driver running now (None when the driver
    cannot say which it is: the ceilings only annotate a measurement)."""
    try:
        return load_cached(gpu.name, driver_version(gpu))
    except Exception:
        return None


def newest_for_name(name: str | None) -> CeilingSet | None:
    """The most recently measured cached set for a GPU name, whatever the driver (for plots of saved runs)."""
    if not name:
        return None
    found = []
    for path in cache_dir().glob(f"ceilings_{_slug(name)}_driver-*.json"):
        try:
            found.append(CeilingSet.from_dict(strict_json.restore(json.loads(path.read_text(encoding="utf-8")))))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    found = [c for c in found if c.gpu == name]
    return max(found, key=lambda c: c.date) if found else None


@dataclass(frozen=True)
class AppliedCeiling:
    """The ceiling a variant is measured against, and the fraction of it reached."""

    name: str
    value: float  # FLOP/s (or bytes/s for memory)
    fraction: float
    measured: bool  # False: the datasheet / clock-derived FP32 peak

    def describe(self) -> str:
        return share_text(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def share_text(applied: dict[str, Any]) -> str:
    """'44.0% of TF32 mma.sync (measured)'. A share above 100% is never printed as one: the peak or the
    timing is wrong, and the text says so."""
    source = "measured" if applied.get("measured") else "datasheet"
    fraction = float(applied["fraction"])
    if fraction > 1.0:
        return f"above the {applied['name']} ({source}): the peak or the timing is wrong"
    return f"{100 * fraction:.1f}% of {applied['name']} ({source})"


def measured_dram_bandwidth(ceilings: CeilingSet | None) -> float | None:
    """The measured DRAM copy bandwidth in bytes per second; None when not measured."""
    found = ceilings.get("dram_copy") if ceilings is not None else None
    return found.value * 1e9 if found is not None and found.value > 0 else None


def minimal_bytes(B: int, N: int, d: int) -> int:
    """Bytes an attention pass must move at least: Q, K, V read and O written once, float32."""
    return 4 * 4 * B * N * d


def applied_ceiling(unit: str, flops: float, seconds: float, shape: tuple[int, int, int],
                    ceilings: CeilingSet | None) -> AppliedCeiling | None:
    """The fraction of the measured ceiling for `unit` reached by `flops` in `seconds`; None when not cached."""
    compute_unit = COMPUTE_UNITS.get(unit)
    if ceilings is None or compute_unit is None or seconds <= 0:
        return None
    ceiling = ceilings.get(compute_unit.ceiling_key)
    if ceiling is None or ceiling.value <= 0:
        return None
    if compute_unit.moves_bytes:
        rate, value = minimal_bytes(*shape) / seconds, compute_unit.share_of(ceiling.value * 1e9)
    else:
        rate, value = flops / seconds, compute_unit.share_of(ceiling.value * 1e12)
    return AppliedCeiling(compute_unit.ceiling_label, value, rate / value, True)


def datasheet_ceiling(unit: str, flops: float, seconds: float, shape: tuple[int, int, int],
                      facts: DeviceFacts) -> AppliedCeiling | None:
    """The fraction of the datasheet peak for `unit` (`attnbench ceilings` has not run); None without one."""
    peak = unit_peak(unit, facts)
    if peak is None or seconds <= 0:
        return None
    name, value = peak
    rate = minimal_bytes(*shape) / seconds if COMPUTE_UNITS[unit].moves_bytes else flops / seconds
    return AppliedCeiling(name, value, rate / value, False)
