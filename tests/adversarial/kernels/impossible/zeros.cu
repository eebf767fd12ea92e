// Adversarial kernel: does no attention at all, only writes zeros to O (one float4 store per thread).
// Its output is wrong, so `--check` (or a compare, which checks every cell) calls it WRONG. Run without
// `--check`, nothing inspects its output but the NaN/Inf scan, which zeros pass: only the physical
// floor can tell that no timed pass did the work. Any N, any d divisible by 4.
extern "C" __global__ void zeros_separate(const float* q, const float* k, const float* v, float* o, int N, int d) {
    size_t item = blockIdx.y, count = (size_t)N * d / 4;
    float4* out = reinterpret_cast<float4*>(o + item * (size_t)N * d);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        out[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}
