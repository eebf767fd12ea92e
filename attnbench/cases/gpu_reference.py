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
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Protocol

import numpy as np

from attnbench.cases.reference import Progress, reference_output
from attnbench.cases.root_cubins import root_cubin
from attnbench.cases.testcase import Shape, Testcase
from attnbench.locations import kernel_dir

# Float64 scores on the device at once (bytes): a slab of t29 is 2048 rows of 32768 keys.
DEVICE_SCORE_BYTES = 512 << 20
_BLOCK = 64  # the kernel's output tile (BLOCK)
_SOFTMAX_THREADS = 256  # as the kernel's shared array
MAX_GRID_ITEMS = 65535  # a launch's grid z: the items of one chunk
MIN_SPLIT_KEYS = 1024  # the fewest keys a block of the weighted values sums


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
    items = min(score_bytes // (N * row_bytes), MAX_GRID_ITEMS)
    if items >= 1:
        for b0 in range(0, B, items):
            yield Chunk(b0, min(B, b0 + items), 0, N)
        return
    rows = max(1, score_bytes // row_bytes)
    for b in range(B):
        for r0 in range(0, N, rows):
            yield Chunk(b, b + 1, r0, min(N, r0 + rows))


class Float64Attention(Protocol):
    """What computes one chunk: softmax(q k^T / sqrt(d)) v in float64 for query rows [r0, r1) of each item of
    `qkv`, a (g, 3, N, d) float32 block of the testcase (Q, K, V of each item), stored as `dtype`."""

    def attention(self, qkv: np.ndarray, r0: int, r1: int, dtype: type) -> np.ndarray: ...


def chunked_reference(testcase: Testcase, engine: Float64Attention, progress: Progress | None = None,
                      dtype: type = np.float64, score_bytes: int = DEVICE_SCORE_BYTES) -> np.ndarray:
    """The output O (B, N, d) made chunk by chunk by `engine`, stored as `dtype` (rounded as numpy rounds a
    float64 array into a float32 one, the CPU path's own rounding)."""
    shape = testcase.shape
    out = np.empty((shape.B, shape.N, shape.d), dtype=dtype)
    for chunk in chunk_plan(shape, score_bytes):
        items = slice(chunk.b0, chunk.b1)
        out[items, chunk.r0:chunk.r1] = engine.attention(testcase.qkv[items], chunk.r0, chunk.r1, dtype)
        if progress:
            progress(chunk.rows)
    return out


class PycudaAttention:
    """cuda/reference_float64.cu on the current pycuda context: a block of items copied in once (a long item's
    slabs share it), three kernels, the result out in the dtype asked for (float32 rounded on the device, to
    nearest even as numpy rounds). Its device buffers are kept from chunk to chunk and freed by `free`."""

    def __init__(self, driver: Any, module: Any) -> None:
        self.driver = driver
        self.scores = module.get_function("reference_scores")
        self.softmax = module.get_function("reference_softmax")
        self.weighted_values = module.get_function("reference_weighted_values")
        self.finish = module.get_function("reference_finish")
        self.blocks_wanted = 2 * driver.Context.get_device().get_attribute(
            driver.device_attribute.MULTIPROCESSOR_COUNT)
        self._buffers: dict[str, tuple[int, Any]] = {}  # name -> (bytes, allocation)
        self._loaded: tuple[int, int] | None = None  # the testcase's block now on the device: address, bytes

    def _buffer(self, name: str, nbytes: int) -> Any:
        held = self._buffers.get(name)
        if held is None or held[0] < nbytes:
            if held is not None:
                self._scrubbed(*held)
                del self._buffers[name]
            self._buffers[name] = (max(nbytes, 8), self.driver.mem_alloc(max(nbytes, 8)))
        return self._buffers[name][1]

    def _scrubbed(self, nbytes: int, allocation: Any) -> None:
        """A buffer zeroed, then freed: it held the case's input and its answer (the scores, the weighted values,
        the output rounded as the check takes it), and the judge makes references on the GPU the programs run on
        right before their runs, a batch's later cases' too; memory a program allocates next may be what was
        freed (the driver need not clear it), and a program that found its answer there would pass at any speed."""
        self.driver.memset_d8(allocation, 0, nbytes)
        allocation.free()

    def free(self) -> None:
        for nbytes, allocation in self._buffers.values():
            self._scrubbed(nbytes, allocation)
        self._buffers.clear()
        self._loaded = None

    def attention(self, qkv: np.ndarray, r0: int, r1: int, dtype: type) -> np.ndarray:
        items, _, n, d = qkv.shape
        rows = r1 - r0
        block = np.ascontiguousarray(qkv, dtype=np.float32)  # whole items of the testcase: itself, no copy
        key = (block.__array_interface__["data"][0], block.nbytes)
        qkv_gpu = self._buffer("qkv", block.nbytes)
        if block is not qkv or self._loaded != key:
            self.driver.memcpy_htod(qkv_gpu, block)
            self._loaded = key if block is qkv else None  # a copy's address may be another's later
        scores = self._buffer("scores", items * rows * n * 8)
        sums = self._buffer("sums", items * rows * 8)
        as_float = np.dtype(dtype) == np.float32
        out_gpu = self._buffer("out", items * rows * d * (4 if as_float else 8))
        stride = np.int64(3 * n * d)
        grid_rows = -(-rows // _BLOCK)
        self.scores(qkv_gpu, scores, np.int32(rows), np.int32(n), np.int32(d), stride, np.int32(r0),
                    np.float64(1.0 / math.sqrt(d)), block=(16, 16, 1), grid=(-(-n // _BLOCK), grid_rows, items))
        self.softmax(scores, sums, np.int32(n), block=(_SOFTMAX_THREADS, 1, 1), grid=(items * rows, 1, 1))
        splits = key_splits(-(-d // _BLOCK) * grid_rows * items, items, n, self.blocks_wanted)
        keys_per_split = -(-n // splits)
        partial = self._buffer("partial", splits * items * rows * d * 8)
        self.weighted_values(scores, qkv_gpu, partial, np.int32(rows), np.int32(n), np.int32(d), stride,
                             np.int32(items), np.int32(keys_per_split), block=(16, 16, 1),
                             grid=(-(-d // _BLOCK), grid_rows, items * splits))
        elements = items * rows * d
        self.finish(partial, sums, out_gpu, np.int64(elements), np.int32(d), np.int32(splits), np.int32(as_float),
                    block=(256, 1, 1), grid=(min(-(-elements // 256), 65535), 1, 1))
        out = np.empty((items, rows, d), dtype=np.float32 if as_float else np.float64)
        self.driver.memcpy_dtoh(out, out_gpu)
        return out


def key_splits(blocks: int, items: int, n: int, wanted: int) -> int:
    """Into how many ranges of keys the weighted values' sum is cut: enough that the launch has `wanted`
    blocks (two a multiprocessor) where its tiles give fewer, each range at least MIN_SPLIT_KEYS long, and
    the grid's z (items x splits) within a launch's."""
    if blocks >= wanted:
        return 1
    return max(1, min(-(-wanted // blocks), n // MIN_SPLIT_KEYS, MAX_GRID_ITEMS // items))


_availability: list[str] = []  # '' when a GPU reference can be made here, else why not (found once)
_finding = threading.Lock()  # one_gpu_context's thread and the caller's may ask at once
FAILED = "the GPU reference failed"


_short_of_memory: list[str] = []  # why a reference went to the CPU while the GPU's memory was short (the last)


def failed_over() -> str:
    """Why this process's references went to the CPU after its GPU's failed; '' while none has (a machine
    without a GPU is no failure)."""
    if _availability and _availability[0].startswith(FAILED):
        return _availability[0]
    return _short_of_memory[0] if _short_of_memory else ""


def why_not_gpu() -> str:
    """'' when this machine can make references on its GPU, else the reason (pycuda missing, no device)."""
    with _finding:
        return _why_not_gpu()


def start_finding() -> None:
    """Begin `why_not_gpu`'s answer on a thread (the driver's start: 0.2 s of a one-program judge on an H200's host),
    for a caller with work of its own before it asks; whoever asks meanwhile waits for that answer."""
    if not _availability:
        threading.Thread(target=why_not_gpu, name="attnbench-driver-start", daemon=True).start()


def _why_not_gpu() -> str:
    if not _availability:
        try:
            import pycuda.driver as driver

            driver.init()
            _availability.append("" if driver.Device.count() > 0 else "no CUDA GPU is present")
        except Exception as exc:  # ImportError, or pycuda present without a driver
            _availability.append(f"no usable GPU ({type(exc).__name__}: {exc})")
    return _availability[0]


_cubins: dict[tuple[int, int], bytes] = {}  # the kernel built once a process, per compute capability
_building = threading.Lock()


@dataclass
class _Session:
    """`one_gpu_context`'s: CUDA's start begun beside the caller (`ready`: True once the driver is up and the kernel
    built, False where no GPU reference can be made here), then the context its references share, retained and
    made current on the caller's thread by the first of them (pycuda keeps a thread's own stack of contexts)."""

    ready: Future
    context: Any = None


_held: list[_Session] = []  # the session of `one_gpu_context`, while it holds one


@contextmanager
def one_gpu_context() -> Iterator[None]:
    """References made inside share one GPU context, let go at the end: each made alone starts and ends its own
    (0.2 s each on an H200). The driver's start and the kernel's build begin at once on a thread of their own,
    beside what the caller does before its first reference (drawing the first input). For a caller that runs
    nothing on the GPU meanwhile, or only where the GPU takes a second process (`shares_the_gpu`): in an exclusive
    mode a program run inside would find the GPU held."""
    if _held:
        yield
        return
    with ThreadPoolExecutor(1) as starting:
        session = _Session(starting.submit(_started))
        _held.append(session)
        try:
            yield
        finally:
            _held.clear()
            if session.context is not None:
                import pycuda.driver as driver

                driver.Context.pop()
                session.context.detach()


def kernel_built() -> None:
    """Wait until the held session's kernel is built (or found impossible: the references then say why): from then
    on its references start no process (nvcc), so a program may run beside them without its run's sweep of the
    judge's new descendants meeting one."""
    session = _held[0] if _held else None
    if session is not None:
        try:
            session.ready.result()
        except Exception:  # noqa: BLE001 - the first reference raises it again, and falls back as ever
            pass


def shares_the_gpu() -> bool:
    """Whether references made on this machine's GPU leave a program room to run beside them: there is one, and
    it is in its default compute mode (an exclusive one refuses a second process's context, the program's or the
    judge's). False where the references are the CPU's: a program beside them would take the same cores."""
    if why_not_gpu():
        return False
    try:
        import pycuda.driver as driver

        mode = driver.Device(0).get_attribute(driver.device_attribute.COMPUTE_MODE)
        return mode == driver.compute_mode.DEFAULT
    except Exception:  # noqa: BLE001 - a driver that cannot say: as if exclusive, one thing at a time
        return False


def _started() -> bool:
    """The driver started and the kernel built for device 0, off the caller's thread; False where no GPU
    reference can be made here."""
    if why_not_gpu():
        return False
    import pycuda.driver as driver

    _kernel(driver.Device(0))
    return True


def _kernel(device: Any) -> bytes:
    """cuda/reference_float64.cu built once a process for the device's compute capability (named, so that the
    build needs no context: it may run on a thread that has none)."""
    capability = device.compute_capability()
    with _building:
        if capability not in _cubins:
            source = (kernel_dir() / "reference_float64.cu").read_text(encoding="utf-8")
            arch, options = "sm_%d%d" % capability, ["-O3"]
            # cache_dir=False: pycuda's compiler cache is a folder any process of the judge's user can write (a
            # program judged outside the sandbox), and pycuda loads the cubin found there under this source's key:
            # a planted one would make every later judge's yardstick pass anything (backends.gpu does the same);
            # root's judges keep it where only root writes (root_cubins)
            _cubins[capability] = root_cubin(source, arch, options, lambda: _compiled(source, options, arch))
    return _cubins[capability]


def _compiled(source: str, options: list[str], arch: str) -> bytes:
    # pycuda.compiler imported here, not above: where the cubin is kept (root_cubins) its import (pytools and the
    # rest) was the only cost of a judge's first reference's wait
    from pycuda.compiler import compile as compile_cuda

    return compile_cuda(source, options=options, no_extern_c=True, arch=arch, cache_dir=False)


def gpu_reference_output(testcase: Testcase, progress: Progress | None = None, dtype: type = np.float64,
                         score_bytes: int = DEVICE_SCORE_BYTES) -> np.ndarray:
    """The reference computed on device 0 (the judging GPU: the one CUDA_VISIBLE_DEVICES shows first), in its
    primary context, released when done (its module unloaded first) unless `one_gpu_context` holds it.
    Raises what pycuda raises when it cannot (compile, memory)."""
    import pycuda.driver as driver

    session = _held[0] if _held else None
    if session is not None:
        session.ready.result()  # raises what the build raised
    driver.init()
    device = driver.Device(0)
    context = None
    if session is None:
        context = device.retain_primary_context()
        context.push()
    elif session.context is None:
        session.context = device.retain_primary_context()
        session.context.push()
    try:
        module = driver.module_from_buffer(_kernel(device))
        engine = PycudaAttention(driver, module)
        try:
            return chunked_reference(testcase, engine, progress, dtype, score_bytes)
        finally:
            engine.free()
            del engine, module  # unloaded now, while its context is current
    finally:
        if context is not None:
            driver.Context.pop()
            context.detach()


def made_on_the_cpu() -> str:
    """Why this process's references were made on the CPU without trying a GPU (pycuda missing, no device), where
    one was made so; '' otherwise."""
    return _on_the_cpu[0] if _on_the_cpu else ""


_on_the_cpu: list[str] = []


def float64_reference(testcase: Testcase, progress: Progress | None = None, dtype: type = np.float64) -> np.ndarray:
    """The float64 reference on the GPU where there is one, else on the CPU. A GPU that fails (no nvcc for
    the kernel, too little memory) leaves the work to the CPU: the yardstick is the same, only slower."""
    why = why_not_gpu()
    if why and not why.startswith(FAILED):  # a GPU that failed is said by failed_over
        _on_the_cpu[:] = [why]
    if not why:
        try:
            return gpu_reference_output(testcase, progress, dtype)
        except Exception as exc:  # pycuda's errors share no base class worth naming
            why = f"{FAILED} ({type(exc).__name__}: {exc})"
            if type(exc).__name__ == "MemoryError":  # pycuda's or Python's: the GPU's memory short this once
                # (a program of another GPU's worker holding it, where a box sees every GPU): the next reference
                # tries the GPU again; one failure sent every later one to the CPU, t29's at 26 s each (red team)
                _short_of_memory[:] = [f"{why} (each reference after it tried the GPU again)"]
            else:  # the kernel does not build, the driver does not start: it will not work later either
                _availability[:] = [why]
    return reference_output(testcase, progress, dtype)
