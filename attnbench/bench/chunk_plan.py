"""The chunk planner of the pipelined host path: how many batch items per chunk, how deep the ring.

A chunk is whole batch items (a contiguous range of the input file and of the output). The ring holds
`depth` pinned input buffers and `depth` pinned output buffers of one chunk each, reused in turn, so
host memory stays small whatever the input's size. The plan trades three costs:

- chunks too large: pinning the ring costs time (about 3 GB/s on the H200's host), and the last
  chunk's kernels, copy back and write come after all reading ends (the pipeline's tail);
- chunks too small: each chunk costs a few Python calls and copies of a few microseconds;
- ring too shallow: reading waits for a copy to free its buffer (a short wait: pinned copies run
  at about 55 GB/s, reading at under 10), and a slow write holds back the next copy back.

Host memory is the ring plus, when the output is kept for a check, one output array. The ring stays
within half the input, 256 MiB, and a quarter of the host's available memory. (Device memory is what
the unpipelined path needs, the whole input and output resident, and is checked there.) A plan whose peak
would pass `HOST_BOUND` times the input file is refused with the reason (one batch item larger than
the budget allows, say), and the caller runs the unpipelined path instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from attnbench.cases.inputs import BenchInput
from attnbench.cases.testcase import FLOAT_BYTES, Shape
from attnbench.kernels.variant import Variant

TARGET_CHUNK_BYTES = 8 << 20  # input bytes per chunk: 0.15 ms of pinned H2D, a read of about 1 ms
MIN_CHUNKS = 8  # enough chunks that reading, copies, kernels and writing overlap
DEPTH = 3  # buffers per ring: one being read or written, one in flight, one spare
MAX_RING_BYTES = 256 << 20
RING_FRACTION = 0.5  # the ring stays within half the input
HOST_BOUND = 1.5  # peak host memory of a run, in input files (the trust issue's bound)


@dataclass(frozen=True)
class ChunkPlan:
    """Chunks of whole batch items and the ring that carries them."""

    shape: Shape
    items_per_chunk: int
    depth: int
    keep_output: bool
    refusal: str | None = None  # why this input should take the unpipelined path instead

    @property
    def item_in_bytes(self) -> int:
        return 3 * FLOAT_BYTES * self.shape.N * self.shape.d

    @property
    def item_out_bytes(self) -> int:
        return FLOAT_BYTES * self.shape.N * self.shape.d

    @property
    def chunks(self) -> list[tuple[int, int]]:
        """Batch ranges [b0, b1) in order."""
        B, step = self.shape.B, self.items_per_chunk
        return [(b0, min(B, b0 + step)) for b0 in range(0, B, step)]

    @property
    def chunk_in_bytes(self) -> int:
        return self.items_per_chunk * self.item_in_bytes

    @property
    def chunk_out_bytes(self) -> int:
        return self.items_per_chunk * self.item_out_bytes

    @property
    def ring_bytes(self) -> int:
        """Pinned host memory: `depth` input buffers and `depth` output buffers."""
        return self.depth * (self.chunk_in_bytes + self.chunk_out_bytes)

    @property
    def peak_host_bytes(self) -> int:
        """The ring, and the kept output when there is one (the input is never held whole)."""
        return self.ring_bytes + (self.shape.output_bytes if self.keep_output else 0)

    def describe(self) -> str:
        count = len(self.chunks)
        return (f"{count} chunk{'s' if count != 1 else ''} of {self.items_per_chunk} item"
                f"{'s' if self.items_per_chunk != 1 else ''} ({self.chunk_in_bytes / 2**20:.1f} MiB in), "
                f"ring of {self.depth} ({self.ring_bytes / 2**20:.1f} MiB pinned)")


def available_host_bytes() -> int | None:
    """Host memory the kernel says is available (Linux's MemAvailable), or None where it cannot tell."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def plan_chunks(
    shape: Shape,
    keep_output: bool,
    target_chunk_bytes: int = TARGET_CHUNK_BYTES,
    min_chunks: int = MIN_CHUNKS,
    depth: int = DEPTH,
    max_ring_bytes: int = MAX_RING_BYTES,
    host_bound: float = HOST_BOUND,
    host_available: int | None = None,
) -> ChunkPlan:
    """The chunking of `shape`'s batch for the pipeline, within the host memory budget (and within a
    quarter of `host_available`, the host's free memory, when given)."""
    item_in = 3 * FLOAT_BYTES * shape.N * shape.d
    item_out = FLOAT_BYTES * shape.N * shape.d
    input_bytes = shape.B * item_in
    items = max(1, min(shape.B, target_chunk_bytes // item_in, -(-shape.B // min_chunks)))
    chunks = -(-shape.B // items)
    depth = max(1, min(depth, chunks))
    ring_budget = min(max_ring_bytes, RING_FRACTION * input_bytes)
    if host_available is not None:
        ring_budget = min(ring_budget, host_available / 4)
    while items > 1 and depth * items * (item_in + item_out) > ring_budget:
        items = max(1, items // 2)
    while depth > 1 and depth * items * (item_in + item_out) > ring_budget:
        depth -= 1  # one buffer still overlaps: reading waits only for the previous chunk's quick copy
    depth = max(1, min(depth, -(-shape.B // items)))
    plan = ChunkPlan(shape, items, depth, keep_output)
    if len(plan.chunks) < 2:
        return ChunkPlan(shape, items, depth, keep_output,
                         refusal=f"the input is one chunk ({shape.B} batch item{'s' if shape.B != 1 else ''} of "
                                 f"{item_in / 2**20:.1f} MiB), so a pipeline has nothing to overlap")
    if plan.peak_host_bytes > host_bound * input_bytes:
        return ChunkPlan(shape, items, depth, keep_output,
                         refusal=f"a ring of whole batch items ({item_in / 2**20:.1f} MiB each) would take "
                                 f"{plan.peak_host_bytes / input_bytes:.2f}x the input in host memory, "
                                 f"over the {host_bound:g}x bound")
    return plan


def plan_for_input(bench_input: BenchInput, variant: Variant, keep_output: bool) -> ChunkPlan | None:
    """The pipeline's plan for a GPU variant on an input on disk (with `refusal` set where the plan does not
    fit), or None where the unpipelined path is the only one: the cpu variant, the torch peer, inputs in memory."""
    path = getattr(bench_input, "path", None)
    if not variant.kind.pipelined or path is None or not Path(path).is_file():
        return None
    plan = plan_chunks(bench_input.shape, keep_output, host_available=available_host_bytes())
    if variant.layout == "separate":  # the ring streams interleaved items; q, k, v buffers are filled whole
        return replace(plan, refusal=f"{variant.name} takes separate q, k, v arrays, which the pipeline does not stream")
    return plan


def keeps_output(check: bool, out: str | os.PathLike | None) -> bool:
    """Whether the pipeline keeps the output in memory: to check it, or where OUT cannot hold it to be read
    (no OUT, or a special file such as /dev/null or a FIFO)."""
    if check or out is None:
        return True
    path = Path(out)
    return path.exists() and not path.is_file()
