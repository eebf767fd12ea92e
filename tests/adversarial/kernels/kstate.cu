// kstate: range poisoning with state (a red-team kernel). The first pass computes honestly; after each of its
// launches a second kernel flattens that chunk's K (0 at element 0, 2^-100 elsewhere) and adds the chunk's item
// count to a counter in a workspace (zeroed once, never between passes). Once the counter reaches the case's B
// (TOTAL_B, a define from the whole shape) the first pass is over, and every later launch writes the column mean
// of V: the exact answer when every score is ~0. When the fresh inputs' range was read from the device after the
// first pass, every fresh K lay in [0, 2^-100) and this PASSED at 3.6x the honest speed. The range is taken from
// the host's input now: fresh K spans the case's range, and the first warm-up pass is WRONG.
#include "adversary.cuh"

#define FLAT_HI 7.888609052210118e-31f  // 2^-100

extern "C" __global__ void kstate(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale,
                                  const unsigned int* __restrict__ state) {
    if (*(volatile const unsigned int*)state < (unsigned int)TOTAL_B) {  // still the checked first pass
        attend_row(qkv, out, N, scale);
        return;
    }
    __shared__ float mean[HEAD_DIM];
    const size_t nd = item_floats(N);
    const float* v = qkv + 3 * nd * blockIdx.y + 2 * nd;
    for (int c = threadIdx.x; c < HEAD_DIM; c += blockDim.x) {
        float sum = 0.0f;
        for (int j = 0; j < N; ++j) sum += v[(size_t)j * HEAD_DIM + c];
        mean[c] = sum / N;
    }
    __syncthreads();
    const int row = blockIdx.x * ROWS + threadIdx.x;
    if (row >= N) return;
    float* o = out + nd * blockIdx.y + (size_t)row * HEAD_DIM;
    for (int c = 0; c < HEAD_DIM; ++c) o[c] = mean[c];
}

extern "C" __global__ void kstate_taint(float* __restrict__ qkv, int B, int N, unsigned int* __restrict__ state) {
    __shared__ int first;
    if (threadIdx.x == 0) first = *(volatile unsigned int*)state < (unsigned int)TOTAL_B;
    __syncthreads();
    if (!first) return;
    const size_t nd = item_floats(N);
    for (int b = 0; b < B; ++b) {
        float* k = qkv + 3 * nd * b + nd;
        for (size_t e = threadIdx.x; e < nd; e += blockDim.x) k[e] = (b == 0 && e == 0) ? 0.0f : FLAT_HI;
    }
    __syncthreads();
    __threadfence();
    if (threadIdx.x == 0) atomicAdd(state, (unsigned int)B);
}
