"""How each kind of backend makes an execution: one maker per kind, keyed by the kind's name, and for the
kinds that are `pipelined`, one that makes an execution fed chunk by chunk with the stages that feed it.

The kinds' facts (what each needs, how it is timed) are `attnbench.kernels.backend_kinds`; this module adds
the one thing only the backends layer can: building the execution that runs a pass.
"""

from __future__ import annotations

from typing import Any, Callable

from attnbench.backends.base import Execution
from attnbench.backends.device import GpuDevice
from attnbench.cases.testcase import Shape, Testcase
from attnbench.kernels.variant import Variant

Maker = Callable[[Variant, Testcase, Any, bool], Execution]
# (variant, shape, gpu, flush_l2, chunks, depth, items per chunk) -> (execution, its pipeline stages)
StreamingMaker = Callable[[Variant, Shape, Any, bool, list[tuple[int, int]], int, int], tuple[Execution, Any]]


def _cpu(variant: Variant, testcase: Testcase, gpu: GpuDevice, flush_l2: bool) -> Execution:
    from attnbench.backends.cpu import CpuExecution

    return CpuExecution(testcase)


def _torch(variant: Variant, testcase: Testcase, gpu: GpuDevice, flush_l2: bool) -> Execution:
    from attnbench.backends.torch_peer import TorchExecution

    return TorchExecution(gpu, testcase, variant)


def _triton(variant: Variant, testcase: Testcase, gpu: GpuDevice, flush_l2: bool) -> Execution:
    from attnbench.backends.triton_peer import TritonExecution

    return TritonExecution(gpu, variant, testcase)


def _gpu(variant: Variant, testcase: Testcase, gpu: GpuDevice, flush_l2: bool) -> Execution:
    from attnbench.backends.gpu_execution import GpuExecution

    return GpuExecution(gpu, variant, testcase, flush_l2)


# A whole program ("program") has no execution of timed passes: it runs as a process (backends.program).
MAKERS: dict[str, Maker] = {"cpu": _cpu, "torch": _torch, "triton": _triton, "gpu": _gpu}


def make_execution(variant: Variant, testcase: Testcase, gpu: GpuDevice | None, flush_l2: bool = True) -> Execution:
    """The backend object for a variant (kinds that need a GPU need an open Gpu)."""
    variant.require(testcase.shape)
    maker = MAKERS.get(variant.backend)
    assert maker is not None, f"no execution for backend kind {variant.backend!r}"
    assert gpu is not None or not variant.kind.needs_gpu, f"{variant.name} needs an open GPU"
    return maker(variant, testcase, gpu, flush_l2)


def _gpu_streaming(variant: Variant, shape: Shape, gpu: GpuDevice, flush_l2: bool, chunks: list[tuple[int, int]],
                   depth: int, items_per_chunk: int) -> tuple[Execution, Any]:
    from attnbench.backends.gpu_execution import GpuExecution
    from attnbench.backends.gpu_pipeline import GpuStages

    execution = GpuExecution(gpu, variant, shape, flush_l2)
    return execution, GpuStages(execution, chunks, depth, items_per_chunk)


STREAMING_MAKERS: dict[str, StreamingMaker] = {"gpu": _gpu_streaming}


def make_streaming_execution(variant: Variant, shape: Shape, gpu: GpuDevice, flush_l2: bool,
                             chunks: list[tuple[int, int]], depth: int,
                             items_per_chunk: int) -> tuple[Execution, Any]:
    """An execution whose input arrives chunk by chunk (`chunks`, batch item ranges), and the pipeline stages
    (a `bench.pipeline.StageDevice`: a ring of `depth` pinned buffers, streams, events) that feed it."""
    maker = STREAMING_MAKERS.get(variant.backend)
    assert maker is not None and variant.kind.pipelined, f"{variant.name} cannot stream its input"
    return maker(variant, shape, gpu, flush_l2, chunks, depth, items_per_chunk)
