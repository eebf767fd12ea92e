"""How each kind of backend makes an execution: one maker per kind, keyed by the kind's name.

The kinds' facts (what each needs, how it is timed) are `attnbench.kernels.backend_kinds`; this module adds
the one thing only the backends layer can: building the execution that runs a pass.
"""

from __future__ import annotations

from typing import Any, Callable

from attnbench.backends.base import Execution
from attnbench.backends.device import GpuDevice
from attnbench.cases.testcase import Testcase
from attnbench.kernels.variant import Variant

Maker = Callable[[Variant, Testcase, Any, bool], Execution]


def _cpu(variant: Variant, testcase: Testcase, gpu: GpuDevice, flush_l2: bool) -> Execution:
    from attnbench.backends.cpu import CpuExecution

    return CpuExecution(testcase)


def _torch(variant: Variant, testcase: Testcase, gpu: GpuDevice, flush_l2: bool) -> Execution:
    from attnbench.backends.torch_peer import TorchExecution

    return TorchExecution(gpu, testcase)


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
