// bankfree -- report 004 §4.2.9 "Avoid Bank Conflicts".
// Adds to reglm (§4.2.8): the two shared arrays that each thread indexes by its own row are laid out
// column-major, so the 32 threads of a warp touch 32 consecutive words instead of words one row
// apart (rows were d or BC words apart, a multiple of 16 words, so a warp's threads landed on one or
// two banks: up to 32-way conflicts on every Q and S access). The Q tile is stored transposed, qi[x*BR + tx] (float4 x of row
// tx), and the scores are stored sij[y*BR + tx]. K and V stay row-major: every thread reads the same
// K/V element at once, which is a broadcast. As the report notes, the transposed Q store makes each
// thread load its own Q row again (not coalesced), but that happens once per block.
// Everything else is as in reglm: one block of BR = 128 threads per (Q tile, batch item), thread tx
// owns query row blockIdx.x*BR + tx, K/V tiles loaded by all threads with coalesced float4 reads,
// m and l in registers, rescale factors once per tile, O normalised in global memory.
// O's rescale reads and writes float4s (rescale_add4): the report's design; scalar ones cost four times
// the requests and L2 sectors, which made this step up to 2.5x slower than the report's on an H200.
// Scores are kept in log2 units (scaled by log2(e)/sqrt(d)) so one MUFU.EX2 gives each softmax weight:
// exp2_ftz (common.cuh), exp2f without its denormal path, which cost 3 of 8 instructions a weight.
// Constraints: d (HEAD_DIM, compile time) in {32, 64}: float4 needs d % 4 == 0 and the report picks
// BC = 16 for d = 64 and 32 for d = 32 so the tiles fill 48 KB. Any N >= 1: rows >= N do no work,
// K/V rows >= N are zero-filled (never read) and their scores set to -inf before the row max.
#include "common.cuh"

#ifndef HEAD_DIM
#error "compile with -DHEAD_DIM=32 or -DHEAD_DIM=64"
#endif
#if HEAD_DIM != 32 && HEAD_DIM != 64
#error "bankfree takes HEAD_DIM 32 or 64 only"
#endif

#define BR 128                            // query rows per block = threads per block
#define BC (HEAD_DIM == 64 ? 16 : 32)     // K/V rows per tile (report 004 §4.2.3)
#define VEC_D (HEAD_DIM / 4)              // float4s per row
#define KV_LOADS (BC * VEC_D / BR)        // float4s of a K (and of a V) tile each thread loads
static_assert(BC * VEC_D % BR == 0, "a K/V tile must split evenly over the block's threads");

extern "C" __global__ void __launch_bounds__(BR)
flash_bankfree(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale_log2) {
    __shared__ float4 qi[VEC_D * BR];   // Q tile, transposed: float4 x of row tx at x*BR + tx
    __shared__ float4 kj[BC * VEC_D];   // K tile, row-major
    __shared__ float4 vj[BC * VEC_D];   // V tile, row-major
    __shared__ float sij[BC * BR];      // scores, then weights, transposed: column y of row tx at y*BR + tx

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
    // O starts undefined; each thread owns its row of O. Each thread also stores its own Q row
    // transposed; only that thread reads it, so no barrier is needed before use.
    if (row_valid) {
        for (int x = 0; x < VEC_D; ++x) o_row[x] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int x = 0; x < VEC_D; ++x) qi[x * BR + tx] = q[(size_t)row * VEC_D + x];
    }

    const float4 zero4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
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
                for (int x = 0; x < VEC_D; ++x) s += dot4(qi[x * BR + tx], kj[y * VEC_D + x]);
                s = (col0 + y < N) ? s * scale_log2 : ATTN_NEG_INF;
                sij[y * BR + tx] = s;
                mij = fmaxf(mij, s);
            }

            // A tile with every score masked adds nothing (and would give exp2f(-inf + inf) = NaN).
            if (mij != ATTN_NEG_INF) {
                // P = exp2(S - mij) and its row sum.
                float lij = 0.0f;
                for (int y = 0; y < BC; ++y) {
                    const float p = exp2_ftz(sij[y * BR + tx] - mij);
                    sij[y * BR + tx] = p;
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
                        const float p = sij[y * BR + tx];
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
