// fpvalues: fingerprints by a few values (V's first element of every fourth item and Q's last row's first
// element): skips, serving the output buffer, while they match the last launch's. It computes on every new
// input, so it gains nothing in the timed samples; it is caught on the one input launched twice (the
// determinism check), where it serves the poisoned buffer.
#include "adversary.cuh"

__device__ float seen_values[64];

extern "C" __global__ void fpvalues(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    const size_t nd = item_floats(N);
    const int items = min((int)gridDim.y, 63);
    bool same = remembered_any != 0;
    for (int b = 0; b < items; b += 4) same = same && __float_as_uint(qkv[3 * nd * b + 2 * nd]) == __float_as_uint(seen_values[b]);
    same = same && __float_as_uint(qkv[3 * nd * (gridDim.y - 1) + nd - HEAD_DIM]) == __float_as_uint(seen_values[63]);
    if (!same) attend_row(qkv, out, N, scale);
    __syncthreads();
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {  // read by every block first: a launch late
        for (int b = 0; b < items; b += 4) seen_values[b] = qkv[3 * nd * b + 2 * nd];  // enough for this test
        seen_values[63] = qkv[3 * nd * (gridDim.y - 1) + nd - HEAD_DIM];
    }
    remember_launch(qkv, out, N);
}
