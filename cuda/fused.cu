// fused: report 004 §4.2.2 "Kernel Fusing and Tiling + Shared Memory". The five kernels of the
// baseline (QKDotAndScalar, RowMax, MinusMaxAndExp, RowSum, UpdateMiLiOi) fused into one kernel,
// with the Q, K, V and S tiles in shared memory. br = bc = 32; grid (B): ONE block of br threads per
// batch item loops over the K/V tiles j (outer) and the Q tiles i (inner), as the report does; thread
// tx owns query row i*br + tx. The running max m and sum l stay in global workspace arrays and O is
// accumulated (kept normalised) in global memory after every tile, as in the course's algorithm.
// Each thread loads whole rows (uncoalesced) and computes the rescale factors per element: later
// steps of the ladder fix those. d is the compile-time HEAD_DIM (-DHEAD_DIM=d from the registry), as
// in every later step, so the loops over d have constant bounds the compiler can unroll and each
// step up the ladder measures its own technique only.
// Constraints: any N >= 1 (K/V columns past N are zero-filled and masked to -inf; rows past N are
// skipped); d <= 253, so that 4*(3*32*d + 32*32) bytes of shared memory fit in 99 KB.
#include "common.cuh"

#ifndef HEAD_DIM
#error "compile with -DHEAD_DIM=d, 1 <= d <= 253"
#endif
static_assert(HEAD_DIM >= 1 && HEAD_DIM <= 253, "the Q, K, V and S tiles must fit 99 KB of shared memory");

#define BLOCK_ROWS 32  // br: query rows per tile = threads per block
#define BLOCK_COLS 32  // bc: K/V rows per tile

// Minimum 1 block per SM: with the block size alone, ptxas aims at an occupancy step and, for
// some d, spills a few loop-invariant values to reach it. Shared memory already limits these
// kernels to a few blocks per SM.
extern "C" __global__ void __launch_bounds__(BLOCK_ROWS, 1)
    flash_fused(const float* qkv, float* out, int N, float scale_log2, float* row_max,
                  float* row_sum) {
    extern __shared__ float smem[];
    float* q_tile = smem;                            // BLOCK_ROWS x HEAD_DIM
    float* k_tile = q_tile + BLOCK_ROWS * HEAD_DIM;  // BLOCK_COLS x HEAD_DIM
    float* v_tile = k_tile + BLOCK_COLS * HEAD_DIM;  // BLOCK_COLS x HEAD_DIM
    float* s_tile = v_tile + BLOCK_COLS * HEAD_DIM;  // BLOCK_ROWS x BLOCK_COLS

    const int b = blockIdx.x, tx = threadIdx.x;
    const float* q = qkv + qkv_item_offset(b, N, HEAD_DIM);
    const float* k = q + (size_t)N * HEAD_DIM;
    const float* v = k + (size_t)N * HEAD_DIM;
    float* o = out + out_item_offset(b, N, HEAD_DIM);
    float* m = row_max + (size_t)b * N;
    float* l = row_sum + (size_t)b * N;

    const int row_tiles = (N + BLOCK_ROWS - 1) / BLOCK_ROWS;
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

        for (int i = 0; i < row_tiles; ++i) {
            const int row = i * BLOCK_ROWS + tx;
            if (row >= N) continue;  // no barrier inside this loop, so idle threads may skip
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
