// singlehead: one thread per query row, with an "unsafe" softmax (report 001, "Single head flash
// attention": N threads instead of Br, Bc = Br = 64, exp of the scaled score without subtracting
// the row max, O divided by the sum of exps at the end).
//
// Block of 64 threads = 64 query rows; grid (cdiv(N, 64), B). Each K/V tile of 64 rows is staged
// in shared memory by the whole block (coalesced: the tile is one contiguous run of 64*d floats),
// then every thread walks the tile's keys: p = expf(scale * q.k), sum += p, o += p * v, into fresh
// per-tile sums added to the totals after the tile. Query row, output row and the tile's partial
// output live in registers (HEAD_DIM floats each).
//
// Constraints: HEAD_DIM = d in [1, 64] (register arrays and two 64 x d shared tiles), any N >= 1.
// OVERFLOW LIMIT (by design, not clamped): expf overflows float32 once a scaled score exceeds
// ~88.7, and the sum overflows once N * exp(max score) > 3.4e38; the result is then Inf/NaN, and
// verification reports it. For inputs in [-3, 3] the largest score is 9 * d / sqrt(d) = 9 sqrt(d):
// 50.9 for d = 32 and 72 for d = 64 (safe for N up to ~1e7), overflowing from about d = 96 up.
#include "common.cuh"

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#define ROWS_PER_BLOCK 64  // Br = Bc: threads per block and keys per tile

extern "C" __global__ void __launch_bounds__(ROWS_PER_BLOCK)
singlehead_attention(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    __shared__ __align__(16) float k_tile[ROWS_PER_BLOCK][HEAD_DIM];
    __shared__ __align__(16) float v_tile[ROWS_PER_BLOCK][HEAD_DIM];

    const int tid = threadIdx.x;
    const int b = blockIdx.y;
    const int query = blockIdx.x * ROWS_PER_BLOCK + tid;
    const bool has_row = query < N;

    const float* Q = qkv + qkv_item_offset(b, N, HEAD_DIM);
    const float* K = Q + (size_t)N * HEAD_DIM;
    const float* V = K + (size_t)N * HEAD_DIM;

    float q[HEAD_DIM], o[HEAD_DIM];
#pragma unroll
    for (int k = 0; k < HEAD_DIM; ++k) {
        q[k] = has_row ? Q[(size_t)query * HEAD_DIM + k] : 0.0f;
        o[k] = 0.0f;
    }
    float sum_exp = 0.0f;

    for (int tile = 0; tile < N; tile += ROWS_PER_BLOCK) {
        // Element e of the tile is key tile + e / HEAD_DIM, column e % HEAD_DIM: contiguous in memory.
        const size_t tile_base = (size_t)tile * HEAD_DIM;
        const int tile_elems = min(ROWS_PER_BLOCK, N - tile) * HEAD_DIM;
        float* k_flat = &k_tile[0][0];
        float* v_flat = &v_tile[0][0];
#pragma unroll 4
        for (int e = tid; e < ROWS_PER_BLOCK * HEAD_DIM; e += ROWS_PER_BLOCK) {
            k_flat[e] = e < tile_elems ? K[tile_base + e] : 0.0f;
            v_flat[e] = e < tile_elems ? V[tile_base + e] : 0.0f;
        }
        __syncthreads();

        const int keys = min(ROWS_PER_BLOCK, N - tile);  // keys past N are skipped, not masked
        // Each tile's sums start fresh and are then added to the running totals: a two-level sum
        // keeps float32 rounding near sqrt(64) + sqrt(N/64) additions deep instead of sqrt(N).
        float tile_sum = 0.0f, tile_o[HEAD_DIM];
#pragma unroll
        for (int k = 0; k < HEAD_DIM; ++k) tile_o[k] = 0.0f;
        for (int j = 0; j < keys; ++j) {
            // Four partial sums shorten the dependent FMA chain of the dot product.
            float dot[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int k = 0; k < HEAD_DIM; ++k) dot[k & 3] = fmaf(q[k], k_tile[j][k], dot[k & 3]);
            const float p = expf(((dot[0] + dot[1]) + (dot[2] + dot[3])) * scale);  // no max subtracted
            tile_sum += p;
#pragma unroll
            for (int k = 0; k < HEAD_DIM; ++k) tile_o[k] = fmaf(p, v_tile[j][k], tile_o[k]);
        }
        sum_exp += tile_sum;
#pragma unroll
        for (int k = 0; k < HEAD_DIM; ++k) o[k] += tile_o[k];
        __syncthreads();
    }

    if (has_row) {
        float* o_row = out + out_item_offset(b, N, HEAD_DIM) + (size_t)query * HEAD_DIM;
#pragma unroll
        for (int k = 0; k < HEAD_DIM; ++k) o_row[k] = o[k] / sum_exp;
    }
}
