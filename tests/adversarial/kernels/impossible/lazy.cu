// Adversarial kernel: correct on the first launch over an output buffer, then lazy. `lazy_attention`
// is the `attnbench new` kernel (one thread per query row, online softmax) behind a check of a small
// device table of output pointers already computed; `lazy_mark`, launched after it, records the
// pointer. So the checked first pass is right (`--check` passes) and every later pass over the same
// buffers returns at once: the timed passes do no work, which the physical floor refuses (issue 22's
// "lazy kernel": 57,456 TFLOP/s before). Any N, d up to 128.
#ifndef HEAD_DIM
#error "HEAD_DIM is defined by attnbench from the testcase's d (defines in attnbench.toml)"
#endif

#define SEEN_SLOTS 4096
__device__ unsigned long long seen_outputs[SEEN_SLOTS];

__device__ __forceinline__ unsigned slot_of(const float* o) {
    return (unsigned)(((unsigned long long)o >> 8) % SEEN_SLOTS);
}

extern "C" __global__ void lazy_mark(const float* o) {
    seen_outputs[slot_of(o)] = (unsigned long long)o;
}

extern "C" __global__ void lazy_attention(const float* __restrict__ q, const float* __restrict__ k,
                                          const float* __restrict__ v, float* __restrict__ o,
                                          int N, float scale_log2) {
    if (seen_outputs[slot_of(o)] == (unsigned long long)o) return;  // computed before: skip the work
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int b = blockIdx.y;
    if (row >= N) return;
    const size_t item = (size_t)b * N * HEAD_DIM;
    float q_row[HEAD_DIM], acc[HEAD_DIM];
    for (int x = 0; x < HEAD_DIM; ++x) {
        q_row[x] = q[item + (size_t)row * HEAD_DIM + x] * scale_log2;
        acc[x] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < N; ++j) {
        const float* k_row = k + item + (size_t)j * HEAD_DIM;
        const float* v_row = v + item + (size_t)j * HEAD_DIM;
        float s = 0.0f;
        for (int x = 0; x < HEAD_DIM; ++x) s += q_row[x] * k_row[x];
        const float m_new = fmaxf(m, s);
        const float rescale = exp2f(m - m_new);
        const float p = exp2f(s - m_new);
        l = l * rescale + p;
        for (int x = 0; x < HEAD_DIM; ++x) acc[x] = acc[x] * rescale + p * v_row[x];
        m = m_new;
    }
    const float inv_l = 1.0f / l;
    for (int x = 0; x < HEAD_DIM; ++x) o[item + (size_t)row * HEAD_DIM + x] = acc[x] * inv_l;
}
