// lazy: computes on its first launch over an output buffer, then returns at once on every later
// launch over the same buffer (the output of the first launch stays there). Caught by its values:
// the verified pass poisons the output with NaN and changes the input, and the NaN stays.
#include "adversary.cuh"

extern "C" __global__ void lazy(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    if (remembered_out != out) attend_row(qkv, out, N, scale);
    remember_launch(qkv, out, N);
}
