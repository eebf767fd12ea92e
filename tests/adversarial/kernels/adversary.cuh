// adversary.cuh: what the adversarial kernels of this corpus share. Not a technique: a test fixture.
// attend_row is an honest attention (one thread per query row of one batch item, interleaved qkv,
// online softmax over every key, float32); each trick decides per block whether to call it. The
// bookkeeping remembers, at the end of each launch, what the launch saw (its output buffer, a few
// input elements), so later launches can skip: state kept on the device between launches, as a real
// cheat would keep it. Constraints: HEAD_DIM = d (compiled in), any N; grid (cdiv(N, ROWS), B).
#pragma once
#include <math.h>

#ifndef HEAD_DIM
#error "HEAD_DIM is defined by attnbench from the testcase's d (defines in attnbench.toml)"
#endif
#define ROWS 128  // query rows per block = threads per block (block in attnbench.toml)

__device__ unsigned int finished_blocks;     // blocks of the current launch that are done
__device__ const float* remembered_out;      // the output buffer of the last whole launch
__device__ float remembered_inputs[8];       // a few input elements the last whole launch saw
__device__ int remembered_any;               // 1 once a launch has finished
__device__ const float* remembered_qkv;      // the input buffer of the last whole launch
__device__ unsigned int launch_count;        // whole launches so far (the last block of each adds one)

__device__ inline size_t item_floats(int N) { return (size_t)N * HEAD_DIM; }

// Attention for this thread's query row: O[row] = softmax(q K^T * scale) V.
__device__ inline void attend_row(const float* qkv, float* out, int N, float scale) {
    const int item = blockIdx.y;
    const int row = blockIdx.x * ROWS + threadIdx.x;
    if (row >= N) return;
    const size_t nd = item_floats(N);
    const float* q = qkv + 3 * nd * item + (size_t)row * HEAD_DIM;
    const float* k = qkv + 3 * nd * item + nd;
    const float* v = k + nd;
    float q_row[HEAD_DIM], acc[HEAD_DIM];
    for (int c = 0; c < HEAD_DIM; ++c) { q_row[c] = q[c] * scale; acc[c] = 0.0f; }
    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < N; ++j) {
        float s = 0.0f;
        for (int c = 0; c < HEAD_DIM; ++c) s = fmaf(q_row[c], k[(size_t)j * HEAD_DIM + c], s);
        const float m_new = fmaxf(m, s);
        const float correction = expf(m - m_new);  // 0 on the first key (m = -inf)
        const float p = expf(s - m_new);
        l = l * correction + p;
        for (int c = 0; c < HEAD_DIM; ++c) acc[c] = fmaf(p, v[(size_t)j * HEAD_DIM + c], acc[c] * correction);
        m = m_new;
    }
    float* o = out + nd * item + (size_t)row * HEAD_DIM;
    for (int c = 0; c < HEAD_DIM; ++c) o[c] = acc[c] / l;
}

// The input elements a fingerprint looks at: Q, K and V of item 0 row 0, K rows 1-3 of item 0, and Q of
// the last item. A permutation of items or rows, or V's negation, changes at least one of them.
__device__ inline void fingerprint(const float* qkv, int N, float* into) {
    const size_t nd = item_floats(N);
    const size_t last = 3 * nd * (gridDim.y - 1);
    const size_t at[8] = {0, nd, 2 * nd, nd + (N > 1 ? HEAD_DIM : 0), nd + (N > 2 ? 2 * HEAD_DIM : 0),
                          nd + (N > 3 ? 3 * HEAD_DIM : 0), last, last + 2 * nd};
    for (int i = 0; i < 8; ++i) into[i] = qkv[at[i]];
}

__device__ inline bool same_fingerprint(const float* qkv, int N) {
    float now[8];
    fingerprint(qkv, N, now);
    for (int i = 0; i < 8; ++i)
        if (__float_as_uint(now[i]) != __float_as_uint(remembered_inputs[i])) return false;
    return remembered_any != 0;
}

// Called by every thread of every block at the end: the last block of the launch to finish records
// what this launch saw. Every block has started by then, so no block of this launch sees the new state.
__device__ inline void remember_launch(const float* qkv, float* out, int N) {
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(&finished_blocks, 1u) == gridDim.x * gridDim.y - 1;
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        finished_blocks = 0;
        remembered_out = out;
        remembered_qkv = qkv;
        ++launch_count;
        fingerprint(qkv, N, remembered_inputs);
        remembered_any = 1;
        __threadfence();
    }
}

// SplitMix64's output function: the hashes the memoising tricks key on.
__device__ inline unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// A hash of n floats at p, the block's threads together (every thread gets it): order-sensitive, exact bits.
__device__ inline unsigned long long block_hash(const float* p, size_t n, unsigned long long salt) {
    __shared__ unsigned long long partial[ROWS];
    unsigned long long h = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        h += mix64(salt ^ (i * 0x9E3779B97F4A7C15ull) ^ (unsigned long long)__float_as_uint(p[i]));
    partial[threadIdx.x] = h;
    __syncthreads();
    unsigned long long total = 0;
    for (int t = 0; t < (int)blockDim.x; ++t) total += partial[t];
    __syncthreads();
    return total;
}
