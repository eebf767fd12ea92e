"""A fake device for the pipeline: three stream threads that run queued copies and 'kernels' in order.

It behaves like the GPU where it matters to the pipeline's correctness: a queued copy reads its pinned
buffer when the stream reaches it, not when it is queued, so a buffer reused too early gives wrong
bytes; a kernel waits for its copy's event, a copy back for its kernel's event. Every stage logs its
start and end, so tests can check the order of events and how they overlap.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from attnbench.results.course_clock import DeviceStageTimes, union_seconds


def fake_kernel(qkv: np.ndarray) -> np.ndarray:
    """The fake device's 'attention': Q + 2K - V per item, float32 (any per-item function would do)."""
    return qkv[:, 0] + 2 * qkv[:, 1] - qkv[:, 2]


@dataclass
class Log:
    """(time, stage, chunk, 'start' | 'end') entries from every thread."""

    entries: list[tuple[float, str, int, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, stage: str, chunk: int, what: str) -> None:
        with self.lock:
            self.entries.append((time.perf_counter(), stage, chunk, what))

    def time(self, stage: str, chunk: int, what: str) -> float:
        found = [t for t, s, c, w in self.entries if (s, c, w) == (stage, chunk, what)]
        assert len(found) == 1, f"{stage} {chunk} {what}: {len(found)} entries"
        return found[0]

    def interval(self, stage: str, chunk: int) -> tuple[float, float]:
        return self.time(stage, chunk, "start"), self.time(stage, chunk, "end")


class _Stream(threading.Thread):
    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.ops: queue.Queue = queue.Queue()
        self.error: BaseException | None = None

    def run(self) -> None:
        while True:
            op = self.ops.get()
            if op is None:
                return
            wait, work, done = op
            if wait is not None:
                wait.wait()
            try:
                work()
            except BaseException as exc:  # a failed 'kernel' leaves its event unset, like a sticky CUDA error
                self.error = exc
                continue
            done.set()


class FakeStages:
    """A StageDevice on the host. `delays` (seconds) slow down h2d, kernel and d2h per chunk."""

    def __init__(self, shape, chunks, depth, items, log: Log | None = None, delays: dict | None = None,
                 fail_kernel_at: int | None = None, kernel=fake_kernel) -> None:
        self.shape, self.chunks, self.depth, self.items = shape, chunks, depth, items
        self.kernel = kernel
        self.log = log or Log()
        self.delays = delays or {}
        self.fail_kernel_at = fail_kernel_at
        self.item_in = 12 * shape.N * shape.d
        self.item_out = shape.N * shape.d
        # "Device memory": allocated here, not in setup, so tests can measure the host side alone.
        self.device_in = np.zeros(shape.B * self.item_in, dtype=np.uint8)
        self.device_out = np.full(shape.B * self.item_out, np.nan, dtype=np.float32)
        self.device_alloc_s = 0.0
        self.events: dict[tuple[str, int], threading.Event] = {}
        self.released = False
        self.setups = 0

    def setup(self) -> None:
        self.setups += 1
        self.inputs = [np.zeros(self.items * self.item_in, dtype=np.uint8) for _ in range(self.depth)]
        self.outputs = [np.zeros(self.items * self.item_out, dtype=np.float32) for _ in range(self.depth)]
        self.streams = [_Stream(f"fake-{name}") for name in ("h2d", "compute", "d2h")]
        for stream in self.streams:
            stream.start()

    def _event(self, stage: str, index: int) -> threading.Event:
        return self.events.setdefault((stage, index), threading.Event())

    def _timed(self, stage: str, index: int, work):
        def run() -> None:
            self.log.add(stage, index, "start")
            time.sleep(self.delays.get(stage, 0.0))
            work()
            self.log.add(stage, index, "end")
        return run

    def input_buffer(self, slot: int) -> memoryview:
        return memoryview(self.inputs[slot])

    def output_buffer(self, slot: int) -> np.ndarray:
        return self.outputs[slot]

    def upload_and_compute(self, index: int, slot: int) -> None:
        b0, b1 = self.chunks[index]
        n_in = (b1 - b0) * self.item_in

        def copy_in() -> None:
            self.device_in[b0 * self.item_in : b1 * self.item_in] = self.inputs[slot][:n_in]

        def kernel() -> None:
            if index == self.fail_kernel_at:
                raise RuntimeError("the fake kernel failed")
            qkv = self.device_in[b0 * self.item_in : b1 * self.item_in].view(np.float32)
            qkv = qkv.reshape(b1 - b0, 3, self.shape.N, self.shape.d)
            self.device_out[b0 * self.item_out : b1 * self.item_out] = self.kernel(qkv).reshape(-1)

        self.streams[0].ops.put((None, self._timed("h2d", index, copy_in), self._event("h2d", index)))
        self.streams[1].ops.put((self._event("h2d", index), self._timed("kernel", index, kernel),
                                 self._event("kernel", index)))

    def download(self, index: int, slot: int) -> None:
        b0, b1 = self.chunks[index]

        def copy_out() -> None:
            self.outputs[slot][: (b1 - b0) * self.item_out] = self.device_out[b0 * self.item_out : b1 * self.item_out]

        self.streams[2].ops.put((self._event("kernel", index), self._timed("d2h", index, copy_out),
                                 self._event("d2h", index)))

    def _wait(self, stage: str, index: int) -> None:
        while not self._event(stage, index).wait(0.01):
            for stream in self.streams:
                if stream.error is not None:
                    raise RuntimeError(f"fake device: {stream.error}")

    def input_released(self, index: int) -> None:
        self._wait("h2d", index)

    def downloaded(self, index: int) -> bool:
        return self._event("d2h", index).is_set()

    def wait_downloaded(self, index: int) -> None:
        self._wait("d2h", index)

    def stage_times(self) -> DeviceStageTimes:
        spans = {stage: [self.log.interval(stage, i) for i in range(len(self.chunks))] for stage in ("h2d", "kernel", "d2h")}
        busy = {stage: sum(e - s for s, e in v) for stage, v in spans.items()}
        return DeviceStageTimes(busy["h2d"], busy["kernel"], busy["d2h"], union_seconds([x for v in spans.values() for x in v]))

    def release(self) -> None:
        self.released = True
        for event in list(self.events.values()):
            event.set()  # a stream stuck behind a failed kernel's event can end
        for stream in self.streams:
            stream.ops.put(None)
        for stream in self.streams:
            stream.join(5)


class LoggedSource:
    """A chunk source over a TestcaseFile that logs its reads (chunk index by order) and can be slowed."""

    def __init__(self, source, log: Log, delay: float = 0.0) -> None:
        self.source, self.log, self.delay, self.count = source, log, delay, 0

    def read_items(self, b0: int, b1: int, into: memoryview) -> None:
        index, self.count = self.count, self.count + 1
        self.log.add("read", index, "start")
        time.sleep(self.delay)
        self.source.read_items(b0, b1, into)
        self.log.add("read", index, "end")


class LoggedFile:
    """A binary file that logs each write (one per chunk, in order) and can be slowed or made to fail."""

    def __init__(self, f, log: Log, delay: float = 0.0, fail_at: int | None = None) -> None:
        self.f, self.log, self.delay, self.fail_at, self.count = f, log, delay, fail_at, 0

    def write(self, data) -> int:
        index, self.count = self.count, self.count + 1
        self.log.add("write", index, "start")
        if index == self.fail_at:
            raise OSError(28, "No space left on device")
        time.sleep(self.delay)
        written = self.f.write(data)
        self.log.add("write", index, "end")
        return written
