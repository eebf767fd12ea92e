// cached: remembers a fingerprint of the input (eight elements of Q, K and V) and skips when the input
// matches it, serving the output already in the buffer. On a changed input it computes, correctly:
// caught by its time (the verified passes cost a computing pass, the samples almost nothing).
#include "adversary.cuh"

extern "C" __global__ void cached(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    if (!same_fingerprint(qkv, N)) attend_row(qkv, out, N, scale);
    remember_launch(qkv, out, N);
}
