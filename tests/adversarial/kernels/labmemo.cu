// labmemo: the square lab's batches answered from memory (a red-team kernel, never run on a GPU by its author).
// Each block keeps, in a __device__ slot of its own (state between launches of the module), a fingerprint of its
// rows' Q, of K and V (32 sampled values each) and of the buffers' addresses, and returns at once when the
// fingerprint equals the one its previous launch stored AND its first output element holds a number (not the
// poison). Within a batch of `sweep square --lab-timing` (one fresh input, the output poisoned once, passes back
// to back) launches 2..n find both and skip: the lab's time per pass is (one pass + n - 1 empty launches) / n.
// Every fresh sample changes the fingerprint and the input launched twice is poisoned before each launch; what
// catches it is the last launch after the samples: the input the launch before it answered, with zeros written
// over the output (a number, not the poison), which it leaves there.
#include "adversary.cuh"

#define SLOTS (1 << 16)
__device__ unsigned long long fingerprint_slot[SLOTS];

extern "C" __global__ void labmemo(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    __shared__ int skip;
    __shared__ unsigned long long seen;
    const size_t nd = item_floats(N);
    const unsigned slot = blockIdx.y * gridDim.x + blockIdx.x;
    if (threadIdx.x == 0) {
        const float* item = qkv + 3 * nd * blockIdx.y;
        const int row0 = min((int)(blockIdx.x * ROWS), N - 1);
        const int rows = min(ROWS, N - row0);
        const size_t n_rows = (size_t)rows * HEAD_DIM;
        unsigned long long h = mix64((unsigned long long)qkv ^ mix64((unsigned long long)out));
        for (int s = 0; s < 32; ++s) {
            const size_t at_rows = (size_t)s * 2654435761u % n_rows, at_item = (size_t)s * 2246822519u % nd;
            h = mix64(h ^ __float_as_uint(item[(size_t)row0 * HEAD_DIM + at_rows]));
            h = mix64(h ^ __float_as_uint(item[nd + at_item]));
            h = mix64(h ^ __float_as_uint(item[2 * nd + at_item]));
        }
        seen = h;
        const bool written = !isnan(out[nd * blockIdx.y + (size_t)row0 * HEAD_DIM]);
        skip = slot < SLOTS && written && fingerprint_slot[slot] == h;
    }
    __syncthreads();
    if (skip) return;  // this input, answered by this block's previous launch, is still in place
    attend_row(qkv, out, N, scale);
    __syncthreads();
    if (threadIdx.x == 0 && slot < SLOTS) fingerprint_slot[slot] = seen;
}
