// online: one query per block, streaming K/V in tiles of BLOCK_N = 64 keys with online softmax
// (report 003, "Online Softmax with K/V Tiling" + "Float4 Vectorization" + "Warp-Level Reductions";
// its target is large head dims, d = 512..8192, where the K/V rows of one tile cannot be staged in
// shared memory and the kernel is memory-bound).
//
// Block of 256 threads = 8 warps per query row; grid (N, B). Per K/V tile:
//   1. scores: warp w takes keys w, w+8, ..., w+56; lanes stride over d in float4 steps (Q row
//      staged once in shared memory, K read straight from global, coalesced), warp-shuffle sum;
//   2. every warp reads the 64 scores back and computes the tile max, the running-max correction and
//      the 64 probabilities itself (identical in every warp, so no second barrier is needed);
//   3. P V: each thread owns float4 column groups tid, tid+256, ... of the output row and pulls
//      the probabilities from its own warp's lanes with shuffles.
// The score buffer is double-buffered, so one __syncthreads per tile suffices.
// Constraints: any N >= 1; any d in [1, 16384] (ONLINE_GROUPS = cdiv(d, 1024) float4 accumulators
// per thread, set by the host). float4 loads need d % 4 == 0; other d take the same path with
// scalar loads (indices clamped into the row; the Q row's zero padding cancels the tail).
#include "common.cuh"

#ifndef ONLINE_GROUPS
#define ONLINE_GROUPS 1  // cdiv(d, 4 * ONLINE_THREADS)
#endif

#define ONLINE_THREADS 256
#define ONLINE_WARPS (ONLINE_THREADS / 32)
#define BLOCK_N 64
#define KEYS_PER_WARP (BLOCK_N / ONLINE_WARPS)
// Keys unrolled in the P V loop: keep about 4 float4 loads in flight per thread without letting
// large d (many groups) blow up the register count.
constexpr int kPvKeyUnroll = ONLINE_GROUPS >= 4 ? 1 : 4 / ONLINE_GROUPS;
// Blocks per SM the register budget must allow (256 threads each): 4 (64 registers) for small d,
// 2 (128 registers) for the 16 float4 accumulators of d up to 16384.
#define ONLINE_MIN_BLOCKS (ONLINE_GROUPS <= 2 ? 4 : 2)

// Elements col..col+3 of a row of length d. Indices are clamped into the row instead of masked:
// callers only read quads whose out-of-row lanes are discarded (output columns past d are never
// written) or multiplied by the zero padding of the staged Q row. Clamping keeps the loads free
// of per-element predicates, which otherwise spill when many groups are unrolled.
// `vec`: the row is 16-byte aligned and d % 4 == 0 (so d >= 4).
__device__ __forceinline__ float4 load_row_quad(const float* __restrict__ row, int col, int d, bool vec) {
    if (vec) return __ldg(reinterpret_cast<const float4*>(row + min(col, d - 4)));
    return make_float4(__ldg(row + min(col, d - 1)), __ldg(row + min(col + 1, d - 1)),
                       __ldg(row + min(col + 2, d - 1)), __ldg(row + min(col + 3, d - 1)));
}

// Dynamic shared memory: 4 * cdiv(d, 4) floats (the query row, zero padded to a float4 multiple).
extern "C" __global__ void __launch_bounds__(ONLINE_THREADS, ONLINE_MIN_BLOCKS)
online_attention(const float* __restrict__ qkv, float* __restrict__ out, int N, int d, float scale_log2) {
    extern __shared__ float4 q_row4[];
    __shared__ float tile_score[2][BLOCK_N];  // scaled scores (log2 units), -inf past N

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int query = blockIdx.x, b = blockIdx.y;
    const int quads = (d + 3) / 4;

    const float* Q = qkv + qkv_item_offset(b, N, d);
    const float* K = Q + (size_t)N * d;
    const float* V = K + (size_t)N * d;
    const bool vec = (d % 4 == 0) && is_aligned16(Q) && is_aligned16(K) && is_aligned16(V);

    const float* q_src = Q + (size_t)query * d;
    float* q_row = reinterpret_cast<float*>(q_row4);
    for (int c = tid; c < 4 * quads; c += ONLINE_THREADS) q_row[c] = c < d ? q_src[c] : 0.0f;
    __syncthreads();

    float row_max = ATTN_NEG_INF;  // running max, log2 units
    float row_sum = 0.0f;          // running sum of exp2(score - row_max)
    float4 acc[ONLINE_GROUPS];
#pragma unroll
    for (int g = 0; g < ONLINE_GROUPS; ++g) acc[g] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    int buf = 0;
    for (int tile = 0; tile < N; tile += BLOCK_N, buf ^= 1) {
        // 1. Scores of this warp's 8 keys: 8 independent dot products for memory-level parallelism.
        float partial[KEYS_PER_WARP];
#pragma unroll
        for (int i = 0; i < KEYS_PER_WARP; ++i) partial[i] = 0.0f;
        // Not unrolled further: 8 float4 loads in flight per lane already, and unrolling would
        // multiply the registers they hold.
#pragma unroll 1
        for (int q4 = lane; q4 < quads; q4 += 32) {
            const float4 q = q_row4[q4];
#pragma unroll
            for (int i = 0; i < KEYS_PER_WARP; ++i) {
                // Keys past N read row N-1 instead; their scores are replaced by -inf below.
                const int key = min(tile + warp + ONLINE_WARPS * i, N - 1);
                partial[i] += dot4(q, load_row_quad(K + (size_t)key * d, 4 * q4, d, vec));
            }
        }
#pragma unroll
        for (int i = 0; i < KEYS_PER_WARP; ++i) {
            const float s = warp_reduce_sum(partial[i]);
            const int key = tile + warp + ONLINE_WARPS * i;
            if (lane == 0) tile_score[buf][warp + ONLINE_WARPS * i] = key < N ? s * scale_log2 : ATTN_NEG_INF;
        }
        __syncthreads();

        // 2. Online-softmax update, computed redundantly (and identically) by every warp.
        const float s_lo = tile_score[buf][lane], s_hi = tile_score[buf][lane + 32];
        const float tile_max = warp_reduce_max(fmaxf(s_lo, s_hi));
        const float new_max = fmaxf(row_max, tile_max);
        // A tile always holds at least one key < N, so new_max is finite; the guard keeps a fully
        // masked tile (-inf - -inf = NaN) harmless should that ever change.
        const float ref_max = new_max == ATTN_NEG_INF ? 0.0f : new_max;
        const float correction = exp2f(row_max - ref_max);
        const float p_lo = exp2f(s_lo - ref_max), p_hi = exp2f(s_hi - ref_max);
        row_sum = row_sum * correction + warp_reduce_sum(p_lo + p_hi);
        row_max = new_max;

        // 3. acc = acc * correction + P V over this tile's keys.
#pragma unroll
        for (int g = 0; g < ONLINE_GROUPS; ++g) {
            acc[g].x *= correction; acc[g].y *= correction;
            acc[g].z *= correction; acc[g].w *= correction;
        }
        const int keys = min(BLOCK_N, N - tile);
#pragma unroll kPvKeyUnroll
        for (int j = 0; j < keys; ++j) {
            const float p = __shfl_sync(0xffffffffu, j < 32 ? p_lo : p_hi, j & 31);
            const float* v_row = V + (size_t)(tile + j) * d;
#pragma unroll
            for (int g = 0; g < ONLINE_GROUPS; ++g) {
                // Groups past the row end load clamped columns and are never written out.
                const float4 v = load_row_quad(v_row, 4 * (tid + ONLINE_THREADS * g), d, vec);
                acc[g].x = fmaf(p, v.x, acc[g].x); acc[g].y = fmaf(p, v.y, acc[g].y);
                acc[g].z = fmaf(p, v.z, acc[g].z); acc[g].w = fmaf(p, v.w, acc[g].w);
            }
        }
    }

    const float inv_sum = 1.0f / row_sum;
    float* o_row = out + out_item_offset(b, N, d) + (size_t)query * d;
    const bool o_vec = vec && is_aligned16(o_row);
#pragma unroll
    for (int g = 0; g < ONLINE_GROUPS; ++g) {
        const int q4 = tid + ONLINE_THREADS * g;
        if (q4 >= quads) continue;
        const float4 r = make_float4(acc[g].x * inv_sum, acc[g].y * inv_sum, acc[g].z * inv_sum, acc[g].w * inv_sum);
        const int c = 4 * q4;
        if (o_vec) {
            *reinterpret_cast<float4*>(o_row + c) = r;
        } else {
            if (c < d) o_row[c] = r.x;
            if (c + 1 < d) o_row[c + 1] = r.y;
            if (c + 2 < d) o_row[c + 2] = r.z;
            if (c + 3 < d) o_row[c + 3] = r.w;
        }
    }
}
