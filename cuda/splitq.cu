// splitq: report 004 §4.2.4 "Split Tiles of Q into Blocks". The kernel of §4.2.3 (maxsmem.cu) with
// the Q-tile loop moved onto the grid: grid (ceil(N/br), B), each block owns ONE Q tile i and loops
// over the K/V tiles j, so all SMs get work even for a small batch. br = 128 threads per block,
// thread tx owns query row i*br + tx; bc = BLOCK_COLS as in maxsmem (16 for d = 64, 32 for d = 32).
// Both bc and d (HEAD_DIM) are compile-time defines from the registry, as in the steps before and
// after. Otherwise unchanged: Q_i is still (re)loaded inside the K/V loop, as in the report's sketch;
// m and l live in global workspace arrays (registers only from §4.2.8 on); O is kept normalised in
// global memory after every tile; scalar, per-row (uncoalesced) loads.
// Constraints: any N >= 1 (K/V columns past N are zero-filled and masked to -inf; rows past N compute
// nothing but still take part in the loads and barriers); d <= 86, as for maxsmem (bc >= 4).
#include "common.cuh"

#ifndef HEAD_DIM
#error "compile with -DHEAD_DIM=d, 1 <= d <= 86"
#endif
static_assert(HEAD_DIM >= 1 && HEAD_DIM <= 86, "bc >= 4 keeps float32 accuracy only up to d = 86");

#define BLOCK_ROWS 128  // br: query rows per tile = threads per block
#ifndef BLOCK_COLS
#define BLOCK_COLS 16  // bc: K/V rows per tile; the registry passes it (16 is the d = 64 value)
#endif
static_assert(BLOCK_COLS >= 1 && BLOCK_COLS <= BLOCK_ROWS, "K/V tile rows are loaded one per thread");

// Minimum 1 block per SM: with the block size alone, ptxas aims at an occupancy step and, for
// some d, spills a few loop-invariant values to reach it. Shared memory already limits these
// kernels to a few blocks per SM.
extern "C" __global__ void __launch_bounds__(BLOCK_ROWS, 1)
    flash_splitq(const float* qkv, float* out, int N, float scale_log2, float* row_max,
                  float* row_sum) {
    extern __shared__ float smem[];
    float* q_tile = smem;                            // BLOCK_ROWS x HEAD_DIM
    float* k_tile = q_tile + BLOCK_ROWS * HEAD_DIM;  // BLOCK_COLS x HEAD_DIM
    float* v_tile = k_tile + BLOCK_COLS * HEAD_DIM;  // BLOCK_COLS x HEAD_DIM
    float* s_tile = v_tile + BLOCK_COLS * HEAD_DIM;  // BLOCK_ROWS x BLOCK_COLS

    const int b = blockIdx.y, tx = threadIdx.x;
    const float* q = qkv + qkv_item_offset(b, N, HEAD_DIM);
    const float* k = q + (size_t)N * HEAD_DIM;
    const float* v = k + (size_t)N * HEAD_DIM;
    float* o = out + out_item_offset(b, N, HEAD_DIM);
    float* m = row_max + (size_t)b * N;
    float* l = row_sum + (size_t)b * N;

    const int i = blockIdx.x;  // this block's Q tile
    const int row = i * BLOCK_ROWS + tx;
    const int col_tiles = (N + BLOCK_COLS - 1) / BLOCK_COLS;
    for (int j = 0; j < col_tiles; ++j) {
        const int col0 = j * BLOCK_COLS;
        // Load K_j, V_j: thread tx loads row tx. Rows past N become zeros, so the full-width loops
        // below never touch uninitialised shared memory.
        if (tx < BLOCK_COLS) {
            const bool in_range = col0 + tx < N;
            for (int x = 0; x < HEAD_DIM; ++x) {
                k_tile[tx * HEAD_DIM + x] = in_range ? k[(size_t)(col0 + tx) * HEAD_DIM + x] : 0.0f;
                v_tile[tx * HEAD_DIM + x] = in_range ? v[(size_t)(col0 + tx) * HEAD_DIM + x] : 0.0f;
            }
        }
        __syncthreads();

        if (row < N) {
            // Load Q_i: each thread its own row.
            for (int x = 0; x < HEAD_DIM; ++x) q_tile[tx * HEAD_DIM + x] = q[(size_t)row * HEAD_DIM + x];

            // QKDotAndScalar + RowMax. Scores are in the log2 domain (times log2(e)/sqrt(d)).
            // Column col0 < N always, so tile_max is finite and the update below never sees -inf - -inf.
            // Unrolling these y loops by 4, not fully, keeps register use low for every tile width
            // (full unrolling made ptxas spill on sm_80).
            float tile_max = ATTN_NEG_INF;
#pragma unroll 4
            for (int y = 0; y < BLOCK_COLS; ++y) {
                float dot = 0.0f;
                for (int x = 0; x < HEAD_DIM; ++x) dot += q_tile[tx * HEAD_DIM + x] * k_tile[y * HEAD_DIM + x];
                const float s = col0 + y < N ? dot * scale_log2 : ATTN_NEG_INF;
                s_tile[tx * BLOCK_COLS + y] = s;
                tile_max = fmaxf(tile_max, s);
            }

            // MinusMaxAndExp + RowSum.
            float tile_sum = 0.0f;
            for (int y = 0; y < BLOCK_COLS; ++y) {
                const float p = exp2f(s_tile[tx * BLOCK_COLS + y] - tile_max);
                s_tile[tx * BLOCK_COLS + y] = p;
                tile_sum += p;
            }

            // UpdateMiLiOi. Tile 0 starts from m = -inf, l = 0, O = 0 without reading the buffers.
            const float m_old = j == 0 ? ATTN_NEG_INF : m[row];
            const float l_old = j == 0 ? 0.0f : l[row];
            const float m_new = fmaxf(m_old, tile_max);
            const float l_new = exp2f(m_old - m_new) * l_old + exp2f(tile_max - m_new) * tile_sum;
            for (int x = 0; x < HEAD_DIM; ++x) {
                float pv = 0.0f;
#pragma unroll 4
                for (int y = 0; y < BLOCK_COLS; ++y) pv += s_tile[tx * BLOCK_COLS + y] * v_tile[y * HEAD_DIM + x];
                const size_t o_index = (size_t)row * HEAD_DIM + x;
                const float o_old = j == 0 ? 0.0f : o[o_index];
                o[o_index] = (l_old * exp2f(m_old - m_new) * o_old + exp2f(tile_max - m_new) * pv) / l_new;
            }
            m[row] = m_new;
            l[row] = l_new;
        }
        __syncthreads();  // everyone is done with K_j, V_j before the next tile overwrites them
    }
}
