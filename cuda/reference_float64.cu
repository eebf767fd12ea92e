/* The judge's own float64 reference on the GPU: exact attention, not a variant under test.
 *
 * O = softmax(Q K^T / sqrt(d)) V for a group of batch items and a slab of query rows, every product and sum
 * in double (the inputs are float32, widened), in three steps as the CPU reference takes them
 * (attnbench/cases/reference.py): the scores, each row's maximum subtracted before exp and its sum, then
 * the weighted values divided by that sum. It includes nothing and shares no code with cuda/'s variants, so
 * a mistake in their helpers cannot hide in the yardstick. Any N and any d: plain 16 x 16 shared-memory
 * tiles with bounds checks, written for being right, fast enough (float64 GEMM tiles) to beat the host.
 *
 * Layout of a call: q is items x rows x d, k and v are items x n x d (float32, row-major), scores is
 * items x rows x n (double, overwritten by the softmax's numerators), sums is items x rows, out is
 * items x rows x d (double; the host rounds it to float32 as the CPU path does). */

#define TILE 16

extern "C" __global__ void reference_scores(const float* __restrict__ q, const float* __restrict__ k,
                                            double* __restrict__ scores, int rows, int n, int d, double scale) {
    __shared__ double q_tile[TILE][TILE + 1];
    __shared__ double k_tile[TILE][TILE + 1];
    const int item = blockIdx.z;
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int key = blockIdx.x * TILE + threadIdx.x;
    const int key_loaded = blockIdx.x * TILE + threadIdx.y;
    const float* q_item = q + (size_t)item * rows * d;
    const float* k_item = k + (size_t)item * n * d;
    double dot = 0.0;
    for (int x0 = 0; x0 < d; x0 += TILE) {
        const int x = x0 + threadIdx.x;
        q_tile[threadIdx.y][threadIdx.x] = (row < rows && x < d) ? (double)q_item[(size_t)row * d + x] : 0.0;
        k_tile[threadIdx.y][threadIdx.x] = (key_loaded < n && x < d) ? (double)k_item[(size_t)key_loaded * d + x] : 0.0;
        __syncthreads();
        for (int t = 0; t < TILE; ++t) dot += q_tile[threadIdx.y][t] * k_tile[threadIdx.x][t];
        __syncthreads();
    }
    if (row < rows && key < n) scores[((size_t)item * rows + row) * n + key] = dot * scale;
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

extern "C" __global__ void reference_weighted_values(const double* __restrict__ weights, const float* __restrict__ v,
                                                     const double* __restrict__ sums, double* __restrict__ out,
                                                     int rows, int n, int d) {
    __shared__ double w_tile[TILE][TILE + 1];
    __shared__ double v_tile[TILE][TILE + 1];
    const int item = blockIdx.z;
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int column = blockIdx.x * TILE + threadIdx.x;
    const double* w_item = weights + (size_t)item * rows * n;
    const float* v_item = v + (size_t)item * n * d;
    double acc = 0.0;
    for (int j0 = 0; j0 < n; j0 += TILE) {
        const int j = j0 + threadIdx.x;
        const int j_loaded = j0 + threadIdx.y;
        w_tile[threadIdx.y][threadIdx.x] = (row < rows && j < n) ? w_item[(size_t)row * n + j] : 0.0;
        v_tile[threadIdx.y][threadIdx.x] = (j_loaded < n && column < d) ? (double)v_item[(size_t)j_loaded * d + column] : 0.0;
        __syncthreads();
        for (int t = 0; t < TILE; ++t) acc += w_tile[threadIdx.y][t] * v_tile[t][threadIdx.x];
        __syncthreads();
    }
    if (row < rows && column < d) out[((size_t)item * rows + row) * d + column] = acc / sums[(size_t)item * rows + row];
}
