"""The chunk planner: whole batch items per chunk, the ring's depth, and the host memory bound."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbench.bench.chunk_plan import (
    HOST_BOUND,
    MAX_RING_BYTES,
    MIN_CHUNKS,
    RING_FRACTION,
    TARGET_CHUNK_BYTES,
    ChunkPlan,
    plan_chunks,
    plan_for_input,
)
from attnbench.cases import suite
from attnbench.cases.inputs import FileInput, SuiteInput, SyntheticInput
from attnbench.cases.testcase import Shape
from attnbench.kernels.catalogue import get_variant

COURSE = {"t02": (160, 128, 64), "t10": (10, 2048, 64), "t11": (13600, 128, 32), "t22": (500, 2048, 64),
          "t28": (4, 16384, 64), "t29": (4, 32768, 32), "t30": (2, 32768, 64)}


def check_invariants(plan: ChunkPlan) -> None:
    shape = plan.shape
    chunks = plan.chunks
    assert chunks[0][0] == 0 and chunks[-1][1] == shape.B
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:])), "chunks are contiguous, in order"
    assert all(0 < b1 - b0 <= plan.items_per_chunk for b0, b1 in chunks)
    assert 1 <= plan.depth <= len(chunks)
    assert plan.ring_bytes == plan.depth * plan.items_per_chunk * 16 * shape.N * shape.d
    if plan.refusal is None:
        assert len(chunks) >= 2
        assert plan.peak_host_bytes <= HOST_BOUND * shape.input_bytes


@pytest.mark.parametrize("name", sorted(COURSE))
@pytest.mark.parametrize("keep", [True, False])
def test_course_cases_are_planned_within_the_bound(name, keep):
    plan = plan_chunks(Shape(*COURSE[name]), keep_output=keep)
    check_invariants(plan)
    assert plan.refusal is None
    assert plan.chunk_in_bytes <= max(TARGET_CHUNK_BYTES, plan.item_in_bytes)


def test_the_large_course_cases_get_many_small_chunks_and_a_small_ring():
    t22 = plan_chunks(Shape(500, 2048, 64), keep_output=True)
    assert (t22.items_per_chunk, len(t22.chunks), t22.depth) == (5, 100, 3)
    assert t22.ring_bytes < 32 << 20
    assert t22.peak_host_bytes < 0.4 * Shape(500, 2048, 64).input_bytes  # the kept output (1/3) and the ring
    t11 = plan_chunks(Shape(13600, 128, 32), keep_output=False)
    assert t11.chunk_in_bytes <= TARGET_CHUNK_BYTES and len(t11.chunks) >= 80
    assert t11.peak_host_bytes < 0.05 * Shape(13600, 128, 32).input_bytes


def test_small_batches_get_at_least_min_chunks():
    plan = plan_chunks(Shape(160, 128, 64), keep_output=False)
    assert len(plan.chunks) >= MIN_CHUNKS


def test_items_larger_than_the_target_are_one_per_chunk_with_a_shallower_ring():
    plan = plan_chunks(Shape(4, 32768, 32), keep_output=True)
    assert plan.items_per_chunk == 1 and len(plan.chunks) == 4
    assert plan.ring_bytes <= RING_FRACTION * Shape(4, 32768, 32).input_bytes
    t30 = plan_chunks(Shape(2, 32768, 64), keep_output=True)
    assert t30.refusal is None and t30.depth == 1


def test_one_batch_item_is_refused_with_the_reason():
    plan = plan_chunks(Shape(1, 262144, 32), keep_output=True)
    assert plan.refusal is not None and "one chunk" in plan.refusal


def test_a_ring_that_would_pass_the_host_bound_is_refused():
    plan = plan_chunks(Shape(2, 4096, 64), keep_output=True, host_bound=0.5)
    assert plan.refusal is not None and "over the 0.5x bound" in plan.refusal


@settings(max_examples=300, deadline=None)
@given(B=st.integers(1, 20000), N=st.integers(1, 70000), d=st.integers(1, 512), keep=st.booleans(),
       target=st.sampled_from([1 << 16, 1 << 20, TARGET_CHUNK_BYTES]), depth=st.integers(1, 5))
def test_any_shape_gives_a_consistent_plan(B, N, d, keep, target, depth):
    plan = plan_chunks(Shape(B, N, d), keep_output=keep, target_chunk_bytes=target, depth=depth)
    check_invariants(plan)
    budget = min(MAX_RING_BYTES, RING_FRACTION * Shape(B, N, d).input_bytes)
    # Over the ring budget only where a single buffer of one item is more than it.
    assert plan.ring_bytes <= budget or (plan.items_per_chunk == 1 and plan.depth == 1)


def test_only_gpu_variants_on_files_get_a_plan(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))  # a data folder of its own: odd_17x48 is not on disk
    case = suite.get_case("odd_100x32")
    suite.generate_input(case)
    on_disk = SuiteInput(case)
    assert plan_for_input(on_disk, get_variant("tf32x3"), keep_output=True) is not None
    assert plan_for_input(on_disk, get_variant("cpu"), keep_output=True) is None
    assert plan_for_input(on_disk, get_variant("torch"), keep_output=True) is None
    assert plan_for_input(SyntheticInput(Shape(4, 8, 8), 1), get_variant("naive"), keep_output=False) is None
    missing = SuiteInput(suite.get_case("odd_17x48"), in_memory=True)
    assert plan_for_input(missing, get_variant("naive"), keep_output=False) is None
    assert plan_for_input(FileInput(Path(suite.input_path(case))), get_variant("naive"), True) is not None


def test_little_free_host_memory_shrinks_the_ring():
    roomy = plan_chunks(Shape(500, 2048, 64), keep_output=False, host_available=64 << 30)
    tight = plan_chunks(Shape(500, 2048, 64), keep_output=False, host_available=16 << 20)
    assert roomy.ring_bytes > 4 << 20 >= tight.ring_bytes
    assert tight.refusal is None and len(tight.chunks) > len(roomy.chunks)


def test_the_output_is_kept_where_out_cannot_hold_it_to_be_read(tmp_path):
    from attnbench.bench.chunk_plan import keeps_output

    assert keeps_output(True, tmp_path / "out.bin") and keeps_output(False, None)
    assert not keeps_output(False, tmp_path / "out.bin")  # written, then read back
    assert keeps_output(False, "/dev/null")
