"""The GPU side of the pipelined first pass: a ring of pinned host buffers, three streams and events.

Chunk i's input goes from pinned buffer i % depth to its place in the execution's full device input
on the copy-in stream; its kernels (the execution's launches for those batch items) run on the
compute stream once that copy's event has fired; its output comes back into pinned output buffer
i % depth on the copy-out stream once the kernels' event has fired. Copies in and out use separate
streams so the two copy engines work at once. Events around every copy and every chunk's kernels
give each stage's busy time; kernel time proper is still measured later by the sampler, on the
resident buffers, exactly as on the unpipelined path.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from attnbench.backends.gpu_execution import GpuExecution
from attnbench.errors import DeviceMemoryError, KernelLaunchError
from attnbench.results.course_clock import DeviceStageTimes, union_seconds


class _ChunkEvents:
    """Six events of one chunk: copy in, kernels, copy back (start and end of each)."""

    def __init__(self, driver: Any) -> None:
        self.h2d = (driver.Event(), driver.Event())
        self.kernel = (driver.Event(), driver.Event())
        self.d2h = (driver.Event(), driver.Event())


class GpuStages:
    """Pinned ring, streams and per-chunk events for one execution (a `StageDevice`)."""

    def __init__(self, execution: GpuExecution, chunks: list[tuple[int, int]], depth: int, items_per_chunk: int) -> None:
        self.execution = execution
        self.driver = execution.driver
        self.chunks = chunks
        self.depth = depth
        shape = execution.shape
        self.item_in_bytes = 12 * shape.N * shape.d
        self.item_out_elements = shape.N * shape.d
        self.items_per_chunk = items_per_chunk
        self.device_alloc_s = 0.0
        self._inputs: list[np.ndarray] = []
        self._outputs: list[np.ndarray] = []
        self._records: list[list] = []
        self._events: list[_ChunkEvents | None] = [None] * len(chunks)
        self._streams: tuple[Any, Any, Any] | None = None

    def setup(self) -> None:
        start = time.perf_counter()
        self.execution.allocate()
        self.driver.Context.synchronize()  # the output's poison is in place before any chunk's kernels
        self.device_alloc_s = time.perf_counter() - start
        self._records = [self.execution.launch_records(b0, b1) for b0, b1 in self.chunks]
        driver = self.driver
        in_bytes = self.items_per_chunk * self.item_in_bytes
        out_elements = self.items_per_chunk * self.item_out_elements
        try:
            for _ in range(self.depth):
                self._inputs.append(driver.pagelocked_empty(in_bytes, np.uint8))
                self._outputs.append(driver.pagelocked_empty(out_elements, np.float32))
        except (driver.MemoryError, driver.Error) as exc:
            ring = self.depth * (in_bytes + 4 * out_elements)
            self.release()
            raise DeviceMemoryError(
                f"pinning {ring / 2**20:.1f} MiB of host memory for the pipeline's ring failed ({exc}); "
                "free some memory, or run with --no-pipeline"
            ) from None
        self._streams = (driver.Stream(), driver.Stream(), driver.Stream())

    def input_buffer(self, slot: int) -> memoryview:
        return memoryview(self._inputs[slot])

    def output_buffer(self, slot: int) -> np.ndarray:
        return self._outputs[slot]

    def upload_and_compute(self, index: int, slot: int) -> None:
        assert self._streams is not None
        copy_in, compute, _ = self._streams
        b0, b1 = self.chunks[index]
        events = self._events[index] = _ChunkEvents(self.driver)
        source = self._inputs[slot][: (b1 - b0) * self.item_in_bytes]
        try:
            events.h2d[0].record(copy_in)
            self.driver.memcpy_htod_async(self.execution.device_input + b0 * self.item_in_bytes, source, copy_in)
            events.h2d[1].record(copy_in)
            compute.wait_for_event(events.h2d[1])
            events.kernel[0].record(compute)
        except self.driver.Error as exc:
            raise KernelLaunchError(f"{self.execution.variant.name}: copying chunk {index} to the device failed: {exc}") from None
        self.execution.launch(self._records[index], compute)
        events.kernel[1].record(compute)

    def download(self, index: int, slot: int) -> None:
        assert self._streams is not None
        copy_out = self._streams[2]
        events = self._chunk_events(index)
        b0, b1 = self.chunks[index]
        n = (b1 - b0) * self.item_out_elements
        try:
            copy_out.wait_for_event(events.kernel[1])
            events.d2h[0].record(copy_out)
            self.driver.memcpy_dtoh_async(self._outputs[slot][:n], self.execution.device_output + 4 * b0 * self.item_out_elements,
                                          copy_out)
            events.d2h[1].record(copy_out)
        except self.driver.Error as exc:
            raise KernelLaunchError(f"{self.execution.variant.name}: copying chunk {index} back failed: {exc}") from None

    def _chunk_events(self, index: int) -> _ChunkEvents:
        events = self._events[index]
        assert events is not None, f"chunk {index} was not submitted"
        return events

    def _wait(self, event: Any, what: str) -> None:
        try:
            event.synchronize()
        except self.driver.Error as exc:
            raise KernelLaunchError(f"{self.execution.variant.name} on {self.execution.shape}: {what} failed: {exc}") from None

    def input_released(self, index: int) -> None:
        self._wait(self._chunk_events(index).h2d[1], f"copying chunk {index} to the device")

    def downloaded(self, index: int) -> bool:
        try:
            return bool(self._chunk_events(index).d2h[1].query())
        except self.driver.Error as exc:
            raise KernelLaunchError(f"{self.execution.variant.name} on {self.execution.shape}: chunk {index} failed: {exc}") from None

    def wait_downloaded(self, index: int) -> None:
        self._wait(self._chunk_events(index).d2h[1], f"chunk {index} (its kernels or its copy back)")

    def stage_times(self) -> DeviceStageTimes:
        """Busy time of each device stage, from the events (every chunk done)."""
        first = self._chunk_events(0).h2d[0]
        spans: dict[str, list[tuple[float, float]]] = {"h2d": [], "kernel": [], "d2h": []}
        try:
            for index in range(len(self.chunks)):
                events = self._chunk_events(index)
                for stage in spans:
                    begin, end = getattr(events, stage)
                    spans[stage].append((first.time_till(begin), first.time_till(end)))
        except self.driver.Error as exc:
            raise KernelLaunchError(f"{self.execution.variant.name}: reading the pipeline's events failed: {exc}") from None
        busy = {stage: sum(end - begin for begin, end in intervals) / 1e3 for stage, intervals in spans.items()}
        union = union_seconds([span for intervals in spans.values() for span in intervals]) / 1e3
        return DeviceStageTimes(h2d_s=busy["h2d"], kernel_s=busy["kernel"], d2h_s=busy["d2h"], busy_s=union)

    def release(self) -> None:
        if self._streams is not None:  # after an error or Ctrl-C, no copy may still use the ring when it is freed
            for stream in self._streams:
                try:
                    stream.synchronize()
                except Exception:
                    pass
        for array in self._inputs + self._outputs:
            try:
                array.base.free()
            except Exception:
                pass
        self._inputs, self._outputs = [], []
        self._streams = None
