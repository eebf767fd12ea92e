"""The Triton peer's kernel: a flash-attention forward over the course's interleaved input.

One program per (query block, batch item), numbered so that an item's blocks run side by side (they
share its K and V in L2). Each loads its BLOCK_M rows of Q once, pre-scaled by log2(e)/sqrt(d), then
walks the keys BLOCK_N at a time with the online softmax in float32: S = Q K^T on `tl.dot` in the
flavour's precision (tf32x3, ieee or tf32), running max and sum, exp2, and O += P V on `tl.dot` again.
The head dimension is padded to a power of two >= 16 (BLOCK_D) with masks; keys past N get -inf scores,
and rows past N are computed on zeros and never stored. Every key block carries the mask: one loop, not a
loop of full blocks and a masked tail, because the second copy of the body raises register pressure
enough to spill (ptxas on sm_90, tf32x3, d = 128: 64-470 spilled bytes per thread with one loop, 780-3500
with two; at d = 64 none against 56-1300).

Input (the ABI of attnbench.kernels.variant): item b's Q at qkv + b*3*N*d, K at +N*d, V at +2*N*d; O at
out + b*N*d. Importing this module imports Triton: the peer imports it only once Triton is known to load.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _rows(base, first, count, HEAD_DIM: tl.constexpr, BLOCK_ROWS: tl.constexpr, BLOCK_D: tl.constexpr):
    """A BLOCK_ROWS x BLOCK_D tile of a row-major (count x HEAD_DIM) array from row `first`, zeros outside."""
    rows = first + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_D)
    pointers = base + rows[:, None] * HEAD_DIM + cols[None, :]
    if BLOCK_D != HEAD_DIM:
        tile = tl.load(pointers, mask=(rows < count)[:, None] & (cols < HEAD_DIM)[None, :], other=0.0)
    else:  # a row mask alone stays constant along the contiguous dimension: the loads stay vectorised
        tile = tl.load(pointers, mask=(rows < count)[:, None], other=0.0)
    return tile


@triton.jit
def _key_block(acc, m_i, l_i, q, k_base, v_base, start_n, N, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
               BLOCK_N: tl.constexpr, PRECISION: tl.constexpr):
    """One block of keys folded into the running (acc, max, sum) of the online softmax (base-2 scores)."""
    k = _rows(k_base, start_n, N, HEAD_DIM, BLOCK_N, BLOCK_D)
    s = tl.dot(q, tl.trans(k), input_precision=PRECISION)
    keys = start_n + tl.arange(0, BLOCK_N)
    s = tl.where((keys < N)[None, :], s, float("-inf"))
    # Every block holds at least one real key, so m_new is finite and exp2(-inf - m_new) is a clean 0.
    m_new = tl.maximum(m_i, tl.max(s, 1))
    alpha = tl.exp2(m_i - m_new)
    p = tl.exp2(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    v = _rows(v_base, start_n, N, HEAD_DIM, BLOCK_N, BLOCK_D)
    acc = tl.dot(p, v, acc * alpha[:, None], input_precision=PRECISION)
    return acc, m_new, l_i


@triton.jit
def flash_forward(qkv, out, N, scale_log2, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, PRECISION: tl.constexpr):
    """O = softmax(Q K^T / sqrt(d)) V for one block of BLOCK_M query rows of one batch item."""
    blocks = tl.cdiv(N, BLOCK_M)
    pid = tl.program_id(0)
    item = (pid // blocks).to(tl.int64)  # int64: B*3*N*d may pass 2^31 elements
    start_m = (pid % blocks) * BLOCK_M
    q_base = qkv + item * (3 * N * HEAD_DIM)
    k_base = q_base + N * HEAD_DIM
    v_base = k_base + N * HEAD_DIM
    q = _rows(q_base, start_m, N, HEAD_DIM, BLOCK_M, BLOCK_D) * scale_log2
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for start_n in range(0, N, BLOCK_N):
        acc, m_i, l_i = _key_block(acc, m_i, l_i, q, k_base, v_base, start_n, N, HEAD_DIM, BLOCK_D, BLOCK_N,
                                   PRECISION)
    o = acc / l_i[:, None]
    rows = start_m + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_D)
    tl.store(out + item * (N * HEAD_DIM) + rows[:, None] * HEAD_DIM + cols[None, :], o,
             mask=(rows < N)[:, None] & (cols < HEAD_DIM)[None, :])


def launch(qkv, out, n: int, head_dim: int, batch: int, scale_log2: float, block_m: int, block_n: int,
           num_warps: int, num_stages: int, precision: str) -> None:
    """One pass: every query block of every item, on PyTorch's current stream."""
    block_d = max(16, triton.next_power_of_2(head_dim))
    grid = (batch * triton.cdiv(n, block_m),)
    flash_forward[grid](qkv, out, n, scale_log2, HEAD_DIM=head_dim, BLOCK_D=block_d, BLOCK_M=block_m,
                        BLOCK_N=block_n, PRECISION=precision, num_warps=num_warps, num_stages=num_stages)
