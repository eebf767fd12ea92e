// tiled: shared-memory tiled matrix products around a row softmax (report 002, "利用shared memory
//提升访存效率": the tiled_matmul_QKT / tiled_matmul_attention step, TILE_SIZE = 16).
//
// Three launches per pass, S = B*N*N floats of workspace:
//   tiled_qkt           S = scale * Q K^T; a TILE x TILE block of threads, one thread per S element,
//                       steps over d in TILE-wide slices of Q and K staged in shared memory.
//   tiled_softmax_rows  S = softmax(S) row by row: one warp per row, three passes (max, sum, write).
//   tiled_pv            O = S V, tiled the same way over the key axis.
// Constraints: any N >= 1, any d >= 1 (tail tiles are padded with zeros in shared memory, rows and
// columns past N or d are never written). All indexing into S uses size_t: B*N*N exceeds 2^31.
#include "common.cuh"

#define TILE 16
#define SOFTMAX_ROWS_PER_BLOCK 8  // one warp per row, 256 threads

// S[b] = scale * Q[b] K[b]^T. Grid (cdiv(N, TILE), cdiv(N, TILE), B), block (TILE, TILE).
extern "C" __global__ void __launch_bounds__(TILE * TILE)
tiled_qkt(const float* __restrict__ qkv, float* __restrict__ S, int N, int d, float scale) {
    __shared__ float q_tile[TILE][TILE];      // [query row][k]: read as a broadcast along a row
    __shared__ float k_tile[TILE][TILE + 1];  // [key row][k]: +1 so the 16 key rows hit 16 banks

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int b = blockIdx.z;
    const int query = blockIdx.y * TILE + ty;
    const int key = blockIdx.x * TILE + tx;
    const int key_loaded = blockIdx.x * TILE + ty;  // the key row this thread stages

    const float* Q = qkv + qkv_item_offset(b, N, d);
    const float* K = Q + (size_t)N * d;

    float acc = 0.0f;
    for (int k0 = 0; k0 < d; k0 += TILE) {
        const int k = k0 + tx;
        q_tile[ty][tx] = (query < N && k < d) ? Q[(size_t)query * d + k] : 0.0f;
        k_tile[ty][tx] = (key_loaded < N && k < d) ? K[(size_t)key_loaded * d + k] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk) acc = fmaf(q_tile[ty][kk], k_tile[tx][kk], acc);
        __syncthreads();
    }
    if (query < N && key < N) S[(size_t)b * N * N + (size_t)query * N + key] = acc * scale;
}

// In-place row softmax of S (already scaled). Grid (cdiv(N, 8), B), block 256: warp w of block x
// owns row 8x + w. Passes: row max, sum of exp(s - max), write exp(s - max) / sum.
extern "C" __global__ void __launch_bounds__(32 * SOFTMAX_ROWS_PER_BLOCK)
tiled_softmax_rows(float* __restrict__ S, int N) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * SOFTMAX_ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= N) return;  // whole warp leaves together
    float* s_row = S + (size_t)blockIdx.y * N * N + (size_t)row * N;

    float row_max = ATTN_NEG_INF;
    for (int c = lane; c < N; c += 32) row_max = fmaxf(row_max, s_row[c]);
    row_max = warp_reduce_max(row_max);

    float row_sum = 0.0f;
    for (int c = lane; c < N; c += 32) row_sum += expf(s_row[c] - row_max);
    row_sum = warp_reduce_sum(row_sum);

    const float inv_sum = 1.0f / row_sum;
    for (int c = lane; c < N; c += 32) s_row[c] = expf(s_row[c] - row_max) * inv_sum;
}

// O[b] = P[b] V[b] with P = the softmaxed S. Grid (cdiv(d, TILE), cdiv(N, TILE), B), block (TILE, TILE).
extern "C" __global__ void __launch_bounds__(TILE * TILE)
tiled_pv(const float* __restrict__ qkv, const float* __restrict__ S, float* __restrict__ out, int N, int d) {
    __shared__ float p_tile[TILE][TILE];  // [query row][key]: broadcast along a row
    __shared__ float v_tile[TILE][TILE];  // [key][column]: consecutive columns, no conflicts

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int b = blockIdx.z;
    const int query = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    const float* V = qkv + qkv_item_offset(b, N, d) + 2 * (size_t)N * d;
    const float* P = S + (size_t)b * N * N;

    float acc = 0.0f;
    for (int j0 = 0; j0 < N; j0 += TILE) {
        const int key_p = j0 + tx;  // the P column this thread stages
        const int key_v = j0 + ty;  // the V row this thread stages
        p_tile[ty][tx] = (query < N && key_p < N) ? P[(size_t)query * N + key_p] : 0.0f;
        v_tile[ty][tx] = (key_v < N && col < d) ? V[(size_t)key_v * d + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int jj = 0; jj < TILE; ++jj) acc = fmaf(p_tile[ty][jj], v_tile[jj][tx], acc);
        __syncthreads();
    }
    if (query < N && col < d) out[out_item_offset(b, N, d) + (size_t)query * d + col] = acc;
}
