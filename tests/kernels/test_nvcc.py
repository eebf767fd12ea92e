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


def test_a_kernel_source_that_is_not_utf8_is_read_not_a_traceback(tmp_path):
    """A student's kernel with a Latin-1 comment ended `list` and `info` in a UnicodeDecodeError."""
    import dataclasses

    from attnbench.kernels.nvcc import source_text

    kernel = tmp_path / "mine.cu"
    kernel.write_bytes(b"// caf\xe9\n__global__ void k() {}\n")
    variant = dataclasses.replace(get_variant("naive"), source=None, source_path=kernel)
    assert source_text(variant) == "// caf\ufffd\n__global__ void k() {}\n"
    assert source_hash(variant)


def test_the_built_in_sources_are_read_in_a_locale_without_utf8():
    """LC_ALL=C with UTF-8 mode off reads files as ASCII: the built-in kernels' UTF-8 comments ended `list`."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    env.pop("PYTHONIOENCODING", None)
    code = ("import locale; from attnbench.kernels.catalogue import get_variant; "
            "from attnbench.kernels.nvcc import source_text, shared_headers; "
            "assert locale.getpreferredencoding(False).lower() in ('ascii', 'ansi_x3.4-1968'), locale.getpreferredencoding(False); "
            "print(sum(len(source_text(get_variant(n))) for n in ('bankfree', 'qreg', 'gemm')))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, errors="replace")
    assert done.returncode == 0, done.stderr[-400:]
