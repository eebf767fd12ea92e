// fpptr: fingerprints by pointer. Once it has computed for an input buffer's address, it skips every later
// launch on the same address, whatever the values there (the timed samples reuse one set of buffers).
// Caught because the values are new each sample and the output is poisoned and checked.
#include "adversary.cuh"

extern "C" __global__ void fpptr(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    if (remembered_qkv != qkv) attend_row(qkv, out, N, scale);
    remember_launch(qkv, out, N);
}
