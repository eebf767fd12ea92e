// honest: the control of the adversarial corpus. It computes on every launch (adversary.cuh's
// attend_row), so it must keep PASS, with its speed, through the verified passes.
#include "adversary.cuh"

extern "C" __global__ void honest(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    attend_row(qkv, out, N, scale);
}
