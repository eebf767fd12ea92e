"""The float64 reference on this machine's GPU when it has one (the judge's own kernel, cuda/reference_float64.cu),
else on the CPU (attnbench.cases.reference): the same exact attention, the GPU tens of times faster on long cases.

The kernel is compiled at run time with pycuda's SourceModule and shares no code with the variants under
test. Scores are formed for a group of batch items or a slab of query rows at a time (`chunk_plan`), so
device memory stays bounded whatever N. The caller decides when: the judge makes references before a
program's run, never while one is timed; the GPU's context is let go after each reference, so none is held
while a program runs (a GPU in exclusive-process mode would refuse the program's own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator, Protocol

import numpy as np

from attnbench.cases.reference import Progress, reference_output
from attnbench.cases.testcase import Shape, Testcase
from attnbench.locations import kernel_dir

# Float64 scores on the device at once (bytes): a slab of t29 is 2048 rows of 32768 keys.
DEVICE_SCORE_BYTES = 512 << 20
_TILE = 16  # as the kernel's TILE
_SOFTMAX_THREADS = 256  # as the kernel's shared array


@dataclass(frozen=True)
class Chunk:
    """Batch items [b0, b1) and, of each, query rows [r0, r1): one launch of the three kernels."""

    b0: int
    b1: int
    r0: int
    r1: int

    @property
    def rows(self) -> int:
        return (self.b1 - self.b0) * (self.r1 - self.r0)


def chunk_plan(shape: Shape, score_bytes: int = DEVICE_SCORE_BYTES) -> Iterator[Chunk]:
    """The chunks that cover every output row exactly once, in order, each holding at most score_bytes of
    float64 scores (one query row at least): groups of whole items when N x N scores fit, else slabs of
    one item's query rows."""
    B, N = shape.B, shape.N
    row_bytes = N * 8
    items = score_bytes // (N * row_bytes)
    if items >= 1:
        for b0 in range(0, B, items):
            yield Chunk(b0, min(B, b0 + items), 0, N)
        return
    rows = max(1, score_bytes // row_bytes)
    for b in range(B):
        for r0 in range(0, N, rows):
            yield Chunk(b, b + 1, r0, min(N, r0 + rows))


class Float64Attention(Protocol):
    """What computes one chunk: softmax(q k^T / sqrt(d)) v in float64 for stacked (g, rows, d) q and
    (g, N, d) k and v (float32 arrays)."""

    def attention(self, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray: ...


def chunked_reference(testcase: Testcase, engine: Float64Attention, progress: Progress | None = None,
                      dtype: type = np.float64, score_bytes: int = DEVICE_SCORE_BYTES) -> np.ndarray:
    """The output O (B, N, d) made chunk by chunk by `engine`, stored as `dtype` (rounded as numpy rounds a
    float64 array into a float32 one, the CPU path's own rounding)."""
    shape = testcase.shape
    out = np.empty((shape.B, shape.N, shape.d), dtype=dtype)
    for chunk in chunk_plan(shape, score_bytes):
        items = slice(chunk.b0, chunk.b1)
        out[items, chunk.r0:chunk.r1] = engine.attention(testcase.q[items, chunk.r0:chunk.r1], testcase.k[items],
                                                         testcase.v[items])
        if progress:
            progress(chunk.rows)
    return out


class PycudaAttention:
    """cuda/reference_float64.cu on the current pycuda context: copies in, three kernels, the result out."""

    def __init__(self, driver: Any, module: Any) -> None:
        self.driver = driver
        self.scores = module.get_function("reference_scores")
        self.softmax = module.get_function("reference_softmax")
        self.weighted_values = module.get_function("reference_weighted_values")

    def attention(self, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
        driver = self.driver
        items, rows, d = q.shape
        n = k.shape[1]
        q, k, v = (np.ascontiguousarray(a, dtype=np.float32) for a in (q, k, v))
        buffers = [driver.to_device(q), driver.to_device(k), driver.to_device(v),
                   driver.mem_alloc(items * rows * n * 8), driver.mem_alloc(items * rows * 8),
                   driver.mem_alloc(items * rows * d * 8)]
        q_gpu, k_gpu, v_gpu, scores, sums, out_gpu = buffers
        try:
            block = (_TILE, _TILE, 1)
            self.scores(q_gpu, k_gpu, scores, np.int32(rows), np.int32(n), np.int32(d),
                        np.float64(1.0 / math.sqrt(d)), block=block,
                        grid=(-(-n // _TILE), -(-rows // _TILE), items))
            self.softmax(scores, sums, np.int32(n), block=(_SOFTMAX_THREADS, 1, 1), grid=(items * rows, 1, 1))
            self.weighted_values(scores, v_gpu, sums, out_gpu, np.int32(rows), np.int32(n), np.int32(d),
                                 block=block, grid=(-(-d // _TILE), -(-rows // _TILE), items))
            out = np.empty((items, rows, d), dtype=np.float64)
            driver.memcpy_dtoh(out, out_gpu)
            return out
        finally:
            for buffer in buffers:
                buffer.free()


_availability: list[str] = []  # '' when a GPU reference can be made here, else why not (found once)


def why_not_gpu() -> str:
    """'' when this machine can make references on its GPU, else the reason (pycuda missing, no device)."""
    if not _availability:
        try:
            import pycuda.driver as driver

            driver.init()
            _availability.append("" if driver.Device.count() > 0 else "no CUDA GPU is present")
        except Exception as exc:  # ImportError, or pycuda present without a driver
            _availability.append(f"no usable GPU ({type(exc).__name__}: {exc})")
    return _availability[0]


_cubins: dict[tuple[int, int], bytes] = {}  # the kernel built once a process, per compute capability


def gpu_reference_output(testcase: Testcase, progress: Progress | None = None, dtype: type = np.float64,
                         score_bytes: int = DEVICE_SCORE_BYTES) -> np.ndarray:
    """The reference computed on device 0 (the judging GPU: the one CUDA_VISIBLE_DEVICES shows first), in its
    primary context, released when done (its module unloaded first). Raises what pycuda raises when it
    cannot (compile, memory)."""
    import pycuda.driver as driver
    from pycuda.compiler import compile as compile_cuda

    driver.init()
    device = driver.Device(0)
    context = device.retain_primary_context()
    context.push()
    try:
        capability = device.compute_capability()
        if capability not in _cubins:
            source = (kernel_dir() / "reference_float64.cu").read_text()
            _cubins[capability] = compile_cuda(source, options=["-O3"], no_extern_c=True)
        module = driver.module_from_buffer(_cubins[capability])
        engine = PycudaAttention(driver, module)
        try:
            return chunked_reference(testcase, engine, progress, dtype, score_bytes)
        finally:
            del engine, module  # unloaded now, while its context is current
    finally:
        driver.Context.pop()
        context.detach()


def float64_reference(testcase: Testcase, progress: Progress | None = None, dtype: type = np.float64) -> np.ndarray:
    """The float64 reference on the GPU where there is one, else on the CPU. A GPU that fails (no nvcc for
    the kernel, too little memory) leaves the work to the CPU: the yardstick is the same, only slower."""
    if not why_not_gpu():
        try:
            return gpu_reference_output(testcase, progress, dtype)
        except Exception as exc:  # pycuda's errors share no base class worth naming
            _availability[:] = [f"the GPU reference failed ({type(exc).__name__}: {exc})"]
    return reference_output(testcase, progress, dtype)
