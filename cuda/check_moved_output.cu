// check_moved_output: not a variant. The verified passes' check on the device (attnbench/bench/timed_check.py):
// the output of a timed pass on a changed input against the first pass's checked output moved the same way
// (new item b is old item items[b]; in it new row r is old row q_rows[r]; every value times `sign`, -1 when V
// was negated), element by element, in float32 as the host's check: |out - expected| <= atol + rtol*|expected|.
// totals[0] += failing elements (NaN fails), totals[1] += non-finite outputs, totals[2] = max over the finite
// |out - expected| as float bits (non-negative floats order as their bits), totals[3] += the bits of every
// base element read (a checksum: every base element is read once, so a kernel that wrote into the kept base
// shows up). Grid (blocks, min(B, 65535)): blockIdx.y strides the items, blockIdx.x the item's elements.

#define CHECK_THREADS 256

extern "C" __global__ void check_moved_output(const float* __restrict__ out, const float* __restrict__ base,
                                              const int* __restrict__ items, const int* __restrict__ q_rows,
                                              int B, int N, int d, float sign, float atol, float rtol,
                                              unsigned long long* __restrict__ totals) {
    const size_t per_item = (size_t)N * d;
    unsigned long long failing = 0, nonfinite = 0, checksum = 0;
    float largest = 0.0f;
    for (int b = blockIdx.y; b < B; b += gridDim.y) {
        const float* got_item = out + (size_t)b * per_item;
        const float* base_item = base + (size_t)items[b] * per_item;
        for (size_t e = (size_t)blockIdx.x * CHECK_THREADS + threadIdx.x; e < per_item;
             e += (size_t)gridDim.x * CHECK_THREADS) {
            const size_t row = e / d, col = e - row * d;
            const float kept = base_item[(size_t)q_rows[row] * d + col];
            const float want = sign * kept;
            const float got = got_item[e];
            const float diff = fabsf(got - want);
            const float bound = rtol != 0.0f ? atol + rtol * fabsf(want) : atol;
            failing += !(diff <= bound);
            nonfinite += !isfinite(got);
            if (isfinite(diff)) largest = fmaxf(largest, diff);
            checksum += __float_as_uint(kept);
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        failing += __shfl_down_sync(0xffffffffu, failing, offset);
        nonfinite += __shfl_down_sync(0xffffffffu, nonfinite, offset);
        checksum += __shfl_down_sync(0xffffffffu, checksum, offset);
        largest = fmaxf(largest, __shfl_down_sync(0xffffffffu, largest, offset));
    }
    if ((threadIdx.x & 31) == 0) {
        if (failing) atomicAdd(&totals[0], failing);
        if (nonfinite) atomicAdd(&totals[1], nonfinite);
        if (largest > 0.0f) atomicMax(&totals[2], (unsigned long long)__float_as_uint(largest));
        if (checksum) atomicAdd(&totals[3], checksum);
    }
}
