// permute_inputs: not a variant. The verified passes' input change (attnbench/bench/timed_check.py):
// after the timed samples, Q, K and V are changed in place on the device to an input whose answer is
// known (see attnbench/backends/input_transform.py). One launch gathers `count` batch items into a
// scratch buffer: new item i is old item items[i]; in it new Q row r is old row q_rows[r], new K and
// V rows r are old rows kv_rows[r], and V is multiplied by v_sign (+1 or -1, exact). The runner then
// copies the scratch back over the input. Grid (cdiv(N*d, 256), count, 3): blockIdx.z picks Q, K or
// V; count <= 65535 (the runner splits bigger batches). Works for both layouts: pointers and strides
// (in floats) say where each item's Q, K and V start. Any N, any d.

#define PERMUTE_THREADS 256

extern "C" __global__ void permute_inputs(const float* __restrict__ q, const float* __restrict__ k,
                                          const float* __restrict__ v, long long src_stride,
                                          float* __restrict__ dq, float* __restrict__ dk,
                                          float* __restrict__ dv, long long dst_stride,
                                          const int* __restrict__ items, const int* __restrict__ q_rows,
                                          const int* __restrict__ kv_rows, int N, int d, float v_sign) {
    const size_t element = (size_t)blockIdx.x * PERMUTE_THREADS + threadIdx.x;
    if (element >= (size_t)N * d) return;
    const int tensor = blockIdx.z;
    const int row = (int)(element / d), col = (int)(element % d);
    const float* src = tensor == 0 ? q : (tensor == 1 ? k : v);
    float* dst = tensor == 0 ? dq : (tensor == 1 ? dk : dv);
    const int source_row = tensor == 0 ? q_rows[row] : kv_rows[row];
    const float value = src[(size_t)items[blockIdx.y] * src_stride + (size_t)source_row * d + col];
    dst[(size_t)blockIdx.y * dst_stride + element] = tensor == 2 ? v_sign * value : value;
}
