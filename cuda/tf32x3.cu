// tf32x3: FlashAttention-2 forward on tensor cores, float32-accurate through 3xTF32.
//
// Technique: the step past report 004's ladder (its last kernel, §4.2.10, keeps Q in registers on
// FFMA), in the way PyTorch SDPA's float32 "efficient" backend works (3xTF32 on mma.sync).
// Each warp owns 16 query rows. S = Q K^T and O += P V run on mma.sync.m16n8k8 tf32 with every
// operand split x = big + small (big = x rounded to TF32, small = the rest) and the products
// small*big + big*small + big*big summed (small*small dropped). The tensor core truncates as it
// accumulates, so no long tensor-core sums: each K/V tile's P V goes into a fresh accumulator that is
// added to an FP32 one, and S keeps its small cross terms in an accumulator of their own.
// K/V tiles come into shared memory by cp.async, double buffered, rows padded by 4 floats so every
// fragment load is bank-conflict free. Online softmax runs on the S accumulators (a row lives in the
// 4 lanes of a quad), and the S accumulator layout feeds P V as its A operand with no shuffles.
//
// Constraints: d (HEAD_DIM, compile time) a multiple of 8 up to 64, or 80, 96, 112, 128 (the mma k
// step is 8; ptxas spills at 88, 104, 120). Any N >= 1: query rows past N are not written, keys past
// N are masked to -inf after the product, and K/V rows past N are zero-filled in shared memory.
// d <= 64: Q in registers, K/V tiles of 64 rows, 1024*(d+4) bytes of shared memory.
// d > 64:  Q tile in shared memory, K/V tiles of 32 rows, 768*(d+4) bytes (99 KB at d = 128).
// sm_80 PTX only (mma.sync, cp.async): builds for sm_80, sm_86 and sm_90 alike.
#include <cstdint>

#include "common.cuh"
#include "tf32_mma.cuh"  // split_tf32, mma_tf32, mma_3xtf32, cp.async

#ifndef HEAD_DIM
#error "tf32x3.cu needs -DHEAD_DIM=<d>"
#endif
#if HEAD_DIM % 8 != 0 || HEAD_DIM < 8 || HEAD_DIM > 128 || (HEAD_DIM > 64 && HEAD_DIM % 16 != 0)
#error "tf32x3.cu needs HEAD_DIM a multiple of 8 up to 64, or 80, 96, 112, 128"
#endif

namespace {

constexpr int kHeadDim = HEAD_DIM;
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRowsPerWarp = 16;                          // the mma's M
constexpr int kBlockRows = kRowsPerWarp * kWarps;         // query rows per block
constexpr bool kQInRegisters = kHeadDim <= 64;            // beyond 64, Q fragments would spill
constexpr int kTileRows = kQInRegisters ? 64 : 32;        // K/V rows per shared-memory tile
constexpr int kStride = kHeadDim + 4;                     // padded row: stride/4 odd -> no bank conflicts
constexpr int kDimSteps = kHeadDim / 8;                   // k steps of S = Q K^T; n tiles of O
constexpr int kKeyGroups = kTileRows / 8;                 // n tiles of S; k steps of P V
constexpr int kChunksPerRow = kHeadDim / 4;               // 16-byte cp.async chunks per row
constexpr int kTileFloats = kTileRows * kStride;

// The same with the small cross terms summed into their own accumulator c_small (see S = Q K^T).
__device__ __forceinline__ void mma_3xtf32_apart(float (&c_big)[4], float (&c_small)[4], const uint32_t (&a_big)[4],
                                                 const uint32_t (&a_small)[4], float b0, float b1) {
    uint32_t b0_big, b0_small, b1_big, b1_small;
    split_tf32(b0, b0_big, b0_small);
    split_tf32(b1, b1_big, b1_small);
    mma_tf32(c_small, a_small, b0_big, b1_big);
    mma_tf32(c_small, a_big, b0_small, b1_small);
    mma_tf32(c_big, a_big, b0_big, b1_big);
}

// rows [row0, row0 + rows) of an N x d matrix into a padded shared tile; rows past N become zeros.
template <int kRows>
__device__ __forceinline__ void load_rows_async(float* tile, const float* __restrict__ src, int row0, int N) {
    constexpr int kChunks = kRows * kChunksPerRow;
#pragma unroll
    for (int i = 0; i < (kChunks + kThreads - 1) / kThreads; ++i) {
        const int chunk = i * kThreads + static_cast<int>(threadIdx.x);
        if (kChunks % kThreads == 0 || chunk < kChunks) {
            const int row = chunk / kChunksPerRow;
            const int col = (chunk % kChunksPerRow) * 4;
            const bool valid = row0 + row < N;
            const float* from = src + (valid ? (row0 + row) * kHeadDim + col : 0);  // in bounds even when invalid
            cp_async_16(tile + row * kStride + col, from, valid);
        }
    }
}

}  // namespace

// grid (cdiv(N, 64), B), block 128, dynamic shared memory as in the header comment.
extern "C" __global__ void __launch_bounds__(kThreads, 1)
    flash_tf32x3(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale_log2) {
    extern __shared__ float4 smem_f4[];  // float4 for 16-byte alignment of every cp.async target
    float* const smem = reinterpret_cast<float*>(smem_f4);
    float* const k_tiles = smem;                      // [2][kTileRows][kStride]
    float* const v_tiles = smem + 2 * kTileFloats;    // [2][kTileRows][kStride]
    float* const q_tile = smem + 4 * kTileFloats;     // [kBlockRows][kStride], only when !kQInRegisters

    const int b = blockIdx.y;
    const int q_block0 = blockIdx.x * kBlockRows;
    const float* const Q = qkv + qkv_item_offset(b, N, kHeadDim);
    const float* const K = Q + static_cast<size_t>(N) * kHeadDim;
    const float* const V = K + static_cast<size_t>(N) * kHeadDim;
    float* const O = out + out_item_offset(b, N, kHeadDim);

    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int g = lane >> 2;  // fragment row group
    const int t = lane & 3;   // thread in quad
    const int row_lo = q_block0 + warp * kRowsPerWarp + g;  // this lane's two query rows
    const int row_hi = row_lo + 8;
    const int n_tiles = (N + kTileRows - 1) / kTileRows;

    // Tile 0 (and the Q tile when Q lives in shared memory) go out first.
    if constexpr (!kQInRegisters) load_rows_async<kBlockRows>(q_tile, Q, q_block0, N);
    load_rows_async<kTileRows>(k_tiles, K, 0, N);
    load_rows_async<kTileRows>(v_tiles, V, 0, N);
    cp_async_commit();

    // Q as A fragments, split once: a0 = (g, t), a1 = (g + 8, t), a2 = (g, t + 4), a3 = (g + 8, t + 4).
    uint32_t q_big[kQInRegisters ? kDimSteps : 1][4];
    uint32_t q_small[kQInRegisters ? kDimSteps : 1][4];
    if constexpr (kQInRegisters) {
        const bool lo_valid = row_lo < N, hi_valid = row_hi < N;
        const float* const q_lo = Q + (lo_valid ? row_lo * kHeadDim : 0);
        const float* const q_hi = Q + (hi_valid ? row_hi * kHeadDim : 0);
#pragma unroll
        for (int ks = 0; ks < kDimSteps; ++ks) {
            const int c = ks * 8 + t;
            split_tf32(lo_valid ? __ldg(q_lo + c) : 0.0f, q_big[ks][0], q_small[ks][0]);
            split_tf32(hi_valid ? __ldg(q_hi + c) : 0.0f, q_big[ks][1], q_small[ks][1]);
            split_tf32(lo_valid ? __ldg(q_lo + c + 4) : 0.0f, q_big[ks][2], q_small[ks][2]);
            split_tf32(hi_valid ? __ldg(q_hi + c + 4) : 0.0f, q_big[ks][3], q_small[ks][3]);
        }
    }

    // Running state of rows lo/hi: max (in log2 units, already times scale_log2), this lane's partial
    // row sum, and the FP32 output accumulator in C layout: o[n] = (lo, n*8+2t), (lo, +1), (hi, ..), (hi, +1).
    float m_lo = ATTN_NEG_INF, m_hi = ATTN_NEG_INF;
    float l_lo = 0.0f, l_hi = 0.0f;
    float o[kDimSteps][4];
#pragma unroll
    for (int n = 0; n < kDimSteps; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

    for (int tile = 0; tile < n_tiles; ++tile) {
        // Prefetch the next tile into the other buffer, then wait for this one.
        if (tile + 1 < n_tiles) {
            const int next = (tile + 1) & 1;
            load_rows_async<kTileRows>(k_tiles + next * kTileFloats, K, (tile + 1) * kTileRows, N);
            load_rows_async<kTileRows>(v_tiles + next * kTileFloats, V, (tile + 1) * kTileRows, N);
        }
        cp_async_commit();  // possibly empty, so that "all but the newest group" is always this tile
        cp_async_wait<1>();
        __syncthreads();

        const float* const Ks = k_tiles + (tile & 1) * kTileFloats;
        const float* const Vs = v_tiles + (tile & 1) * kTileFloats;
        const int key0 = tile * kTileRows;

        // S = Q K^T for this warp's 16 rows: s[j] is the 16 x 8 block of keys key0 + 8j .. 8j + 7.
        // B fragment: b0 = (k = t, n = g) = K[8j + g][8ks + t], b1 = K[8j + g][8ks + t + 4].
        // The tensor core truncates as it accumulates, with an error relative to the accumulator's size;
        // so the two small cross terms get an accumulator of their own (about 2^-11 of S, its errors
        // vanish) and only the d/8 big * big steps add into the S-sized one: S error shrinks ~3x.
        float s[kKeyGroups][4];
        if constexpr (kQInRegisters) {
#pragma unroll
            for (int j = 0; j < kKeyGroups; ++j) {
                float big[4] = {0.0f, 0.0f, 0.0f, 0.0f}, small[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                for (int ks = 0; ks < kDimSteps; ++ks) {
                    const float* const kr = Ks + (j * 8 + g) * kStride + ks * 8 + t;
                    mma_3xtf32_apart(big, small, q_big[ks], q_small[ks], kr[0], kr[4]);
                }
#pragma unroll
                for (int e = 0; e < 4; ++e) s[j][e] = big[e] + small[e];
            }
        } else {
            float s_small[kKeyGroups][4];
#pragma unroll
            for (int j = 0; j < kKeyGroups; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[j][e] = s_small[j][e] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < kDimSteps; ++ks) {
                // Q A fragment from shared memory: a0 = (g, t), a1 = (g + 8, t), a2 = (g, t + 4), a3 = (g + 8, t + 4).
                uint32_t a_big[4], a_small[4];
                const float* const qs = q_tile + (warp * kRowsPerWarp + g) * kStride + ks * 8 + t;
                split_tf32(qs[0], a_big[0], a_small[0]);
                split_tf32(qs[8 * kStride], a_big[1], a_small[1]);
                split_tf32(qs[4], a_big[2], a_small[2]);
                split_tf32(qs[8 * kStride + 4], a_big[3], a_small[3]);
#pragma unroll
                for (int j = 0; j < kKeyGroups; ++j) {
                    const float* const kr = Ks + (j * 8 + g) * kStride + ks * 8 + t;
                    mma_3xtf32_apart(s[j], s_small[j], a_big, a_small, kr[0], kr[4]);
                }
            }
#pragma unroll
            for (int j = 0; j < kKeyGroups; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[j][e] += s_small[j][e];
        }

        // Keys past N (only in the last tile) are masked after the product, before max/exp.
        if (key0 + kTileRows > N) {
#pragma unroll
            for (int j = 0; j < kKeyGroups; ++j) {
                const int key = key0 + j * 8 + 2 * t;
                if (key >= N) s[j][0] = s[j][2] = ATTN_NEG_INF;
                if (key + 1 >= N) s[j][1] = s[j][3] = ATTN_NEG_INF;
            }
        }

        // Online softmax. c0, c1 belong to row lo, c2, c3 to row hi; a row's 4 lanes form a quad.
        float max_lo = ATTN_NEG_INF, max_hi = ATTN_NEG_INF;
#pragma unroll
        for (int j = 0; j < kKeyGroups; ++j) {
            max_lo = fmaxf(max_lo, fmaxf(s[j][0], s[j][1]));
            max_hi = fmaxf(max_hi, fmaxf(s[j][2], s[j][3]));
        }
#pragma unroll
        for (int offset = 1; offset < 4; offset <<= 1) {
            max_lo = fmaxf(max_lo, __shfl_xor_sync(0xffffffffu, max_lo, offset));
            max_hi = fmaxf(max_hi, __shfl_xor_sync(0xffffffffu, max_hi, offset));
        }
        const float m_new_lo = fmaxf(m_lo, max_lo * scale_log2);
        const float m_new_hi = fmaxf(m_hi, max_hi * scale_log2);
        // A row with no valid key yet keeps m = -inf; shift by 0 then, so no exp2f(-inf - -inf) = NaN.
        const float shift_lo = m_new_lo == ATTN_NEG_INF ? 0.0f : m_new_lo;
        const float shift_hi = m_new_hi == ATTN_NEG_INF ? 0.0f : m_new_hi;
        const float alpha_lo = exp2_ftz(m_lo - shift_lo);  // 0 on the first tile (m = -inf)
        const float alpha_hi = exp2_ftz(m_hi - shift_hi);
        m_lo = m_new_lo;
        m_hi = m_new_hi;

        // P = exp2(S * scale_log2 - m), stored straight in A fragment order for P V. The A k index t
        // stands for key 2t and t + 4 for key 2t + 1, so a0 = (lo, 2t) = c0, a1 = (hi, 2t) = c2,
        // a2 = (lo, 2t+1) = c1, a3 = (hi, 2t+1) = c3; the B fragment then loads V rows 8j+2t and 8j+2t+1.
        float p[kKeyGroups][4];
        float sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
        for (int j = 0; j < kKeyGroups; ++j) {
            p[j][0] = exp2_ftz(fmaf(s[j][0], scale_log2, -shift_lo));
            p[j][2] = exp2_ftz(fmaf(s[j][1], scale_log2, -shift_lo));
            p[j][1] = exp2_ftz(fmaf(s[j][2], scale_log2, -shift_hi));
            p[j][3] = exp2_ftz(fmaf(s[j][3], scale_log2, -shift_hi));
            sum_lo += p[j][0] + p[j][2];
            sum_hi += p[j][1] + p[j][3];
        }
        l_lo = fmaf(l_lo, alpha_lo, sum_lo);  // per-lane partial sums; the quad adds them at the end
        l_hi = fmaf(l_hi, alpha_hi, sum_hi);

        // O = alpha * O + P V. This tile's product goes into fresh tensor-core accumulators pv, added to
        // the FP32 accumulators o afterwards (the 3xTF32 accuracy rule: no long-running tensor-core sums).
        // B fragment: b0 = (k = t, n = g) = V[8j + 2t][8n + g], b1 = V[8j + 2t + 1][8n + g].
        float pv[kDimSteps][4];
#pragma unroll
        for (int n = 0; n < kDimSteps; ++n) pv[n][0] = pv[n][1] = pv[n][2] = pv[n][3] = 0.0f;
#pragma unroll
        for (int j = 0; j < kKeyGroups; ++j) {
            uint32_t a_big[4], a_small[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) split_tf32(p[j][e], a_big[e], a_small[e]);
#pragma unroll
            for (int n = 0; n < kDimSteps; ++n) {
                const float* const vr = Vs + (j * 8 + 2 * t) * kStride + n * 8 + g;
                mma_3xtf32(pv[n], a_big, a_small, vr[0], vr[kStride]);
            }
        }
#pragma unroll
        for (int n = 0; n < kDimSteps; ++n) {
            o[n][0] = fmaf(o[n][0], alpha_lo, pv[n][0]);
            o[n][1] = fmaf(o[n][1], alpha_lo, pv[n][1]);
            o[n][2] = fmaf(o[n][2], alpha_hi, pv[n][2]);
            o[n][3] = fmaf(o[n][3], alpha_hi, pv[n][3]);
        }
        __syncthreads();  // everyone is done with this buffer before the next prefetch overwrites it
    }

    // The quad's lanes hold disjoint columns of each row: add their partial row sums, then normalise.
#pragma unroll
    for (int offset = 1; offset < 4; offset <<= 1) {
        l_lo += __shfl_xor_sync(0xffffffffu, l_lo, offset);
        l_hi += __shfl_xor_sync(0xffffffffu, l_hi, offset);
    }
    const float inv_lo = 1.0f / l_lo;
    const float inv_hi = 1.0f / l_hi;
#pragma unroll
    for (int n = 0; n < kDimSteps; ++n) {
        const int col = n * 8 + 2 * t;
        if (row_lo < N)
            *reinterpret_cast<float2*>(O + row_lo * kHeadDim + col) = make_float2(o[n][0] * inv_lo, o[n][1] * inv_lo);
        if (row_hi < N)
            *reinterpret_cast<float2*>(O + row_hi * kHeadDim + col) = make_float2(o[n][2] * inv_hi, o[n][3] * inv_hi);
    }
}
