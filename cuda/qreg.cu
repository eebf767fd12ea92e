// qreg -- report 004 §4.2.10 "Use Register on Qi to Extend bc".
// Adds to bankfree (§4.2.9): each thread keeps its own Q row in registers (float4 qi[HEAD_DIM/4],
// sized at compile time and indexed only by unrolled loops, so it never goes to local memory),
// since no other thread reads it. That frees the shared memory the Q tile used, which the report
// spends on twice as many K/V rows per tile: BC = 32 for d = 64 and 64 for d = 32, so half as many
// tiles, barriers and O rescales. Shared memory now holds only K, V (row-major, read as broadcasts)
// and the scores, transposed as in bankfree: sij[y*BR + tx].
// Everything else is as in bankfree: one block of BR = 128 threads per (Q tile, batch item), thread
// tx owns query row blockIdx.x*BR + tx, K/V tiles loaded by all threads with coalesced float4 reads,
// m and l in registers, rescale factors once per tile, O normalised in global memory.
// O's rescale reads and writes float4s (rescale_add4): the report's design; scalar ones cost four times
// the requests and L2 sectors, which made this step up to 2.5x slower than the report's on an H200.
// Scores are kept in log2 units (scaled by log2(e)/sqrt(d)) so one MUFU.EX2 gives each softmax weight:
// exp2_ftz (common.cuh), exp2f without its denormal path, which cost 3 of 8 instructions a weight.
// Constraints: d (HEAD_DIM, compile time) in {32, 64}: the register array needs a compile-time d,
// float4 needs d % 4 == 0, and the report picks BC for those two d so K, V and S fill 48 KB (d = 32)
// or 32 KB (d = 64). Any N >= 1: rows >= N run on zero Q and write nothing, K/V rows >= N are zero-filled
// and their scores set to -inf before the row max. Only the last tile of a sequence whose N is not a
// multiple of BC pays for that mask: full tiles take a copy of the score loop without it.
// Flavours (attnbench.kernels.ladder_004): fastmath builds with --use_fast_math; fulltiles defines
// FULL_TILES for N a multiple of BR (so of BC) and drops every mask, as the report's kernel has none;
// report does both.
#include "common.cuh"

#ifndef HEAD_DIM
#error "compile with -DHEAD_DIM=32 or -DHEAD_DIM=64"
#endif
#if HEAD_DIM != 32 && HEAD_DIM != 64
#error "qreg takes HEAD_DIM 32 or 64 only"
#endif

#ifndef FULL_TILES
#define FULL_TILES 0                      // 1: N is a multiple of BR (the runner refuses other N)
#endif

#define BR 128                            // query rows per block = threads per block
#define BC (HEAD_DIM == 64 ? 32 : 64)     // K/V rows per tile, doubled by the freed Q tile space
#define VEC_D (HEAD_DIM / 4)              // float4s per row
#define KV_LOADS (BC * VEC_D / BR)        // float4s of a K (and of a V) tile each thread loads
static_assert(BC * VEC_D % BR == 0, "a K/V tile must split evenly over the block's threads");

// This thread's scores against the K tile (log2 units) into sij[y*BR + tx], and their max.
// MASKED: columns at or past `cols` (those past N) score -inf; only a partial last tile needs it.
// Unrolled by 4 so four rows' dot products are in flight at once (one alone is a chain of adds).
template <bool MASKED>
__device__ __forceinline__ float tile_scores(const float4 (&qi)[VEC_D], const float4* kj, float* sij, int tx,
                                             int cols, float scale_log2) {
    float mij = ATTN_NEG_INF;
#pragma unroll 4
    for (int y = 0; y < BC; ++y) {
        float s = 0.0f;
#pragma unroll
        for (int x = 0; x < VEC_D; ++x) s += dot4(qi[x], kj[y * VEC_D + x]);
        s = (!MASKED || y < cols) ? s * scale_log2 : ATTN_NEG_INF;
        sij[y * BR + tx] = s;
        mij = fmaxf(mij, s);
    }
    return mij;
}

extern "C" __global__ void __launch_bounds__(BR)
flash_qreg(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale_log2) {
    __shared__ float4 kj[BC * VEC_D];   // K tile, row-major
    __shared__ float4 vj[BC * VEC_D];   // V tile, row-major
    __shared__ float sij[BC * BR];      // scores, then weights, transposed: column y of row tx at y*BR + tx

    const int tx = threadIdx.x;
    const int b = blockIdx.y;
    const int row = blockIdx.x * BR + tx;
    const bool row_valid = FULL_TILES || row < N;

    // d % 4 == 0 keeps every item offset and row start a multiple of 16 bytes (in and out).
    const float4* q = reinterpret_cast<const float4*>(qkv + qkv_item_offset(b, N, HEAD_DIM));
    const float4* k = q + (size_t)N * VEC_D;
    const float4* v = k + (size_t)N * VEC_D;
    float4* o_row = reinterpret_cast<float4*>(out + out_item_offset(b, N, HEAD_DIM) + (size_t)row * HEAD_DIM);

    const float4 zero4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    // This thread's Q row, in registers for the whole K/V loop (zeros for rows past N, never used).
    float4 qi[VEC_D];
#pragma unroll
    for (int x = 0; x < VEC_D; ++x) qi[x] = row_valid ? q[(size_t)row * VEC_D + x] : zero4;

    // Running max and sum of this thread's row, in registers.
    float m_i = ATTN_NEG_INF;
    float l_i = 0.0f;
    // O starts undefined; each thread owns its row of O.
    if (row_valid) {
#pragma unroll
        for (int x = 0; x < VEC_D; ++x) o_row[x] = zero4;
    }

    const int tiles = (N + BC - 1) / BC;
    for (int j = 0; j < tiles; ++j) {
        const int col0 = j * BC;
        // Load the K/V tile with all threads, consecutive threads on consecutive float4s
        // (rows past N become zeros).
        const float4* k_tile = k + (size_t)col0 * VEC_D;
        const float4* v_tile = v + (size_t)col0 * VEC_D;
#pragma unroll
        for (int it = 0; it < KV_LOADS; ++it) {
            const int f = it * BR + tx;
            const bool kv_valid = FULL_TILES || col0 + f / VEC_D < N;
            kj[f] = kv_valid ? k_tile[f] : zero4;
            vj[f] = kv_valid ? v_tile[f] : zero4;
        }
        __syncthreads();

        // S = Q K^T (log2 units), masked past N on a partial last tile, and its row max.
        const int cols = N - col0;
        const float mij = FULL_TILES || cols >= BC ? tile_scores<false>(qi, kj, sij, tx, cols, scale_log2)
                                     : tile_scores<true>(qi, kj, sij, tx, cols, scale_log2);
        // Every thread runs the tile (rows past N on zero Q), so no loop sits in a per-thread branch; with
        // the P V loop unrolled, the compiler keeps the weights in registers across O's columns instead of
        // reloading them from sij (d = 32: half the shared loads; t29 30.4 -> 26.3 ms on an H200).
        // A tile whose scores are all -inf adds nothing, by selects: its weights are exp2(-inf - 0) = 0
        // and m, l and O keep their values.
        const bool live = mij != ATTN_NEG_INF;
        const float m_sub = live ? mij : 0.0f;
        float lij = 0.0f;
#pragma unroll 8
        for (int y = 0; y < BC; ++y) {
            const float p = exp2_ftz(sij[y * BR + tx] - m_sub);
            sij[y * BR + tx] = p;
            lij += p;
        }
        const float m_old = m_i;
        const float l_old = l_i;
        const float m_new = fmaxf(m_old, mij);
        const float exp_old = exp2f(m_old - m_new);
        const float exp_new = exp2f(mij - m_new);  // rescale factors, once per tile
        const float l_new = exp_old * l_old + exp_new * lij;
        const float inv_l = 1.0f / l_new;
        const float old_scale = live ? l_old * exp_old * inv_l : 1.0f;
        const float new_scale = live ? exp_new * inv_l : 0.0f;
#pragma unroll 1
        for (int x = 0; x < VEC_D; ++x) {
            float4 pv = zero4;
#pragma unroll
            for (int y = 0; y < BC; ++y) {
                const float p = sij[y * BR + tx];
                const float4 v4 = vj[y * VEC_D + x];
                pv.x += p * v4.x;
                pv.y += p * v4.y;
                pv.z += p * v4.z;
                pv.w += p * v4.w;
            }
            if (row_valid) rescale_add4(o_row + x, old_scale, new_scale, pv);
        }
        m_i = live ? m_new : m_old;
        l_i = live ? l_new : l_old;
        __syncthreads();
    }
}
