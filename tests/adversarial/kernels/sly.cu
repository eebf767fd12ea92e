// sly: lazy, but a block recomputes whenever its first output element is NaN (the poison). Caught by
// its values: the second verified pass changes the input again without poisoning the output, and the
// first verified pass's answer stays, which is not the second's.
#include "adversary.cuh"

extern "C" __global__ void sly(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale) {
    __shared__ bool poisoned;
    if (threadIdx.x == 0) poisoned = isnan(out[item_floats(N) * blockIdx.y + (size_t)blockIdx.x * ROWS * HEAD_DIM]);
    __syncthreads();  // read before any thread of the block writes it
    if (remembered_out != out || poisoned) attend_row(qkv, out, N, scale);
    remember_launch(qkv, out, N);
}
