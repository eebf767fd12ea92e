// The row softmax over materialised scores, shared by the variants that write S = Q K^T to memory
// (gemm, gemmtc): kernels gemm_softmax_rows and gemm_softmax_rows_padded (rows of N rounded up to a
// multiple of 4), one warp per row, 8 rows per block (the host's grid is (cdiv(N, 8), B), block 256:
// attnbench/kernels/other_reports.py, _softmax_rows).
#pragma once

#include "common.cuh"

#define SOFTMAX_ROWS_PER_BLOCK 8  // one warp per row

// Online (m, l) update with four new scores at once: one rescale of the running sum per quad.
__device__ __forceinline__ void online_quad(float& m, float& l, float4 x) {
    const float m_new = fmaxf(m, fmaxf(fmaxf(x.x, x.y), fmaxf(x.z, x.w)));
    l = l * exp2f(m - m_new) + (exp2f(x.x - m_new) + exp2f(x.y - m_new)) +
        (exp2f(x.z - m_new) + exp2f(x.w - m_new));
    m = m_new;
}

// In-place softmax of one row of N scores (log2 units) by one warp: pass 1 keeps a running max and a
// running sum rescaled to it; the 32 lane pairs are merged by shuffles; pass 2 writes exp2(s - max) / sum.
// Columns N .. ld - 1 (a padded row's tail) are set to 0, so a GEMM may read the row as ld long.
__device__ __forceinline__ void softmax_row(float* __restrict__ s_row, int N, int ld) {
    const int lane = threadIdx.x & 31;
    // float4 over the whole quads, floats after them, only where every row of the matrix starts 16-byte
    // aligned (ld % 4 == 0): the summation order must not depend on where a chunk of the batch starts,
    // or the same row would round differently in the pipelined and the plain run.
    const int quads = (ld % 4 == 0 && is_aligned16(s_row)) ? N / 4 : 0;

    float m = ATTN_NEG_INF, l = 0.0f;
    const float4* s4 = reinterpret_cast<const float4*>(s_row);
    for (int c = lane; c < quads; c += 32) online_quad(m, l, s4[c]);
    for (int c = 4 * quads + lane; c < N; c += 32) {
        const float x = s_row[c];
        const float m_new = fmaxf(m, x);
        l = l * exp2f(m - m_new) + exp2f(x - m_new);
        m = m_new;
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float m_other = __shfl_xor_sync(0xffffffffu, m, offset);
        const float l_other = __shfl_xor_sync(0xffffffffu, l, offset);
        const float m_new = fmaxf(m, m_other);
        // Lanes that saw no element (N < 32) carry m = -inf: exp2f(-inf - -inf) would be NaN.
        l = (m_new == ATTN_NEG_INF) ? 0.0f : l * exp2f(m - m_new) + l_other * exp2f(m_other - m_new);
        m = m_new;
    }

    const float inv_sum = 1.0f / l;
    float4* w4 = reinterpret_cast<float4*>(s_row);
    for (int c = lane; c < quads; c += 32) {
        float4 x = w4[c];
        x.x = exp2f(x.x - m) * inv_sum;
        x.y = exp2f(x.y - m) * inv_sum;
        x.z = exp2f(x.z - m) * inv_sum;
        x.w = exp2f(x.w - m) * inv_sum;
        w4[c] = x;
    }
    for (int c = 4 * quads + lane; c < N; c += 32) s_row[c] = exp2f(s_row[c] - m) * inv_sum;
    for (int c = N + lane; c < ld; c += 32) s_row[c] = 0.0f;
}

// Row softmax of S (B x N x N, scores in log2 units). Grid (cdiv(N, 8), B), block 256, one warp per row.
extern "C" __global__ void __launch_bounds__(32 * SOFTMAX_ROWS_PER_BLOCK)
gemm_softmax_rows(float* __restrict__ S, int N) {
    const int row = blockIdx.x * SOFTMAX_ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= N) return;  // whole warp leaves together
    softmax_row(S + (size_t)blockIdx.y * N * N + (size_t)row * N, N, N);
}

// The same over S stored with rows of ld = N rounded up to a multiple of 4 (B x N x ld, gemmtc's padded
// path): the row tails become zeros. Grid (cdiv(N, 8), B), block 256.
extern "C" __global__ void __launch_bounds__(32 * SOFTMAX_ROWS_PER_BLOCK)
gemm_softmax_rows_padded(float* __restrict__ S, int N) {
    const int row = blockIdx.x * SOFTMAX_ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= N) return;
    const int ld = (N + 3) & ~3;
    softmax_row(S + (size_t)blockIdx.y * N * ld + (size_t)row * ld, N, ld);
}
