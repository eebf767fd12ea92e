// transform: answers an input that is a transformation of one it has seen, from memory, exactly: batch items
// permuted, K and V rows permuted together (the output does not move), V negated (the output's sign flips).
// It keeps its own copy of the last launch's output (in its own device memory, which no poison reaches) and
// per item a hash of Q, an order-free signature of the (K row, |V row|) pairs, and the sum of V. Against the
// old verified passes (permutations and a negation of the sampled input) it answered at memory speed. Fresh
// inputs are no transformation of anything it has seen, so it computes on every sample and gains nothing; on
// the input launched twice it serves its copy, which is right.
#include "adversary.cuh"

#define MAX_ITEMS 4096
#define MAX_FLOATS (1 << 22)
__device__ float copy[2][MAX_FLOATS];  // two slots: a launch reads one and writes the other
__device__ unsigned long long signature[2][MAX_ITEMS][2];
__device__ float v_sum[2][MAX_ITEMS];
__device__ int items_kept[2];

__device__ inline unsigned long long rows_signature(const float* a, const float* b, int N, bool absolute) {
    __shared__ unsigned long long partial[ROWS];
    unsigned long long h = 0;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        unsigned long long r = 0x243F6A8885A308D3ull;
        for (int c = 0; c < HEAD_DIM; ++c) r = mix64(r ^ __float_as_uint(a[(size_t)j * HEAD_DIM + c]));
        if (b != nullptr)
            for (int c = 0; c < HEAD_DIM; ++c) r = mix64(r ^ __float_as_uint(fabsf(b[(size_t)j * HEAD_DIM + c])));
        h += r;  // a sum: the rows' order does not matter
    }
    partial[threadIdx.x] = h;
    __syncthreads();
    unsigned long long total = 0;
    for (int t = 0; t < (int)blockDim.x; ++t) total += partial[t];
    __syncthreads();
    return total;
}

extern "C" __global__ void transform(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    const size_t nd = item_floats(N);
    const int B = gridDim.y, b = blockIdx.y;
    const int read = launch_count & 1, write = read ^ 1;
    const bool fits = B <= MAX_ITEMS && (size_t)B * nd <= MAX_FLOATS;
    const float* q = qkv + 3 * nd * b;
    const float* k = q + nd;
    const float* v = k + nd;
    // Q's rows in order (a Q-row permutation would need its rows mapped: not this trick), K and V's pairs in any order
    const unsigned long long sq = block_hash(q, nd, 3), skv = rows_signature(k, v, N, true);
    __shared__ float vs;
    if (threadIdx.x == 0) { float s = 0; for (size_t i = 0; i < nd; ++i) s += v[i]; vs = s; }
    __syncthreads();
    int from = -1;
    float sign = 1.0f;
    if (fits && remembered_any)
        for (int m = 0; m < items_kept[read] && from < 0; ++m)
            if (signature[read][m][0] == sq && signature[read][m][1] == skv) {
                from = m;
                sign = (vs == -v_sum[read][m] && vs != 0.0f) ? -1.0f : 1.0f;
            }
    const int row = blockIdx.x * ROWS + threadIdx.x;
    if (from >= 0) {  // from memory: the remembered item's rows, V's sign applied
        if (row < N)
            for (int c = 0; c < HEAD_DIM; ++c)
                out[nd * b + (size_t)row * HEAD_DIM + c] = sign * copy[read][nd * from + (size_t)row * HEAD_DIM + c];
    } else {
        attend_row(qkv, out, N, scale);
    }
    if (fits) {
        if (row < N)
            for (int c = 0; c < HEAD_DIM; ++c)
                copy[write][nd * b + (size_t)row * HEAD_DIM + c] = out[nd * b + (size_t)row * HEAD_DIM + c];
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            signature[write][b][0] = sq;
            signature[write][b][1] = skv;
            v_sum[write][b] = vs;
            if (b == 0) items_kept[write] = B;
        }
    }
    remember_launch(qkv, out, N);
}
