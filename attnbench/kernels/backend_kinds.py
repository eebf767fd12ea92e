"""What each kind of backend is, stated once as data: every module asks these facts, never the kind's name.

A Variant names its kind (`Variant.backend`, the string saved with results); `Variant.kind` is the record
below. How to make an execution for a kind is the backends layer's (`attnbench.backends.registry`), since
the executions live there; the facts live here so that the layers below backends (nvcc, the catalogue)
read them too. A new backend adds one record here and one maker there, and no `if backend == ...` elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackendKind:
    """The facts of one kind of backend."""

    name: str
    compiled: bool  # its code is a .cu file built by nvcc / pycuda (ptxas figures, defines, compile cache)
    needs_gpu: bool  # opens a GPU and its CUDA context (a fault there can lose the context for later cells)
    needs_torch: bool  # imports PyTorch (the run's metadata records its version)
    runs_on_host: bool  # passes run on the host: the host timing policy, its own cost model, cpu stand-in workers
    whole_program: bool  # a whole program timed as a process: no kernel time, no timed passes
    pipelined: bool  # `run` can stream its input through the pinned-ring pipeline
    cost_weight: float  # a cell's estimated cost per FLOP, relative to a GPU kernel's (progress and spreading)


BACKEND_KINDS: dict[str, BackendKind] = {
    kind.name: kind
    for kind in (
        BackendKind("gpu", compiled=True, needs_gpu=True, needs_torch=False, runs_on_host=False,
                    whole_program=False, pipelined=True, cost_weight=1.0),
        BackendKind("torch", compiled=False, needs_gpu=True, needs_torch=True, runs_on_host=False,
                    whole_program=False, pipelined=False, cost_weight=1.0),
        # The triton peer launches on PyTorch's tensors too, but imports PyTorch and Triton only in its own cells,
        # which say in one sentence that either is missing while the other variants still run: so not needs_torch
        # (that refuses the whole run up front, in the torch peer's words).
        BackendKind("triton", compiled=False, needs_gpu=True, needs_torch=False, runs_on_host=False,
                    whole_program=False, pipelined=False, cost_weight=1.0),
        # host passes run at a few GFLOP/s, some 50 times slower per FLOP than a kernel
        BackendKind("cpu", compiled=False, needs_gpu=False, needs_torch=False, runs_on_host=True,
                    whole_program=False, pipelined=False, cost_weight=50.0),
        BackendKind("program", compiled=False, needs_gpu=False, needs_torch=False, runs_on_host=False,
                    whole_program=True, pipelined=False, cost_weight=1.0),
    )
}
