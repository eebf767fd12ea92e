from attnbench.kernels.catalogue import get_variant
from attnbench.kernels.nvcc import parse_ptxas, shared_headers, source_hash

PTXAS = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'flash_a' for 'sm_90'
ptxas info    : Function properties for flash_a
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 16384 bytes smem, 400 bytes cmem[0]
ptxas info    : Compiling entry function 'flash_b' for 'sm_90'
ptxas info    : Function properties for flash_b
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 380 bytes cmem[0]
"""


def test_parse_ptxas_reads_each_kernel():
    figures = parse_ptxas(PTXAS)
    assert set(figures) == {"flash_a", "flash_b"}
    a, b = figures["flash_a"], figures["flash_b"]
    assert (a.registers, a.static_smem, a.spills) == (40, 16384, 0)
    assert (b.registers, b.static_smem, b.stack_frame, b.spill_stores, b.spill_loads) == (255, 0, 16, 8, 12)
    assert b.spills == 20


def test_shared_headers_are_the_ones_a_source_includes():
    assert [h.name for h in shared_headers(get_variant("naive"))] == ["common.cuh"]
    assert [h.name for h in shared_headers(get_variant("gemm"))] == ["common.cuh", "softmax_rows.cuh"]
    assert [h.name for h in shared_headers(get_variant("tf32x3"))] == ["common.cuh", "tf32_mma.cuh"]


def test_the_source_hash_covers_an_included_header(monkeypatch):
    """An edit to softmax_rows.cuh changes gemm's hash (saved results notice it), not naive's."""
    import attnbench.kernels.nvcc as nvcc

    gemm, naive = get_variant("gemm"), get_variant("naive")
    before = source_hash(gemm), source_hash(naive)
    real_read = nvcc.Path.read_bytes
    monkeypatch.setattr(nvcc.Path, "read_bytes",
                        lambda self: real_read(self) + (b"//" if self.name == "softmax_rows.cuh" else b""))
    assert source_hash(gemm) != before[0] and source_hash(naive) == before[1]
