"""The pipelined first pass: file -> pinned ring -> device -> kernels -> device -> pinned ring -> output file.

Chunks of whole batch items (`chunk_plan.ChunkPlan`) flow through a ring of `depth` pinned input
buffers and `depth` pinned output buffers. For chunk i the main thread:

1. waits until the host-to-device copy of chunk i - depth has left input buffer i % depth;
2. reads chunk i from the file into that buffer;
3. queues its copy to the device (copy stream) and its kernels (compute stream, after the copy);
4. queues the copies back of finished chunks whose output buffer the writer has emptied, and hands
   chunks whose copy back is done to the writer thread, in order.

The writer thread writes each chunk to the output file; a scan thread then copies it into the kept
output (for a check), counts its NaN and Inf, and frees its buffer. All CUDA calls stay on the main
thread; the other two only do file and memory work, which releases the GIL. So reading overlaps the copies, the kernels and the writing.
The device keeps the whole input and output resident afterwards, for the timed passes.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import BinaryIO, Protocol

import numpy as np

from attnbench.bench.chunk_plan import ChunkPlan
from attnbench.results.course_clock import CourseClock, DeviceStageTimes


class ChunkSource(Protocol):
    """Where input chunks come from (a course input file)."""

    def read_items(self, b0: int, b1: int, into: memoryview) -> None: ...


class StageDevice(Protocol):
    """The device side of the pipeline; chunk `index` is the plan's index-th batch range."""

    device_alloc_s: float

    def setup(self) -> None: ...  # device buffers, the pinned ring, streams

    def input_buffer(self, slot: int) -> memoryview: ...

    def output_buffer(self, slot: int) -> np.ndarray: ...  # float32, one chunk's output

    def upload_and_compute(self, index: int, slot: int) -> None: ...

    def input_released(self, index: int) -> None: ...  # block until chunk `index` has left its input buffer

    def download(self, index: int, slot: int) -> None: ...

    def downloaded(self, index: int) -> bool: ...

    def wait_downloaded(self, index: int) -> None: ...

    def stage_times(self) -> DeviceStageTimes: ...

    def release(self) -> None: ...  # the ring and the streams; the device buffers stay


class _Writer(threading.Thread):
    """Writes finished chunks in order; a second thread then keeps and scans each one and frees its buffer.

    Writing t22's 262 MB output is the pipeline's slowest stage on an H200 host (0.06-0.11 s), and the scan
    for NaN and Inf took 0.03 s more on the same thread; on its own thread the scan of one chunk overlaps the
    write of the next (both release the GIL), so the writer's path is the write alone."""

    def __init__(self, plan: ChunkPlan, device: StageDevice, out: BinaryIO | None, keep: np.ndarray | None) -> None:
        super().__init__(name="attnbench-write", daemon=True)
        self.plan, self.device, self.out = plan, device, out
        self.keep = keep.reshape(-1) if keep is not None else None
        self.jobs: queue.Queue = queue.Queue()
        self.scans: queue.Queue = queue.Queue()
        self.scanner = threading.Thread(target=self._scan_chunks, name="attnbench-scan", daemon=True)
        self.written = 0  # chunks written, kept and scanned: their output buffers are free
        self.write_s = 0.0
        self.keep_s = 0.0
        self.nonfinite = 0  # NaN or Inf elements written: every output is scanned, checked or not
        self.error: BaseException | None = None
        self.stopping = False
        self.changed = threading.Condition()

    def start(self) -> None:
        super().start()
        self.scanner.start()

    def run(self) -> None:
        try:
            while True:
                job = self.jobs.get()
                if job is None or self.stopping:
                    return
                self._write(*job)
                self.scans.put(job)
        except BaseException as exc:  # handed to the main thread, which raises it
            self._fail(exc)
        finally:
            self.scans.put(None)

    def _scan_chunks(self) -> None:
        try:
            while True:
                job = self.scans.get()
                if job is None or self.stopping:
                    return
                self._keep_and_scan(*job)
                with self.changed:
                    self.written += 1
                    self.changed.notify_all()
        except BaseException as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        with self.changed:
            self.error = self.error or exc
            self.changed.notify_all()

    def _chunk(self, index: int, slot: int) -> tuple[int, np.ndarray]:
        b0, b1 = self.plan.chunks[index]
        per_item = self.plan.item_out_bytes // 4
        return b0 * per_item, self.device.output_buffer(slot)[: (b1 - b0) * per_item]

    def _write(self, index: int, slot: int) -> None:
        if self.out is not None:
            _, data = self._chunk(index, slot)
            start = time.perf_counter()
            self.out.write(memoryview(data).cast("B"))
            self.write_s += time.perf_counter() - start

    def _keep_and_scan(self, index: int, slot: int) -> None:
        first, data = self._chunk(index, slot)
        start = time.perf_counter()
        if self.keep is not None:
            self.keep[first : first + data.size] = data
        self.nonfinite += nonfinite_count(data)
        self.keep_s += time.perf_counter() - start

    def wait_written(self, count: int) -> None:
        with self.changed:
            while self.written < count and self.error is None:
                self.changed.wait()
        self.raise_error()

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error

    def finish(self) -> None:
        self.jobs.put(None)
        self.join()
        self.scanner.join()
        self.raise_error()

    def abort(self) -> None:
        self.stopping = True
        self.jobs.put(None)
        self.join()
        self.scanner.join()


def nonfinite_count(data: np.ndarray) -> int:
    """NaN and Inf elements of a float32 array. A finite sum proves there are none (a NaN or an Inf makes the
    sum NaN or Inf): one pass, no temporary, and numpy lets go of the GIL inside a reduction, so the reading
    and writing threads run meanwhile. A sum that is not finite (an overflow, or a real NaN) is counted."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(data, axis=None, dtype=np.float32)
    if np.isfinite(total):
        return 0
    return int(data.size - np.count_nonzero(np.isfinite(data)))


class _Schedule:
    """Which chunks have been submitted, had their copy back queued, and been handed to the writer."""

    def __init__(self, plan: ChunkPlan, device: StageDevice, writer: _Writer) -> None:
        self.plan, self.device, self.writer = plan, device, writer
        self.submitted = self.downloading = self.handed = 0

    def _slot_free(self, index: int) -> bool:
        """Output buffer index % depth is free once chunk index - depth is written."""
        return self.writer.written >= index - self.plan.depth + 1

    def pump(self, block: bool) -> None:
        """Queue the copies back that can go, hand finished chunks to the writer; with `block`, wait
        for one of those to become possible when none is."""
        while True:
            self.writer.raise_error()
            progressed = False
            while self.downloading < self.submitted and self._slot_free(self.downloading):
                self.device.download(self.downloading, self.downloading % self.plan.depth)
                self.downloading += 1
                progressed = True
            while self.handed < self.downloading and self.device.downloaded(self.handed):
                self.writer.jobs.put((self.handed, self.handed % self.plan.depth))
                self.handed += 1
                progressed = True
            if progressed or not block:
                return
            if self.handed < self.downloading:
                self.device.wait_downloaded(self.handed)
            elif self.downloading < self.submitted:
                self.writer.wait_written(self.downloading - self.plan.depth + 1)
            else:
                return


def run_pipeline(plan: ChunkPlan, source: ChunkSource, device: StageDevice, out: BinaryIO | None,
                 keep: np.ndarray | None = None, release: bool = True) -> CourseClock:
    """One pipelined first pass; returns its clock (the caller may widen `wall_s` to include the file's
    creation and rename). `keep`, when given, receives the whole output (for a check). Without `release`
    the ring stays for the caller to free once its clock has stopped (freeing pinned memory is attnbench's
    own work, not the pass's: 5 ms for t22's ring on an H200 host); after an error it is freed here."""
    start = time.perf_counter()
    device.setup()
    setup_s = time.perf_counter() - start
    writer = _Writer(plan, device, out, keep)
    writer.start()
    schedule = _Schedule(plan, device, writer)
    read_s = 0.0
    try:
        for index, (b0, b1) in enumerate(plan.chunks):
            slot = index % plan.depth
            if index >= plan.depth:
                device.input_released(index - plan.depth)
            began = time.perf_counter()
            source.read_items(b0, b1, device.input_buffer(slot))
            read_s += time.perf_counter() - began
            device.upload_and_compute(index, slot)
            schedule.submitted += 1
            schedule.pump(block=False)
        while schedule.handed < len(plan.chunks):
            schedule.pump(block=True)
        writer.finish()
        times = device.stage_times()
    except BaseException:
        writer.abort()
        device.release()
        raise
    if release:
        device.release()
    shape = plan.shape
    return CourseClock(
        wall_s=time.perf_counter() - start, setup_s=setup_s, device_alloc_s=device.device_alloc_s, read_s=read_s,
        h2d_s=times.h2d_s, kernel_s=times.kernel_s, d2h_s=times.d2h_s, write_s=writer.write_s,
        device_busy_s=times.busy_s, input_bytes=3 * shape.output_bytes, output_bytes=shape.output_bytes,
        chunks=len(plan.chunks), items_per_chunk=plan.items_per_chunk, ring_depth=plan.depth,
        ring_bytes=plan.ring_bytes, keep_s=writer.keep_s, nonfinite=writer.nonfinite,
    )

