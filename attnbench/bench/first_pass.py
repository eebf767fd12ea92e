"""A cell's first pass, as a strategy of the cell engine (`bench.runner.run_cell`).

The first pass is timed as the course times "computing" (allocation, host-to-device, kernels,
device-to-host) on the case's own input, and its output is checked in full. It comes in two kinds:
`WholeInput`, the testcase in memory, uploaded, computed and downloaded one after another (every
command's path, and `run`'s for the cpu variant, the torch peer, inputs in memory and `--no-pipeline`);
`StreamedFile`, a course input file streamed through the pipeline (`bench.pipeline`) while the kernels
run, the output written as it goes (`run`'s default for a GPU variant on a file). What follows the first
pass (the check, the fresh samples, the measurement) is the engine's, the same for both.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from attnbench.backends.base import Execution
from attnbench.backends.device import GpuDevice
from attnbench.backends.registry import make_execution, make_streaming_execution
from attnbench.bench.chunk_plan import ChunkPlan
from attnbench.bench.pipeline import run_pipeline
from attnbench.bench.verify import FiniteCheck, finite_check
from attnbench.cases.fresh_values import InputRange
from attnbench.cases.streaming import TestcaseFile
from attnbench.cases.testcase import Shape, Testcase, write_output
from attnbench.errors import KernelLaunchError
from attnbench.files import atomic_write
from attnbench.kernels.variant import Variant
from attnbench.results.course_clock import CourseClock
from attnbench.results.measurement import Measurement


@dataclass
class FirstPassDone:
    """What a first pass gave: its output (None where it was streamed out and not kept), its time, and
    its scan for NaN and Inf (the check an output gets without a reference)."""

    output: np.ndarray | None
    compute_s: float
    finite: Callable[[], FiniteCheck]
    clock: CourseClock | None = None  # the pipeline's stages, when it streamed


class FirstPass(Protocol):
    """How a cell's input reaches the variant the first time; one object per cell."""

    label: str  # the case, as errors and the measurement name it
    shape: Shape

    def value_range(self) -> InputRange: ...  # each tensor's range, taken on the host before any launch

    def execution(self, variant: Variant, gpu: GpuDevice | None,
                  flush_l2: bool) -> AbstractContextManager[Execution]: ...  # freed on leaving

    def run(self, execution: Execution) -> FirstPassDone: ...

    def annotate(self, measurement: Measurement, done: FirstPassDone) -> None: ...  # its own times, its output


class WholeInput:
    """The testcase in memory: upload, one pass and download, timed; `out`, when given, written once the cell
    is measured (`output_s`), and `input_s` the time the caller took to read it (None: not read from disk)."""

    def __init__(self, testcase: Testcase, label: str, ranges: InputRange | None = None,
                 input_s: float | None = None, out: str | os.PathLike | None = None) -> None:
        self.testcase, self.label, self.shape = testcase, label, testcase.shape
        self.ranges, self.input_s, self.out = ranges, input_s, out

    def value_range(self) -> InputRange:
        return self.ranges or InputRange.of(self.testcase.q, self.testcase.k, self.testcase.v)

    @contextmanager
    def execution(self, variant: Variant, gpu: GpuDevice | None, flush_l2: bool) -> Iterator[Execution]:
        execution = make_execution(variant, self.testcase, gpu, flush_l2)
        try:
            yield execution
        finally:
            execution.free()

    def run(self, execution: Execution) -> FirstPassDone:
        """The first pass; a failed kernel also names the case (the user may have run several)."""
        start = time.perf_counter()
        try:
            execution.upload()
            execution.run_pass()
            output = execution.download()
        except KernelLaunchError as exc:
            raise KernelLaunchError(f"{exc} (case {self.label})") from None
        return FirstPassDone(output, time.perf_counter() - start, lambda: finite_check(output))

    def annotate(self, measurement: Measurement, done: FirstPassDone) -> None:
        measurement.input_s = self.input_s
        if self.out is not None and done.output is not None:
            start = time.perf_counter()
            write_output(self.out, done.output)
            measurement.output_s = time.perf_counter() - start


class StreamedFile:
    """A course input file through the pipeline: the file streams to the device while the kernels run and
    the output streams to `out` (written safely, whole or not at all; None: not written); the device keeps the
    input resident for the samples. With `plan.keep_output` the output is also kept (for a check)."""

    def __init__(self, path: str | os.PathLike, plan: ChunkPlan, label: str, ranges: InputRange,
                 out: str | os.PathLike | None) -> None:
        self.path, self.plan, self.label, self.ranges, self.out = path, plan, label, ranges, out
        self.shape = plan.shape
        self._source: TestcaseFile | None = None
        self._stages = None

    def value_range(self) -> InputRange:
        return self.ranges

    @contextmanager
    def execution(self, variant: Variant, gpu: GpuDevice | None, flush_l2: bool) -> Iterator[Execution]:
        assert gpu is not None, f"{variant.name} streams its input to an open GPU"
        plan = self.plan
        with TestcaseFile(self.path) as source:
            self._source, self.shape = source, source.shape
            execution, self._stages = make_streaming_execution(variant, source.shape, gpu, flush_l2, plan.chunks,
                                                               plan.depth, plan.items_per_chunk)
            try:
                yield execution
            finally:
                execution.free()
                self._source = None

    def run(self, execution: Execution) -> FirstPassDone:
        shape, stages = self.shape, self._stages
        assert self._source is not None and stages is not None, "run() inside execution()"
        keep = np.empty((shape.B, shape.N, shape.d), dtype=np.float32) if self.plan.keep_output else None
        start = time.perf_counter()
        try:
            if self.out is None:
                clock = run_pipeline(self.plan, self._source, stages, None, keep, release=False)
            else:
                clocks = []
                atomic_write(self.out, lambda f: clocks.append(run_pipeline(self.plan, self._source, stages, f, keep,
                                                                            release=False)))
                clock = clocks[0]
            clock.wall_s = time.perf_counter() - start  # the file's creation and rename included
        finally:
            stages.release()
        return FirstPassDone(keep, clock.compute_s, lambda: FiniteCheck(clock.nonfinite, shape.elements), clock)

    def annotate(self, measurement: Measurement, done: FirstPassDone) -> None:
        clock = done.clock
        assert clock is not None
        measurement.input_s, measurement.output_s, measurement.clock = clock.read_s, clock.write_s, clock
        measurement.nonfinite = clock.nonfinite
