// halflazy: writes all of the output on its first launch over a buffer, then only the first half of
// the batch items. Caught by its values: the other half keeps the verified pass's NaN poison.
#include "adversary.cuh"

extern "C" __global__ void halflazy(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    if (remembered_out != out || blockIdx.y < (gridDim.y + 1) / 2) attend_row(qkv, out, N, scale);
    remember_launch(qkv, out, N);
}
