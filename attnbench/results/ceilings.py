"""This GPU's measured ceilings (FFMA, TF32 mma.sync and on Hopper wgmma, MUFU ex2, DRAM copy), cached
per GPU and driver.

`cuda/ceilings.cu` holds the micro-benchmarks; each is timed with CUDA events several times and the
best run is kept (a ceiling is an upper bound). Results are cached as JSON in a per-user cache folder
(platformdirs' user cache dir, or ~/.cache/attnbench; the ATTNBENCH_CACHE variable overrides it),
one file per GPU name and driver version, so `run`, `compare` and `report` can say which fraction of
the ceiling that applies to a variant it reached.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnbench import strict_json
from attnbench.errors import KernelCompileError

CACHE_ENV = "ATTNBENCH_CACHE"
CACHE_VERSION = 1  # 1: first format (gpu, driver, ceilings as key/label/value/unit)

# What each declared unit of a variant is measured against (a key of Ceiling) and how: the FLOP rate
# of the ceiling divided by the factor (3xTF32 does three TF32 products per useful one).
UNIT_CEILINGS: dict[str, tuple[str, float, str]] = {
    "ffma": ("ffma", 1.0, "FP32 FFMA"),
    "tensor": ("tf32_mma", 1.0, "TF32 mma.sync"),
    "tf32x3": ("tf32_mma", 3.0, "TF32 mma.sync / 3 (3xTF32)"),
    "wgmma3x": ("tf32_wgmma", 3.0, "TF32 wgmma / 3 (3xTF32)"),
    "memory": ("dram_copy", 1.0, "DRAM copy bandwidth"),
}


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
def cache_dir() -> Path:
    """$ATTNBENCH_CACHE, else the per-user cache folder for attnbench."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("attnbench"))
    except ImportError:
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attnbench"


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
        return CeilingSet.from_dict(strict_json.restore(json.loads(path.read_text())))
    except (OSError, ValueError, KeyError, TypeError):
        return None


_NVRM = re.compile(r"Kernel Module.*?\s(\d+\.\d+(?:\.\d+)?)\s")


def driver_version(gpu: Any) -> str:
    """The NVIDIA driver's version (580.159.04), which the cache is keyed by; where the kernel module
    does not say, the CUDA driver API version pycuda reports (cuda-13000)."""
    try:
        found = _NVRM.search(Path("/proc/driver/nvidia/version").read_text())
        if found:
            return found[1]
    except OSError:
        pass
    return f"cuda-{gpu.driver.get_driver_version()}"


def cached_for(gpu: Any) -> CeilingSet | None:
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
            found.append(CeilingSet.from_dict(strict_json.restore(json.loads(path.read_text()))))
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
        source = "measured" if self.measured else "datasheet"
        return f"{100 * self.fraction:.1f}% of {self.name} ({source})"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def minimal_bytes(B: int, N: int, d: int) -> int:
    """Bytes an attention pass must move at least: Q, K, V read and O written once, float32."""
    return 4 * 4 * B * N * d


def applied_ceiling(unit: str, flops: float, seconds: float, shape: tuple[int, int, int],
                    ceilings: CeilingSet | None) -> AppliedCeiling | None:
    """The fraction of the measured ceiling for `unit` reached by `flops` in `seconds`; None when not cached."""
    if ceilings is None or unit not in UNIT_CEILINGS or seconds <= 0:
        return None
    key, divisor, name = UNIT_CEILINGS[unit]
    ceiling = ceilings.get(key)
    if ceiling is None or ceiling.value <= 0:
        return None
    if unit == "memory":
        rate, value = minimal_bytes(*shape) / seconds, ceiling.value * 1e9
    else:
        rate, value = flops / seconds, ceiling.value * 1e12 / divisor
    return AppliedCeiling(name, value, rate / value, True)


# -- measuring ---------------------------------------------------------------------------------------
FFMA_CHAINS, MMA_CHAINS, EX2_CHAINS, UNROLL, MMA_UNROLL, WGMMA_BATCH = 8, 4, 8, 16, 4, 8
COPY_BYTES = 1 << 30  # per buffer: far beyond any L2


def _best_ms(driver: Any, launch, repeats: int = 5) -> float:
    launch()  # warm-up (and clocks up)
    best = float("inf")
    for _ in range(repeats):
        start, end = driver.Event(), driver.Event()
        start.record()
        launch()
        end.record()
        end.synchronize()
        best = min(best, start.time_till(end))
    return best


def measure(gpu: Any) -> CeilingSet:
    """Run every micro-benchmark on an open attnbench.gpu.Gpu and return the set (not cached here)."""
    import numpy as np
    from pycuda.compiler import SourceModule

    from attnbench.locations import kernel_dir

    driver = gpu.driver
    try:
        # sm_90a (Hopper's arch-specific features) for wgmma; every other kernel runs the same there
        arch = "sm_90a" if gpu.compute_capability == (9, 0) else gpu.arch
        module = SourceModule((kernel_dir() / "ceilings.cu").read_text(), options=["-O3", "-std=c++17"],
                              arch=arch, no_extern_c=True)
    except driver.CompileError as exc:
        raise KernelCompileError(f"nvcc could not compile cuda/ceilings.cu: {exc}") from None
    threads, blocks = 1024, gpu.sm_count * 2 * 8  # 2 blocks of 32 warps per SM, 8 waves
    out = driver.mem_alloc(4 * threads * blocks)
    found: list[Ceiling] = []

    ffma = module.get_function("ceiling_ffma")
    iters = 2048
    ms = _best_ms(driver, lambda: ffma(out, np.int32(iters), np.float32(0.999), np.float32(0.001),
                                      block=(threads, 1, 1), grid=(blocks, 1)))
    flops = 2.0 * FFMA_CHAINS * UNROLL * iters * threads * blocks
    found.append(Ceiling("ffma", "FP32 FFMA", flops / ms / 1e9, "TFLOP/s", f"{FFMA_CHAINS} independent chains per thread"))

    if gpu.compute_capability >= (8, 0):
        mma = module.get_function("ceiling_mma_tf32")
        iters = 512
        ms = _best_ms(driver, lambda: mma(out, np.int32(iters), block=(threads, 1, 1), grid=(blocks, 1)))
        flops = 2.0 * 16 * 8 * 8 * MMA_CHAINS * MMA_UNROLL * iters * (threads // 32) * blocks
        found.append(Ceiling("tf32_mma", "TF32 mma.sync m16n8k8", flops / ms / 1e9, "TFLOP/s",
                             f"{MMA_CHAINS} accumulators per warp, operands in registers"))

    ex2 = module.get_function("ceiling_ex2")
    iters = 512
    ms = _best_ms(driver, lambda: ex2(out, np.int32(iters), block=(threads, 1, 1), grid=(blocks, 1)))
    ops = 1.0 * EX2_CHAINS * UNROLL * iters * threads * blocks
    per_clock = ops / (ms * 1e-3) / (gpu.sm_count * gpu.clock_khz * 1e3)
    found.append(Ceiling("ex2", "MUFU ex2", ops / ms / 1e6, "Gop/s", f"{per_clock:.1f} per SM per clock at the boost clock"))

    copy = module.get_function("ceiling_copy")
    n = COPY_BYTES // 16
    free = gpu.free_memory()
    if free > 2 * COPY_BYTES + (256 << 20):
        src, dst = driver.mem_alloc(COPY_BYTES), driver.mem_alloc(COPY_BYTES)
        driver.memset_d32(src, 0, COPY_BYTES // 4)
        kernel_ms = _best_ms(driver, lambda: copy(src, dst, np.int64(n), block=(256, 1, 1), grid=(gpu.sm_count * 8, 1)))
        memcpy_ms = _best_ms(driver, lambda: driver.memcpy_dtod_async(dst, src, COPY_BYTES))
        how = "float4 grid-stride kernel" if kernel_ms <= memcpy_ms else "cuMemcpyDtoD"
        found.append(Ceiling("dram_copy", "DRAM copy (read + write)", 2.0 * COPY_BYTES / min(kernel_ms, memcpy_ms) / 1e6,
                             "GB/s", f"best of a float4 kernel and cuMemcpyDtoD over {COPY_BYTES >> 20} MiB: {how}"))
        src.free()
        dst.free()
    if gpu.compute_capability == (9, 0):
        found.append(_wgmma(driver, module, out, gpu))  # last: a fault here leaves the figures above intact
    else:
        out.free()
    return CeilingSet(gpu.name, driver_version(gpu), gpu.arch, gpu.sm_count, gpu.clock_khz / 1e3,
                      _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), found)


def _wgmma(driver: Any, module: Any, out: Any, gpu: Any) -> Ceiling:
    """TF32 wgmma m64n128k8 from shared memory (sm_90a), one warpgroup per block, 4 blocks per SM."""
    import numpy as np

    wgmma = module.get_function("ceiling_wgmma_tf32")
    iters, blocks = 256, gpu.sm_count * 4 * 8
    try:
        ms = _best_ms(driver, lambda: wgmma(out, np.int32(iters), block=(128, 1, 1), grid=(blocks, 1)))
        out.free()
    except driver.Error as exc:
        return Ceiling("tf32_wgmma", "TF32 wgmma m64n128k8", 0.0, "TFLOP/s", f"failed: {exc}")
    flops = 2.0 * 64 * 128 * 8 * WGMMA_BATCH * iters * blocks
    return Ceiling("tf32_wgmma", "TF32 wgmma m64n128k8", flops / ms / 1e9, "TFLOP/s",
                   f"{WGMMA_BATCH} per commit group, both operands in shared memory")


def get_or_measure(gpu: Any, refresh: bool = False) -> tuple[CeilingSet, bool]:
    """The cached set for this GPU and driver, or a fresh measurement saved to the cache; (set, was_cached)."""
    if not refresh:
        cached = cached_for(gpu)
        if cached is not None:
            return cached, True
    fresh = measure(gpu)
    save(fresh)
    return fresh, False
