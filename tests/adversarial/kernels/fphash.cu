// fphash: fingerprints by a hash of everything its block's output depends on (its Q rows, its item's K and
// V): skips, serving the output buffer, when the hash matches the one it took at that block's last launch.
// Sound memoisation, so it is right whenever it computes; it computes on every new input and gains nothing in
// the timed samples, and it is caught on the one input launched twice (the determinism check), where it
// serves the poisoned buffer.
#include "adversary.cuh"

#define MAX_BLOCKS 65536
__device__ unsigned long long seen_hash[MAX_BLOCKS];

extern "C" __global__ void fphash(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    const size_t nd = item_floats(N);
    const size_t block = (size_t)blockIdx.y * gridDim.x + blockIdx.x;
    const float* item = qkv + 3 * nd * blockIdx.y;
    const size_t first_row = (size_t)blockIdx.x * ROWS;
    const size_t rows = min((size_t)ROWS, (size_t)N - first_row);
    const unsigned long long h = block_hash(item + first_row * HEAD_DIM, rows * HEAD_DIM, 1) +
                                 block_hash(item + nd, 2 * nd, 2);
    const bool same = block < MAX_BLOCKS && remembered_any && seen_hash[block] == h;
    if (!same) attend_row(qkv, out, N, scale);
    if (block < MAX_BLOCKS && threadIdx.x == 0) seen_hash[block] = h;  // only this block reads its own slot
    remember_launch(qkv, out, N);
}
