// fresh_samples: not a variant. attnbench's own kernels around every timed sample (attnbench/bench/fresh_samples.py):
// fill an input tensor with fresh values from a seed, scan the output for NaN and Inf, compute sampled output rows
// exactly in float64, and digest each output row (the determinism check).
//
// A tensor (Q, K or V) is B items of N*d floats, item b at first + b*item_stride floats: the interleaved layout's
// item_stride is 3*N*d, the separate layout's N*d. Element e of a tensor counts over all items (b*N*d + i*d + c).

#define FRESH_THREADS 256

// SplitMix64's output function (Steele, Lea and Flood, 2014): counter-based, so element e's value is a pure
// function of (seed, e), made again from the seed alone; any bit of the input changes half the output's bits.
__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ float fresh_value(unsigned long long seed, unsigned long long e, float low, float span) {
    const unsigned long long h = mix64(seed + (e + 1ull) * 0x9E3779B97F4A7C15ull);
    const float unit = (float)(h >> 40) * 5.9604644775390625e-8f;  // 24 bits: uniform in [0, 1), exact in float32
    return __fmaf_rn(span, unit, low);  // explicit: the same bits whatever the compiler would contract
}

extern "C" __global__ void fill_fresh(float* __restrict__ first, long long item_stride, int B, long long per_item,
                                      unsigned long long seed, float low, float span) {
    for (int b = blockIdx.y; b < B; b += gridDim.y) {
        float* item = first + (size_t)b * item_stride;
        for (long long r = (long long)blockIdx.x * FRESH_THREADS + threadIdx.x; r < per_item;
             r += (long long)gridDim.x * FRESH_THREADS) {
            item[r] = fresh_value(seed, (unsigned long long)b * per_item + r, low, span);
        }
    }
}

// totals[0] += NaN or Inf elements of out[0, n); totals[1] = the smallest index of one (start it at ~0).
extern "C" __global__ void scan_nonfinite(const float* __restrict__ out, long long n,
                                          unsigned long long* __restrict__ totals) {
    unsigned long long bad = 0, first_bad = ~0ull;
    for (long long e = (long long)blockIdx.x * FRESH_THREADS + threadIdx.x; e < n;
         e += (long long)gridDim.x * FRESH_THREADS) {
        if (!isfinite(out[e])) {
            if (!bad) first_bad = (unsigned long long)e;
            ++bad;
        }
    }
    if (bad) {
        atomicAdd(&totals[0], bad);
        atomicMin(&totals[1], first_bad);
    }
}

// One block per sampled row: the exact softmax(q k^T * scale) v of row rows[slot] (= b*N + i) in float64, then the
// row of `out` held to |out - exact| <= atol + rtol*|exact| (NaN fails). results[5*slot ...] = failing elements,
// the worst column, its |error| (inf for NaN), the value there, the exact value there.
// Dynamic shared memory: (d + FRESH_THREADS + d*G) doubles, G = max(1, FRESH_THREADS / d) groups.
extern "C" __global__ void exact_rows(const float* __restrict__ q, const float* __restrict__ k,
                                      const float* __restrict__ v, long long item_stride, int N, int d,
                                      const long long* __restrict__ rows, const float* __restrict__ out, double scale,
                                      float atol, float rtol, double* __restrict__ results) {
    extern __shared__ double shared[];
    __shared__ double reduce[FRESH_THREADS];
    const int G = d >= FRESH_THREADS ? 1 : FRESH_THREADS / d;
    double* q_row = shared;
    double* p = q_row + d;
    double* acc = p + FRESH_THREADS;
    const long long row = rows[blockIdx.x];
    const long long b = row / N, i = row - b * N;
    const float* q_item = q + (size_t)b * item_stride + (size_t)i * d;
    const float* k_item = k + (size_t)b * item_stride;
    const float* v_item = v + (size_t)b * item_stride;
    const int t = threadIdx.x;
    for (int c = t; c < d; c += FRESH_THREADS) q_row[c] = (double)q_item[c];
    for (int x = t; x < d * G; x += FRESH_THREADS) acc[x] = 0.0;
    __syncthreads();

    double best = -INFINITY;  // pass 1: the row's largest score
    for (int j = t; j < N; j += FRESH_THREADS) {
        const float* k_row = k_item + (size_t)j * d;
        double s = 0.0;
        for (int c = 0; c < d; ++c) s = fma(q_row[c], (double)k_row[c], s);
        best = fmax(best, s * scale);
    }
    reduce[t] = best;
    __syncthreads();
    for (int w = FRESH_THREADS / 2; w > 0; w >>= 1) {
        if (t < w) reduce[t] = fmax(reduce[t], reduce[t + w]);
        __syncthreads();
    }
    const double m = reduce[0];
    __syncthreads();

    double sum = 0.0;  // pass 2: tiles of FRESH_THREADS keys, their weights in p, then the weighted sum of V's rows
    for (int j0 = 0; j0 < N; j0 += FRESH_THREADS) {
        const int tile = min(FRESH_THREADS, N - j0);
        if (t < tile) {
            const float* k_row = k_item + (size_t)(j0 + t) * d;
            double s = 0.0;
            for (int c = 0; c < d; ++c) s = fma(q_row[c], (double)k_row[c], s);
            p[t] = exp(s * scale - m);
            sum += p[t];
        }
        __syncthreads();
        for (int x = t; x < d * G; x += FRESH_THREADS) {
            const int c = x % d, g = x / d;
            double a = acc[x];
            for (int jj = g; jj < tile; jj += G) a = fma(p[jj], (double)v_item[(size_t)(j0 + jj) * d + c], a);
            acc[x] = a;
        }
        __syncthreads();
    }
    reduce[t] = sum;
    __syncthreads();
    for (int w = FRESH_THREADS / 2; w > 0; w >>= 1) {
        if (t < w) reduce[t] += reduce[t + w];
        __syncthreads();
    }
    const double total = reduce[0];
    for (int c = t; c < d; c += FRESH_THREADS) {
        double o = 0.0;
        for (int g = 0; g < G; ++g) o += acc[c + d * g];
        q_row[c] = o / total;  // q_row is free now: the exact row
    }
    __syncthreads();
    if (t == 0) {
        const float* got_row = out + (size_t)row * d;
        double failing = 0.0, worst = -1.0;
        int worst_col = 0;
        for (int c = 0; c < d; ++c) {
            const double want = q_row[c], got = (double)got_row[c];
            const double diff = fabs(got - want);
            const double bound = (double)atol + (double)rtol * fabs(want);
            const double err = isfinite(diff) ? diff : INFINITY;
            if (!(diff <= bound)) failing += 1.0;
            if (err > worst) { worst = err; worst_col = c; }
        }
        double* r = results + 5 * (size_t)blockIdx.x;
        r[0] = failing;
        r[1] = (double)worst_col;
        r[2] = worst;
        r[3] = (double)got_row[worst_col];
        r[4] = q_row[worst_col];
    }
}

// digests[r] = a hash of the bits of output row r (rows of d floats): two launches on one input must agree.
extern "C" __global__ void row_digest(const float* __restrict__ out, long long rows, int d,
                                      unsigned long long* __restrict__ digests) {
    for (long long r = (long long)blockIdx.x * FRESH_THREADS + threadIdx.x; r < rows;
         r += (long long)gridDim.x * FRESH_THREADS) {
        const unsigned int* row = (const unsigned int*)(out + (size_t)r * d);
        unsigned long long h = 0x243F6A8885A308D3ull;
        for (int c = 0; c < d; ++c) h = mix64(h ^ (unsigned long long)row[c]);
        digests[r] = h;
    }
}
