// onein3: computes on one launch in three and returns at once on the other two, serving whatever the
// output buffer holds. Its slowest sample is a computing one, so a time rule of max(1.5 x median, slowest
// sample) let its computing verified passes through while its median was the skipping launches'. Caught
// now because every launch's output is poisoned first and checked after.
#include "adversary.cuh"

extern "C" __global__ void onein3(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    if (launch_count % 3 == 0) attend_row(qkv, out, N, scale);
    remember_launch(qkv, out, N);
}
