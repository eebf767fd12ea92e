// gemm: attention as two register-tiled SGEMMs around an online-softmax row kernel
// (report 000, final design: "Sgemm乘法计算优化" steps (1)-(8) and "Softmax和Scale优化").
//
// What this adds over the shared-memory tiled version:
//   - register tiling: each of 256 threads computes a TM x TM block of results (8x8 with 128x128
//     tiles, 4x4 with 64x64 tiles), so every shared-memory load feeds TM FMAs;
//   - float4 global and shared loads, with a scalar fallback when a row is not 16-byte aligned
//     (d or N not a multiple of 4);
//   - implicit transposes: K is read as K^T, and Q and P as column-major tiles, through the
//     indexing while staging into shared memory (no transpose pass);
//   - shared-memory rows padded by 4 floats against bank conflicts on the transposing stores;
//   - double buffering of the shared tiles (prefetch the next k-tile into registers while the
//     current one is consumed) for large reduction lengths, chosen by the host (report: > 4000);
//   - the softmax scale folded into the QK^T write-back (as log2(e)/sqrt(d), so softmax uses exp2f);
//   - an online-softmax row kernel (softmax_rows.cuh): one pass for running max and sum, one pass
//     to normalise.
// Launches: gemm_qkt, gemm_softmax_rows, gemm_pv; workspace S = B*N*N floats.
// Constraints: any N >= 1, any d >= 1. Compile-time choices (host picks them per shape):
//   QK_TILE, PV_TILE in {64, 128}; QK_DOUBLE_BUFFER, PV_DOUBLE_BUFFER in {0, 1}.
#include "common.cuh"
#include "softmax_rows.cuh"  // gemm_softmax_rows

#ifndef QK_TILE
#define QK_TILE 128
#endif
#ifndef PV_TILE
#define PV_TILE 128
#endif
#ifndef QK_DOUBLE_BUFFER
#define QK_DOUBLE_BUFFER 0
#endif
#ifndef PV_DOUBLE_BUFFER
#define PV_DOUBLE_BUFFER 0
#endif

#define GEMM_THREADS 256

// Four consecutive elements p[0..3] of a row whose first `cols - col` entries from p are valid;
// zeros outside the matrix (row_inside false, or past cols). `vec`: the row is 16-byte aligned and
// cols % 4 == 0, so a quad starting at a multiple of 4 is either wholly inside or wholly outside.
__device__ __forceinline__ float4 load_quad(const float* __restrict__ p, bool row_inside, int col,
                                            int cols, bool vec) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row_inside) {
        if (vec) {
            if (col < cols) v = __ldg(reinterpret_cast<const float4*>(p));
        } else {
            if (col < cols) v.x = __ldg(p);
            if (col + 1 < cols) v.y = __ldg(p + 1);
            if (col + 2 < cols) v.z = __ldg(p + 2);
            if (col + 3 < cols) v.w = __ldg(p + 3);
        }
    }
    return v;
}

// One TILE x TILE block of C = alpha * A op(B), A is M x K row-major; op(B) is K x Ncols, stored
// either as Ncols x K rows (B_IS_TRANSPOSED: the K of Q K^T) or as K x Ncols rows (V).
// 256 threads as 16 x 16; thread (ty, tx) owns rows {g*64 + ty*4 + 0..3} and columns
// {g*64 + tx*4 + 0..3} for g < TM/4, so the float4 fragment reads of a warp are contiguous.
template <int TILE, bool B_IS_TRANSPOSED, bool DOUBLE_BUFFER>
__device__ __forceinline__ void sgemm_tile(const float* __restrict__ A, int lda, bool a_vec,
                                           const float* __restrict__ B, int ldb, bool b_vec,
                                           float* __restrict__ C, int ldc, bool c_vec,
                                           int M, int Ncols, int K, float alpha) {
    constexpr int BK = 1024 / TILE;  // each thread stages exactly one float4 of A and one of B
    constexpr int TM = TILE / 16;    // results per thread along each axis
    constexpr int GROUPS = TM / 4;   // float4 groups per axis, 64 apart
    constexpr int LD = TILE + 4;     // padded row: transposing stores spread over all banks
    constexpr int STAGES = DOUBLE_BUFFER ? 2 : 1;
    __shared__ __align__(16) float a_smem[STAGES][BK][LD];  // [k][m]: A tile, transposed
    __shared__ __align__(16) float b_smem[STAGES][BK][LD];  // [k][n]

    const int tid = threadIdx.x;
    const int tx = tid & 15, ty = tid >> 4;
    const int block_row = blockIdx.y * TILE, block_col = blockIdx.x * TILE;

    // Staging coordinates. Rows along k (A, and B when transposed): BK/4 quads per row.
    const int rowwise_r = tid / (BK / 4), rowwise_k = (tid % (BK / 4)) * 4;
    // B stored K x Ncols: TILE/4 quads per k row.
    const int colwise_k = tid / (TILE / 4), colwise_n = (tid % (TILE / 4)) * 4;

    float acc[TM][TM];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TM; ++j) acc[i][j] = 0.0f;

    // Per-thread staging sources, fixed for the whole k loop. Rows of A past M (and rows of a
    // transposed B past Ncols) are clamped to the last row: they only feed results that are never
    // written back. Along k, everything past K is zero-filled, since it would enter every sum.
    const float* a_src = A + (size_t)min(block_row + rowwise_r, M - 1) * lda + rowwise_k;
    const float* b_src = B_IS_TRANSPOSED
                             ? B + (size_t)min(block_col + rowwise_r, Ncols - 1) * ldb + rowwise_k
                             : B + (size_t)colwise_k * ldb + block_col + colwise_n;
    const size_t b_step = B_IS_TRANSPOSED ? BK : (size_t)BK * ldb;  // b_src advance per k-tile

    // Stage the k-tile starting at k0 into registers and advance the sources to the next one.
    float4 a_stage, b_stage;
    auto fetch = [&](int k0) {
        a_stage = load_quad(a_src, true, k0 + rowwise_k, K, a_vec);
        if constexpr (B_IS_TRANSPOSED)
            b_stage = load_quad(b_src, true, k0 + rowwise_k, K, b_vec);
        else
            b_stage = load_quad(b_src, k0 + colwise_k < K, block_col + colwise_n, Ncols, b_vec);
        a_src += BK;
        b_src += b_step;
    };
    auto store = [&](int stage) {
        a_smem[stage][rowwise_k + 0][rowwise_r] = a_stage.x;
        a_smem[stage][rowwise_k + 1][rowwise_r] = a_stage.y;
        a_smem[stage][rowwise_k + 2][rowwise_r] = a_stage.z;
        a_smem[stage][rowwise_k + 3][rowwise_r] = a_stage.w;
        if constexpr (B_IS_TRANSPOSED) {
            b_smem[stage][rowwise_k + 0][rowwise_r] = b_stage.x;
            b_smem[stage][rowwise_k + 1][rowwise_r] = b_stage.y;
            b_smem[stage][rowwise_k + 2][rowwise_r] = b_stage.z;
            b_smem[stage][rowwise_k + 3][rowwise_r] = b_stage.w;
        } else {
            *reinterpret_cast<float4*>(&b_smem[stage][colwise_k][colwise_n]) = b_stage;
        }
    };
    auto compute = [&](int stage) {
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a_frag[TM], b_frag[TM];
#pragma unroll
            for (int g = 0; g < GROUPS; ++g) {
                const float4 a4 = *reinterpret_cast<const float4*>(&a_smem[stage][kk][g * 64 + ty * 4]);
                const float4 b4 = *reinterpret_cast<const float4*>(&b_smem[stage][kk][g * 64 + tx * 4]);
                a_frag[g * 4 + 0] = a4.x; a_frag[g * 4 + 1] = a4.y;
                a_frag[g * 4 + 2] = a4.z; a_frag[g * 4 + 3] = a4.w;
                b_frag[g * 4 + 0] = b4.x; b_frag[g * 4 + 1] = b4.y;
                b_frag[g * 4 + 2] = b4.z; b_frag[g * 4 + 3] = b4.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TM; ++j) acc[i][j] = fmaf(a_frag[i], b_frag[j], acc[i][j]);
        }
    };

    const int k_tiles = (K + BK - 1) / BK;
    if constexpr (DOUBLE_BUFFER) {
        // One barrier per k-tile: the buffer written in iteration t was last read in t-1.
        fetch(0);
        store(0);
        __syncthreads();
        for (int t = 0; t < k_tiles; ++t) {
            const int stage = t & 1;
            const bool more = t + 1 < k_tiles;
            if (more) fetch((t + 1) * BK);  // global loads in flight during the FMAs below
            compute(stage);
            if (more) store(stage ^ 1);
            __syncthreads();
        }
    } else {
        for (int t = 0; t < k_tiles; ++t) {
            fetch(t * BK);
            store(0);
            __syncthreads();
            compute(0);
            __syncthreads();
        }
    }

    // Write-back with alpha (the softmax scale for Q K^T) folded in.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = block_row + (i / 4) * 64 + ty * 4 + (i % 4);
        if (row >= M) continue;
        float* c_row = C + (size_t)row * ldc;
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
            const int col = block_col + g * 64 + tx * 4;
            const float4 r = make_float4(alpha * acc[i][g * 4 + 0], alpha * acc[i][g * 4 + 1],
                                         alpha * acc[i][g * 4 + 2], alpha * acc[i][g * 4 + 3]);
            if (c_vec) {
                if (col < Ncols) *reinterpret_cast<float4*>(c_row + col) = r;
            } else {
                if (col < Ncols) c_row[col] = r.x;
                if (col + 1 < Ncols) c_row[col + 1] = r.y;
                if (col + 2 < Ncols) c_row[col + 2] = r.z;
                if (col + 3 < Ncols) c_row[col + 3] = r.w;
            }
        }
    }
}

// S[b] = (log2(e)/sqrt(d)) * Q K^T. Grid (cdiv(N, QK_TILE), cdiv(N, QK_TILE), B), block 256.
extern "C" __global__ void __launch_bounds__(GEMM_THREADS, 2)
gemm_qkt(const float* __restrict__ qkv, float* __restrict__ S, int N, int d, float scale_log2) {
    const int b = blockIdx.z;
    const float* Q = qkv + qkv_item_offset(b, N, d);
    const float* K = Q + (size_t)N * d;
    float* S_item = S + (size_t)b * N * N;
    const bool qk_vec = (d % 4 == 0) && is_aligned16(Q) && is_aligned16(K);
    const bool s_vec = (N % 4 == 0) && is_aligned16(S_item);
    sgemm_tile<QK_TILE, true, QK_DOUBLE_BUFFER != 0>(Q, d, qk_vec, K, d, qk_vec, S_item, N, s_vec,
                                                     N, N, d, scale_log2);
}

// O[b] = P[b] V[b]. Grid (cdiv(d, PV_TILE), cdiv(N, PV_TILE), B), block 256.
extern "C" __global__ void __launch_bounds__(GEMM_THREADS, 2)
gemm_pv(const float* __restrict__ qkv, const float* __restrict__ S, float* __restrict__ out, int N, int d) {
    const int b = blockIdx.z;
    const float* V = qkv + qkv_item_offset(b, N, d) + 2 * (size_t)N * d;
    const float* P = S + (size_t)b * N * N;
    float* O = out + out_item_offset(b, N, d);
    const bool p_vec = (N % 4 == 0) && is_aligned16(P);
    const bool v_vec = (d % 4 == 0) && is_aligned16(V);
    const bool o_vec = (d % 4 == 0) && is_aligned16(O);
    sgemm_tile<PV_TILE, false, PV_DOUBLE_BUFFER != 0>(P, N, p_vec, V, d, v_vec, O, d, o_vec,
                                                      N, d, N, 1.0f);
}
