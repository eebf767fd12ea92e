"""Measuring this GPU's ceilings: the micro-benchmarks of `cuda/ceilings.cu`, each timed with CUDA events
several times, the best run kept (a ceiling is an upper bound). The model and its cache are
`attnbench.results.ceilings`."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from attnbench.backends.device import GpuDevice
from attnbench.errors import KernelCompileError
from attnbench.results.ceilings import Ceiling, CeilingSet, cached_for, driver_version, save

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


def measure(gpu: GpuDevice) -> CeilingSet:
    """Run every micro-benchmark on an open attnbench.gpu.Gpu and return the set (not cached here)."""
    import numpy as np
    from pycuda.compiler import SourceModule

    from attnbench.locations import kernel_dir

    driver = gpu.driver
    try:
        # sm_90a (Hopper's arch-specific features) for wgmma; every other kernel runs the same there
        arch = "sm_90a" if gpu.compute_capability == (9, 0) else gpu.arch
        # cache_dir=False: the peaks a speed is held to must not come from a cubin planted in pycuda's cache
        module = SourceModule((kernel_dir() / "ceilings.cu").read_text(encoding="utf-8"), options=["-O3", "-std=c++17"],
                              arch=arch, no_extern_c=True, cache_dir=False)
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


def _wgmma(driver: Any, module: Any, out: Any, gpu: GpuDevice) -> Ceiling:
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


def get_or_measure(gpu: GpuDevice, refresh: bool = False) -> tuple[CeilingSet, bool]:
    """The cached set for this GPU and driver, or a fresh measurement saved to the cache; (set, was_cached)."""
    if not refresh:
        cached = cached_for(gpu)
        if cached is not None:
            return cached, True
    fresh = measure(gpu)
    save(fresh)
    return fresh, False
