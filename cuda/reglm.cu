// reglm -- report 004 §4.2.8 "Remove l, m Array".
// Adds to coalesced (§4.2.7): the running row max m and row sum l live in two registers of the
// thread that owns the row instead of global workspace arrays, since no other thread ever reads them:
// no workspace, and no global load/store of m and l per K/V tile. Everything else is as in
// coalesced: one block of BR = 128 threads per (Q tile, batch item), thread tx owns query row
// blockIdx.x*BR + tx, Q tile loaded once and K/V tiles loaded by all threads with coalesced float4
// reads into row-major shared memory, rescale factors once per tile, O normalised in global memory.
// O's rescale reads and writes float4s (rescale_add4): the report's design; scalar ones cost four times
// the requests and L2 sectors, which made this step up to 2.5x slower than the report's on an H200.
// Scores are kept in log2 units (scaled by log2(e)/sqrt(d)) so one MUFU.EX2 gives each softmax weight:
// exp2_ftz (common.cuh), exp2f without its denormal path, which cost 3 of 8 instructions a weight.
// Constraints: d (HEAD_DIM, compile time) in {32, 64}: float4 needs d % 4 == 0 and the report picks
// BC = 16 for d = 64 and 32 for d = 32 so the tiles fill 48 KB. Any N >= 1: rows >= N do no work
// and their Q rows are zero-filled, K/V rows >= N are zero-filled (never read) and their scores set
// to -inf before the row max.
#include "common.cuh"

#ifndef HEAD_DIM
#error "compile with -DHEAD_DIM=32 or -DHEAD_DIM=64"
#endif
#if HEAD_DIM != 32 && HEAD_DIM != 64
#error "reglm takes HEAD_DIM 32 or 64 only"
#endif

#define BR 128                            // query rows per block = threads per block
#define BC (HEAD_DIM == 64 ? 16 : 32)     // K/V rows per tile (report 004 §4.2.3)
#define VEC_D (HEAD_DIM / 4)              // float4s per row
#define Q_LOADS (BR * VEC_D / BR)         // float4s of the Q tile each thread loads
#define KV_LOADS (BC * VEC_D / BR)        // float4s of a K (and of a V) tile each thread loads
static_assert(BC * VEC_D % BR == 0, "a K/V tile must split evenly over the block's threads");

extern "C" __global__ void __launch_bounds__(BR)
flash_reglm(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale_log2) {
    __shared__ float4 qi[BR * VEC_D];   // Q tile, row-major
    __shared__ float4 kj[BC * VEC_D];   // K tile, row-major
    __shared__ float4 vj[BC * VEC_D];   // V tile, row-major
    __shared__ float sij[BR * BC];      // scores, then weights: row tx at tx*BC

    const int tx = threadIdx.x;
    const int b = blockIdx.y;
    const int row = blockIdx.x * BR + tx;
    const bool row_valid = row < N;

    // d % 4 == 0 keeps every item offset and row start a multiple of 16 bytes.
    const float4* q = reinterpret_cast<const float4*>(qkv + qkv_item_offset(b, N, HEAD_DIM));
    const float4* k = q + (size_t)N * VEC_D;
    const float4* v = k + (size_t)N * VEC_D;
    float4* o_row = reinterpret_cast<float4*>(out + out_item_offset(b, N, HEAD_DIM) + (size_t)row * HEAD_DIM);

    // Running max and sum of this thread's row, in registers.
    float m_i = ATTN_NEG_INF;
    float l_i = 0.0f;
    // O starts undefined; each thread owns its row of O.
    if (row_valid) {
        for (int x = 0; x < VEC_D; ++x) o_row[x] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }

    const float4 zero4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    // The Q tile, loaded once by the whole block: float4 f of the tile is row f / VEC_D of it, and
    // consecutive threads read consecutive float4s. Rows past N become zeros. The first barrier in
    // the K/V loop makes it visible to every thread.
    const int row0 = blockIdx.x * BR;
    const float4* q_tile = q + (size_t)row0 * VEC_D;
#pragma unroll
    for (int it = 0; it < Q_LOADS; ++it) {
        const int f = it * BR + tx;
        qi[f] = (row0 + f / VEC_D < N) ? q_tile[f] : zero4;
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
            const bool kv_valid = col0 + f / VEC_D < N;
            kj[f] = kv_valid ? k_tile[f] : zero4;
            vj[f] = kv_valid ? v_tile[f] : zero4;
        }
        __syncthreads();

        if (row_valid) {
            // S = Q K^T (log2 units), masked past N, and its row max.
            float mij = ATTN_NEG_INF;
            for (int y = 0; y < BC; ++y) {
                float s = 0.0f;
#pragma unroll
                for (int x = 0; x < VEC_D; ++x) s += dot4(qi[tx * VEC_D + x], kj[y * VEC_D + x]);
                s = (col0 + y < N) ? s * scale_log2 : ATTN_NEG_INF;
                sij[tx * BC + y] = s;
                mij = fmaxf(mij, s);
            }

            // A tile with every score masked adds nothing (and would give exp2f(-inf + inf) = NaN).
            if (mij != ATTN_NEG_INF) {
                // P = exp2(S - mij) and its row sum.
                float lij = 0.0f;
                for (int y = 0; y < BC; ++y) {
                    const float p = exp2_ftz(sij[tx * BC + y] - mij);
                    sij[tx * BC + y] = p;
                    lij += p;
                }

                const float m_old = m_i;
                const float l_old = l_i;
                const float m_new = fmaxf(m_old, mij);
                // Rescale factors, once per tile: O_new = old_scale * O_old + new_scale * (P V).
                const float exp_old = exp2f(m_old - m_new);
                const float exp_new = exp2f(mij - m_new);
                const float l_new = exp_old * l_old + exp_new * lij;
                const float inv_l = 1.0f / l_new;
                const float old_scale = l_old * exp_old * inv_l;
                const float new_scale = exp_new * inv_l;

                for (int x = 0; x < VEC_D; ++x) {
                    float4 pv = zero4;
                    for (int y = 0; y < BC; ++y) {
                        const float p = sij[tx * BC + y];
                        const float4 v4 = vj[y * VEC_D + x];
                        pv.x += p * v4.x;
                        pv.y += p * v4.y;
                        pv.z += p * v4.z;
                        pv.w += p * v4.w;
                    }
                    rescale_add4(o_row + x, old_scale, new_scale, pv);
                }
                m_i = m_new;
                l_i = l_new;
            }
        }
        __syncthreads();
    }
}
