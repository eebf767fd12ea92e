/* The judge's own float64 reference on the GPU: exact attention, not a variant under test.
 *
 * O = softmax(Q K^T / sqrt(d)) V for a group of batch items and a slab of query rows, every product and sum
 * in double (the inputs are float32, widened), in three steps as the CPU reference takes them
 * (attnbench/cases/reference.py): the scores, each row's maximum subtracted before exp and its sum, then
 * the weighted values divided by that sum. It includes nothing and shares no code with cuda/'s variants, so
 * a mistake in their helpers cannot hide in the yardstick. Any N and any d, with bounds checks.
 *
 * The two products are plain float64 GEMM tiles: a block of 16 x 16 threads makes a 64 x 64 tile, each thread
 * a 4 x 4 of it (rows ty + 16 i, columns tx + 16 j, so a warp's stores are contiguous), over steps of 16 of
 * the inner dimension held in shared memory. Four by four outputs a thread take 8 shared loads for 16
 * multiply-adds (one tile a thread took 2 for 1): the reference is bound by the float64 units and memory,
 * not by shared-memory loads (t22 in about a tenth of the time a 16 x 16 tile took).
 *
 * Layout of a call: qkv holds the group's items as the testcase does, item i's Q, K and V at
 * qkv + i * item_stride + {0, 1, 2} * n * d (float32, row-major); `first_row` is the slab's first query row.
 * scores is items x rows x n (double, overwritten by the softmax's numerators), sums is items x rows, partial
 * is splits x items x rows x d (double), out is items x rows x d, double, or float rounded to nearest even as
 * numpy rounds a float64 array into float32 (`as_float`). */

#define BLOCK 64
#define STEP 16
#define THREADS 256
#define PER_THREAD 4

/* One 64 x 64 tile of a = rows x inner, times b (inner x columns), read by the two loaders into the
 * transposed shared tiles a_tile[step][row] and b_tile[step][column]. */
#define MULTIPLY_TILES(acc, a_tile, b_tile)                                                     \
    _Pragma("unroll") for (int t = 0; t < STEP; ++t) {                                          \
        double a[PER_THREAD], b[PER_THREAD];                                                    \
        _Pragma("unroll") for (int i = 0; i < PER_THREAD; ++i) a[i] = a_tile[t][threadIdx.y + 16 * i]; \
        _Pragma("unroll") for (int j = 0; j < PER_THREAD; ++j) b[j] = b_tile[t][threadIdx.x + 16 * j]; \
        _Pragma("unroll") for (int i = 0; i < PER_THREAD; ++i)                                   \
            _Pragma("unroll") for (int j = 0; j < PER_THREAD; ++j) acc[i][j] += a[i] * b[j];    \
    }

extern "C" __global__ void __launch_bounds__(THREADS)
reference_scores(const float* __restrict__ qkv, double* __restrict__ scores, int rows, int n, int d,
                 long long item_stride, int first_row, double scale) {
    __shared__ double q_tile[STEP][BLOCK + 1];
    __shared__ double k_tile[STEP][BLOCK + 1];
    const int item = blockIdx.z;
    const int row0 = blockIdx.y * BLOCK;
    const int key0 = blockIdx.x * BLOCK;
    const int thread = threadIdx.y * 16 + threadIdx.x;
    const float* q_item = qkv + item * item_stride + (size_t)first_row * d;
    const float* k_item = qkv + item * item_stride + (size_t)n * d;
    double acc[PER_THREAD][PER_THREAD] = {};
    for (int x0 = 0; x0 < d; x0 += STEP) {
        for (int e = thread; e < BLOCK * STEP; e += THREADS) {
            const int r = e / STEP, x = x0 + e % STEP;
            q_tile[e % STEP][r] = (row0 + r < rows && x < d) ? (double)q_item[(size_t)(row0 + r) * d + x] : 0.0;
            k_tile[e % STEP][r] = (key0 + r < n && x < d) ? (double)k_item[(size_t)(key0 + r) * d + x] : 0.0;
        }
        __syncthreads();
        MULTIPLY_TILES(acc, q_tile, k_tile)
        __syncthreads();
    }
    for (int i = 0; i < PER_THREAD; ++i) {
        const int row = row0 + threadIdx.y + 16 * i;
        for (int j = 0; j < PER_THREAD; ++j) {
            const int key = key0 + threadIdx.x + 16 * j;
            if (row < rows && key < n) scores[((size_t)item * rows + row) * n + key] = acc[i][j] * scale;
        }
    }
}

/* One block per row (of every item): its maximum, then exp(score - maximum) in place and their sum. */
extern "C" __global__ void reference_softmax(double* __restrict__ scores, double* __restrict__ sums, int n) {
    __shared__ double part[256];
    double* row = scores + (size_t)blockIdx.x * n;
    double largest = -INFINITY;
    for (int j = threadIdx.x; j < n; j += blockDim.x) largest = fmax(largest, row[j]);
    part[threadIdx.x] = largest;
    __syncthreads();
    for (int width = blockDim.x / 2; width > 0; width /= 2) {
        if (threadIdx.x < width) part[threadIdx.x] = fmax(part[threadIdx.x], part[threadIdx.x + width]);
        __syncthreads();
    }
    largest = part[0];
    __syncthreads();
    double total = 0.0;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const double weight = exp(row[j] - largest);
        row[j] = weight;
        total += weight;
    }
    part[threadIdx.x] = total;
    __syncthreads();
    for (int width = blockDim.x / 2; width > 0; width /= 2) {
        if (threadIdx.x < width) part[threadIdx.x] += part[threadIdx.x + width];
        __syncthreads();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = part[0];
}

/* The weights times V over the keys [split * keys_per_split, + keys_per_split) of grid z's split: a partial
 * sum of each output element, added in order by reference_finish (a long slab of few rows spreads its keys
 * over more blocks than its 64-row tiles give: t29's 2048-row slab made 32 blocks for 132 SMs). */
extern "C" __global__ void __launch_bounds__(THREADS)
reference_weighted_values(const double* __restrict__ weights, const float* __restrict__ qkv,
                          double* __restrict__ partial, int rows, int n, int d, long long item_stride, int items,
                          int keys_per_split) {
    __shared__ double w_tile[STEP][BLOCK + 1];
    __shared__ double v_tile[STEP][BLOCK + 1];
    const int item = blockIdx.z % items;
    const int split = blockIdx.z / items;
    const int row0 = blockIdx.y * BLOCK;
    const int column0 = blockIdx.x * BLOCK;
    const int thread = threadIdx.y * 16 + threadIdx.x;
    const double* w_item = weights + (size_t)item * rows * n;
    const float* v_item = qkv + item * item_stride + 2 * (size_t)n * d;
    const int first_key = split * keys_per_split;
    const int end_key = min(n, first_key + keys_per_split);
    double acc[PER_THREAD][PER_THREAD] = {};
    for (int j0 = first_key; j0 < end_key; j0 += STEP) {
        for (int e = thread; e < BLOCK * STEP; e += THREADS) {
            const int r = e / STEP, j = j0 + e % STEP;
            w_tile[e % STEP][r] = (row0 + r < rows && j < end_key) ? w_item[(size_t)(row0 + r) * n + j] : 0.0;
            const int step = e / BLOCK, column = column0 + e % BLOCK;
            v_tile[step][e % BLOCK] = (j0 + step < end_key && column < d) ? (double)v_item[(size_t)(j0 + step) * d + column] : 0.0;
        }
        __syncthreads();
        MULTIPLY_TILES(acc, w_tile, v_tile)
        __syncthreads();
    }
    double* mine = partial + (size_t)split * items * rows * d;
    for (int i = 0; i < PER_THREAD; ++i) {
        const int row = row0 + threadIdx.y + 16 * i;
        for (int j = 0; j < PER_THREAD; ++j) {
            const int column = column0 + threadIdx.x + 16 * j;
            if (row < rows && column < d) mine[((size_t)item * rows + row) * d + column] = acc[i][j];
        }
    }
}

/* Each output element: its splits' partial sums added in split order (the same order every time), divided by
 * its row's sum of weights; double, or float rounded to nearest even (`as_float`). */
extern "C" __global__ void reference_finish(const double* __restrict__ partial, const double* __restrict__ sums,
                                            void* __restrict__ out, long long elements, int d, int splits,
                                            int as_float) {
    for (long long at = blockIdx.x * (long long)blockDim.x + threadIdx.x; at < elements;
         at += (long long)gridDim.x * blockDim.x) {
        double total = 0.0;
        for (int split = 0; split < splits; ++split) total += partial[split * elements + at];
        const double value = total / sums[at / d];
        if (as_float) ((float*)out)[at] = __double2float_rn(value);
        else ((double*)out)[at] = value;
    }
}
