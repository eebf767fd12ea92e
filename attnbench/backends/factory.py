"""The backend for a variant: the cpu variant on the host, the torch or triton peer, or a kernel through pycuda."""

from __future__ import annotations

from typing import Any

from attnbench.backends.base import Execution
from attnbench.cases.testcase import Testcase
from attnbench.kernels.variant import Variant


def make_execution(variant: Variant, testcase: Testcase, gpu: Any | None, flush_l2: bool = True) -> Execution:
    """The backend object for a variant (GPU variants and the peers need an open Gpu)."""
    variant.require(testcase.shape)
    if variant.backend == "cpu":
        from attnbench.backends.cpu import CpuExecution

        return CpuExecution(testcase)
    if variant.backend == "torch":
        from attnbench.backends.torch_peer import TorchExecution

        return TorchExecution(gpu, testcase)
    if variant.backend == "triton":
        from attnbench.backends.triton_peer import TritonExecution

        return TritonExecution(gpu, variant, testcase)
    assert gpu is not None, "a GPU variant needs an open GPU"
    from attnbench.backends.gpu_execution import GpuExecution

    return GpuExecution(gpu, variant, testcase, flush_l2)
