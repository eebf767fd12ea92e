// kwatch: detects a permutation by watching the first four rows of K (and nothing else): it recomputes
// only when they changed since the last launch. The verified passes permute K's rows with every change,
// so it computes there and is caught by its time; a change it could not see would leave a stale answer,
// caught by its values.
#include "adversary.cuh"

extern "C" __global__ void kwatch(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    float now[8];
    fingerprint(qkv, N, now);
    bool same = remembered_any != 0;
    for (int i : {1, 3, 4, 5})  // K rows 0..3 of item 0 in adversary.cuh's fingerprint
        same = same && __float_as_uint(now[i]) == __float_as_uint(remembered_inputs[i]);
    if (!same) attend_row(qkv, out, N, scale);
    remember_launch(qkv, out, N);
}
