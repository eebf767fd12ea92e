// gemmtc: attention as two exact GEMMs on tensor cores (3xTF32) around gemm's row softmax, for the
// square-attention lab (Q, K, V all n x n) and large head dims.
//
// Technique: the gemm variant's plan (report 000: S = scale * Q K^T materialised, a row softmax,
// O = P V) with both GEMMs moved from FFMA to mma.sync.m16n8k8 tf32 in 3xTF32: every operand is
// split in registers, after its fragment load, into x = big + small (big = x rounded to TF32), and
// small*big + big*small + big*big are summed (small*small dropped). No BLAS.
//   - Block tile TILE x TILE (QK_TILE, PV_TILE in {64, 128}, chosen by the host per shape):
//     128: 8 warps as 2 x 4, each a 64 x 32 warp tile (4 x 4 mma tiles);
//     64:  4 warps as 2 x 2, each a 32 x 32 warp tile (2 x 4 mma tiles).
//   - k-tiles of 32 stream through a 3-stage cp.async ring in shared memory (16-byte copies where a
//     row is 16-byte aligned, 4-byte copies otherwise: since the padded path below, only a pointer the
//     caller misaligned takes them), zero-filled past every edge (rows past M or Ncols, k past K), one
//     barrier per k-tile.
//   - Shared rows are padded so that the scalar fragment loads of a warp hit 32 distinct banks:
//     [row][k] tiles (Q, K, P) by 4 floats (a0 = (g, t) -> bank 4g + t), the [k][n] tile of V by 8
//     (b0 = (k = t, n = g) -> bank 8t + g).
//   - Accuracy (the 3xTF32 rule: the tensor core truncates as it accumulates): each k-tile's 12 mma
//     (4 k-steps x 3 products) go into a fresh accumulator, which is then added into an FP32 one, so no
//     tensor-core sum runs longer than one k-tile, whatever K (d for Q K^T, N for P V).
//   - The softmax scale is folded into the Q K^T write-back as log2(e)/sqrt(d) for exp2f, and the row
//     softmax is gemm's own kernel (softmax_rows.cuh).
// Launches, N and d multiples of 4: gemmtc_qkt, gemm_softmax_rows, gemmtc_pv; workspace S = B*N*N floats.
// Otherwise the padded path (end of file): rows padded to multiples of 4 by a pre-pass (4-byte copies made
// odd n 0.83-0.97x PyTorch's math backend on an H200).
// Constraints: any N >= 1 (N <= 65536: S in memory), any d >= 1. sm_80 PTX only (mma.sync tf32,
// cp.async): builds for sm_80, sm_86 and sm_90 alike.
#include <cstdint>

#include "common.cuh"
#include "softmax_rows.cuh"  // gemm_softmax_rows
#include "tf32_mma.cuh"      // split_tf32, mma_tf32, cp.async

#ifndef QK_TILE
#define QK_TILE 128
#endif
#ifndef PV_TILE
#define PV_TILE 128
#endif
#if (QK_TILE != 64 && QK_TILE != 128) || (PV_TILE != 64 && PV_TILE != 128)
#error "gemmtc.cu needs QK_TILE and PV_TILE in {64, 128}"
#endif

namespace {

constexpr int kBK = 32;                 // k per shared-memory stage
constexpr int kStages = 3;              // cp.async ring depth
constexpr int kKSteps = kBK / 8;        // mma k-steps per stage
constexpr int kRowStride = kBK + 4;     // [row][k] tiles: 36 = 4 (mod 32)

// The traits of one GEMM: C (M x Ncols) = alpha * A (M x K, row-major) op(B), where B is stored as
// Ncols x K rows (kBRowsAreN: the K of Q K^T) or as K x Ncols rows (V).
template <int kTile, bool kBRowsAreN>
struct GemmTraits {
    static constexpr int kWarpsM = 2;
    static constexpr int kWarpsN = kTile / 32;
    static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
    static constexpr int kWarpRows = kTile / kWarpsM;     // 64 or 32
    static constexpr int kWarpCols = kTile / kWarpsN;     // 32
    static constexpr int kFragsM = kWarpRows / 16;        // mma tiles along M per warp
    static constexpr int kFragsN = kWarpCols / 8;         // mma tiles along N per warp
    static constexpr int kColStride = kTile + 8;          // [k][n] tile of V: 136 or 72 = 8 (mod 32)
    static constexpr int kAFloats = kTile * kRowStride;
    static constexpr int kBFloats = kBRowsAreN ? kTile * kRowStride : kBK * kColStride;
    static constexpr int kStageFloats = kAFloats + kBFloats;
    static_assert(kTile * kBK % (4 * kThreads) == 0, "whole 16-byte copies per thread: 4 per operand");
};

// Rows [r0, r0 + kRows) x columns [c0, c0 + kCols) of a row-major matrix (rows x cols, leading
// dimension ld) into a shared tile with row stride kStride; everything outside the matrix becomes 0.
// `vec`: ld and cols are multiples of 4 and the matrix is 16-byte aligned, so each 4-float chunk is
// wholly inside or wholly outside. Invalid copies read nothing; their source is the (valid) base.
template <int kRows, int kCols, int kStride, int kThreads>
__device__ __forceinline__ void load_tile_async(float* tile, const float* __restrict__ m, int ld, int rows,
                                                int cols, int r0, int c0, bool vec) {
    const int tid = static_cast<int>(threadIdx.x);
    if (vec) {
        constexpr int kChunksPerRow = kCols / 4;
#pragma unroll
        for (int i = 0; i < kRows * kChunksPerRow / kThreads; ++i) {
            const int chunk = i * kThreads + tid;
            const int r = chunk / kChunksPerRow, c = (chunk % kChunksPerRow) * 4;
            const bool valid = r0 + r < rows && c0 + c < cols;
            const float* src = valid ? m + static_cast<size_t>(r0 + r) * ld + (c0 + c) : m;
            cp_async_16(tile + r * kStride + c, src, valid);
        }
    } else {
#pragma unroll
        for (int i = 0; i < kRows * kCols / kThreads; ++i) {
            const int e = i * kThreads + tid;
            const int r = e / kCols, c = e % kCols;  // a warp reads 32 consecutive floats of a row
            const bool valid = r0 + r < rows && c0 + c < cols;
            const float* src = valid ? m + static_cast<size_t>(r0 + r) * ld + (c0 + c) : m;
            cp_async_4(tile + r * kStride + c, src, valid);
        }
    }
}

// C (M x c_cols of it) = alpha * A op(B), K the shared dimension; Ncols bounds B's rows or columns, which
// may run past c_cols when B is zero-padded to a multiple of 4 (gemmtc's padded path).
template <int kTile, bool kBRowsAreN>
__device__ __forceinline__ void gemm_3xtf32(const float* __restrict__ A, int lda, const float* __restrict__ B,
                                            int ldb, float* __restrict__ C, int ldc, int M, int Ncols, int K,
                                            float alpha, int c_cols) {
    using T = GemmTraits<kTile, kBRowsAreN>;
    extern __shared__ float4 smem_f4[];  // float4: every cp.async target 16-byte aligned
    float* const smem = reinterpret_cast<float*>(smem_f4);

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;  // fragment row group, thread in quad
    const int warp_m = warp / T::kWarpsN, warp_n = warp % T::kWarpsN;
    const int m0 = blockIdx.y * kTile, n0 = blockIdx.x * kTile;
    const bool a_vec = lda % 4 == 0 && K % 4 == 0 && is_aligned16(A);
    const bool b_vec = ldb % 4 == 0 && (kBRowsAreN ? K : Ncols) % 4 == 0 && is_aligned16(B);

    // Stage s of the ring: A tile [kTile][kRowStride], then the B tile.
    auto load_stage = [&](int stage, int k0) {
        float* const As = smem + stage * T::kStageFloats;
        float* const Bs = As + T::kAFloats;
        load_tile_async<kTile, kBK, kRowStride, T::kThreads>(As, A, lda, M, K, m0, k0, a_vec);
        if constexpr (kBRowsAreN)
            load_tile_async<kTile, kBK, kRowStride, T::kThreads>(Bs, B, ldb, Ncols, K, n0, k0, b_vec);
        else
            load_tile_async<kBK, kTile, T::kColStride, T::kThreads>(Bs, B, ldb, K, Ncols, k0, n0, b_vec);
    };

    float acc[T::kFragsM][T::kFragsN][4];  // FP32 accumulators, C fragment layout
#pragma unroll
    for (int i = 0; i < T::kFragsM; ++i)
#pragma unroll
        for (int j = 0; j < T::kFragsN; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

    const int k_tiles = (K + kBK - 1) / kBK;
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
        if (s < k_tiles) load_stage(s, s * kBK);
        cp_async_commit();  // possibly empty: group j always holds k-tile j
    }

    for (int kt = 0; kt < k_tiles; ++kt) {
        // k-tile kt has landed (this thread's copies); the barrier makes everyone's visible and
        // ensures every warp is done with k-tile kt - 1, whose stage the prefetch below refills.
        cp_async_wait<kStages - 2>();
        __syncthreads();
        const int next = kt + kStages - 1;
        if (next < k_tiles) load_stage(next % kStages, next * kBK);
        cp_async_commit();

        const float* const As = smem + (kt % kStages) * T::kStageFloats;
        const float* const Bs = As + T::kAFloats;
        float fresh[T::kFragsM][T::kFragsN][4];  // this k-tile's products only (the accuracy rule)
#pragma unroll
        for (int i = 0; i < T::kFragsM; ++i)
#pragma unroll
            for (int j = 0; j < T::kFragsN; ++j)
                fresh[i][j][0] = fresh[i][j][1] = fresh[i][j][2] = fresh[i][j][3] = 0.0f;

#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
            // A fragments: a0 = (g, t), a1 = (g + 8, t), a2 = (g, t + 4), a3 = (g + 8, t + 4).
            uint32_t a_big[T::kFragsM][4], a_small[T::kFragsM][4];
#pragma unroll
            for (int i = 0; i < T::kFragsM; ++i) {
                const float* const p = As + (warp_m * T::kWarpRows + i * 16 + g) * kRowStride + ks * 8 + t;
                split_tf32(p[0], a_big[i][0], a_small[i][0]);
                split_tf32(p[8 * kRowStride], a_big[i][1], a_small[i][1]);
                split_tf32(p[4], a_big[i][2], a_small[i][2]);
                split_tf32(p[8 * kRowStride + 4], a_big[i][3], a_small[i][3]);
            }
            // B fragments: b0 = (k = t, n = g), b1 = (k = t + 4, n = g).
            uint32_t b_big[T::kFragsN][2], b_small[T::kFragsN][2];
#pragma unroll
            for (int j = 0; j < T::kFragsN; ++j) {
                const int n = warp_n * T::kWarpCols + j * 8 + g;
                if constexpr (kBRowsAreN) {
                    const float* const p = Bs + n * kRowStride + ks * 8 + t;
                    split_tf32(p[0], b_big[j][0], b_small[j][0]);
                    split_tf32(p[4], b_big[j][1], b_small[j][1]);
                } else {
                    const float* const p = Bs + (ks * 8 + t) * T::kColStride + n;
                    split_tf32(p[0], b_big[j][0], b_small[j][0]);
                    split_tf32(p[4 * T::kColStride], b_big[j][1], b_small[j][1]);
                }
            }
            // Per accumulator: the small cross terms first, then big * big.
#pragma unroll
            for (int i = 0; i < T::kFragsM; ++i)
#pragma unroll
                for (int j = 0; j < T::kFragsN; ++j) mma_tf32(fresh[i][j], a_small[i], b_big[j][0], b_big[j][1]);
#pragma unroll
            for (int i = 0; i < T::kFragsM; ++i)
#pragma unroll
                for (int j = 0; j < T::kFragsN; ++j) mma_tf32(fresh[i][j], a_big[i], b_small[j][0], b_small[j][1]);
#pragma unroll
            for (int i = 0; i < T::kFragsM; ++i)
#pragma unroll
                for (int j = 0; j < T::kFragsN; ++j) mma_tf32(fresh[i][j], a_big[i], b_big[j][0], b_big[j][1]);
        }
#pragma unroll
        for (int i = 0; i < T::kFragsM; ++i)
#pragma unroll
            for (int j = 0; j < T::kFragsN; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[i][j][e] += fresh[i][j][e];
    }
    cp_async_wait<0>();  // only empty groups can remain; leave none behind

    // Write-back, alpha folded in. C fragment: c0 = (g, 2t), c1 = (g, 2t + 1), c2 = (g + 8, 2t), c3 = (g + 8, 2t + 1).
    const bool c_pairs = ldc % 2 == 0 && (reinterpret_cast<size_t>(C) & 7) == 0;  // float2 stores at even columns
#pragma unroll
    for (int i = 0; i < T::kFragsM; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + warp_m * T::kWarpRows + i * 16 + h * 8 + g;
            if (row >= M) continue;
            float* const c_row = C + static_cast<size_t>(row) * ldc;
#pragma unroll
            for (int j = 0; j < T::kFragsN; ++j) {
                const int col = n0 + warp_n * T::kWarpCols + j * 8 + 2 * t;
                const float v0 = alpha * acc[i][j][2 * h], v1 = alpha * acc[i][j][2 * h + 1];
                if (c_pairs && col + 1 < c_cols) {
                    *reinterpret_cast<float2*>(c_row + col) = make_float2(v0, v1);
                } else {
                    if (col < c_cols) c_row[col] = v0;
                    if (col + 1 < c_cols) c_row[col + 1] = v1;
                }
            }
        }
    }
}

using QkTraits = GemmTraits<QK_TILE, true>;
using PvTraits = GemmTraits<PV_TILE, false>;

}  // namespace

// S[b] = (log2(e)/sqrt(d)) * Q K^T. Grid (cdiv(N, QK_TILE), cdiv(N, QK_TILE), B), block 256 (tile 128)
// or 128 (tile 64), dynamic shared memory 3 * 2 * QK_TILE * 36 floats.
extern "C" __global__ void __launch_bounds__(QkTraits::kThreads, 1)
gemmtc_qkt(const float* __restrict__ qkv, float* __restrict__ S, int N, int d, float scale_log2) {
    const int b = blockIdx.z;
    const float* const Q = qkv + qkv_item_offset(b, N, d);
    const float* const K = Q + static_cast<size_t>(N) * d;
    float* const S_item = S + static_cast<size_t>(b) * N * N;
    gemm_3xtf32<QK_TILE, true>(Q, d, K, d, S_item, N, N, N, d, scale_log2, N);
}

// O[b] = P[b] V[b]. Grid (cdiv(d, PV_TILE), cdiv(N, PV_TILE), B), block 256 (tile 128) or 128 (tile 64),
// dynamic shared memory 3 * (PV_TILE * 36 + 32 * (PV_TILE + 8)) floats.
extern "C" __global__ void __launch_bounds__(PvTraits::kThreads, 1)
gemmtc_pv(const float* __restrict__ qkv, const float* __restrict__ S, float* __restrict__ out, int N, int d) {
    const int b = blockIdx.z;
    const float* const V = qkv + qkv_item_offset(b, N, d) + 2 * static_cast<size_t>(N) * d;
    const float* const P = S + static_cast<size_t>(b) * N * N;
    float* const O = out + out_item_offset(b, N, d);
    gemm_3xtf32<PV_TILE, false>(P, N, V, d, O, d, N, d, N, 1.0f, d);
}

// ---- the padded path: N or d not a multiple of 4 -------------------------------------------------------
// Rows of N or d floats are then not 16-byte aligned and the tiles would load 4 bytes at a time. A
// pre-pass copies each item's Q, K and V into `padded` with rows of dp = d rounded up to 4 (zeros past d)
// and V given Np = N rounded up to 4 rows (zeros past N); S is kept with rows of Np floats, its tails set
// to 0 by gemm_softmax_rows_padded. Both GEMMs then take 16-byte copies, the zeros adding nothing.
// Per item in `padded`: Q [N][dp], K [N][dp], V [Np][dp]. Launches: gemmtc_pad, gemmtc_qkt_padded,
// gemm_softmax_rows_padded, gemmtc_pv_padded; workspaces S = B*N*Np and padded = B*(2N + Np)*dp floats.
__device__ __forceinline__ int round_up4(int x) { return (x + 3) & ~3; }

// Grid (cdiv((2N + Np) * dp, 256), B), block 256: one float per thread.
extern "C" __global__ void __launch_bounds__(256)
gemmtc_pad(const float* __restrict__ qkv, float* __restrict__ padded, int N, int d) {
    const int b = blockIdx.y;
    const int dp = round_up4(d), Np = round_up4(N);
    const size_t item_floats = static_cast<size_t>(2 * N + Np) * dp;
    const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= item_floats) return;
    const int r = static_cast<int>(i / dp), c = static_cast<int>(i % dp);  // rows 0..3N-1 exist in qkv
    padded[b * item_floats + i] = (c < d && r < 3 * N) ? qkv[qkv_item_offset(b, N, d) + static_cast<size_t>(r) * d + c] : 0.0f;
}

// S[b] (rows of Np) = (log2(e)/sqrt(d)) * Q K^T from the padded copies; grid and block as gemmtc_qkt.
extern "C" __global__ void __launch_bounds__(QkTraits::kThreads, 1)
gemmtc_qkt_padded(const float* __restrict__ padded, float* __restrict__ S, int N, int d, float scale_log2) {
    const int b = blockIdx.z;
    const int dp = round_up4(d), Np = round_up4(N);
    const float* const Q = padded + static_cast<size_t>(b) * (2 * N + Np) * dp;
    const float* const K = Q + static_cast<size_t>(N) * dp;
    gemm_3xtf32<QK_TILE, true>(Q, dp, K, dp, S + static_cast<size_t>(b) * N * Np, Np, N, N, dp, scale_log2, N);
}

// O[b] = P[b] V[b]: P with rows of Np (zero tails), V padded to Np x dp (zeros past N and d); O written
// d columns wide. Grid and block as gemmtc_pv.
extern "C" __global__ void __launch_bounds__(PvTraits::kThreads, 1)
gemmtc_pv_padded(const float* __restrict__ padded, const float* __restrict__ S, float* __restrict__ out, int N,
                 int d) {
    const int b = blockIdx.z;
    const int dp = round_up4(d), Np = round_up4(N);
    const float* const V = padded + static_cast<size_t>(b) * (2 * N + Np) * dp + 2 * static_cast<size_t>(N) * dp;
    const float* const P = S + static_cast<size_t>(b) * N * Np;
    gemm_3xtf32<PV_TILE, false>(P, Np, V, dp, out + out_item_offset(b, N, d), d, N, dp, Np, 1.0f, d);
}
