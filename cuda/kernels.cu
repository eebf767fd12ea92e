// kernels: report 004 §4.2.1 "Kernel Baseline". The course's sequential blocked flash algorithm
// (br = bc = 32, online softmax across K/V tiles) with each of its five steps turned into a kernel:
// QKDotAndScalar, RowMax, MinusMaxAndExp, RowSum, UpdateMiLiOi. The host loops over the K/V tiles j;
// each launch does ONE step for tile j over all batch items and all query rows at once, so a pass is
// 5 * ceil(N/32) launches and every intermediate (S tile, tile max/sum, running m and l, O) makes a
// round trip through global memory between launches.
//
// The registry launches the five kernels in turn for each tile (its `steps` loop, step = j), so a
// profiler shows each step under the report's name.
//
// Grid (ceil(N/32), B), block (32, 32): threadIdx.y picks the query row of the tile, threadIdx.x the
// K/V column (or a stride of head-dimension columns in UpdateMiLiOi). A warp is one query row.
// Scores are kept in the log2 domain (scaled by log2(e)/sqrt(d)) so exp2f gives exp exactly as the
// course's exp(s - m) would. Constraints: any N >= 1 (columns past N masked to -inf, rows past N
// skipped), any d >= 1.
#include "common.cuh"

#define TILE 32  // br = bc = 32, as in the course's sequential code

struct KernelsArgs {
    const float* q;     // this batch item's Q
    const float* k;     // ... K
    const float* v;     // ... V
    float* o;           // ... O
    float* scores;      // this item's S / P tile, N x TILE
    float* tile_max;    // this item's row max of the current tile (m_ij), N
    float* tile_sum;    // row sum of the current tile's exponentials (l_ij), N
    float* row_max;     // running max m_i, N
    float* row_sum;     // running sum l_i, N
    int N, d, row, lane;
};

__device__ __forceinline__ KernelsArgs kernels_args(const float* qkv, float* out, int N, int d, float* scores,
                                                    float* tile_max, float* tile_sum, float* row_max,
                                                    float* row_sum) {
    const int b = blockIdx.y;
    KernelsArgs a;
    a.q = qkv + qkv_item_offset(b, N, d);
    a.k = a.q + (size_t)N * d;
    a.v = a.k + (size_t)N * d;
    a.o = out + out_item_offset(b, N, d);
    a.scores = scores + (size_t)b * N * TILE;
    a.tile_max = tile_max + (size_t)b * N;
    a.tile_sum = tile_sum + (size_t)b * N;
    a.row_max = row_max + (size_t)b * N;
    a.row_sum = row_sum + (size_t)b * N;
    a.N = N;
    a.d = d;
    a.row = blockIdx.x * TILE + threadIdx.y;
    a.lane = threadIdx.x;
    return a;
}

// S_ij = Q_i K_j^T * scalar, one thread per score; columns past N get -inf so they vanish in exp.
__device__ void qk_dot_and_scalar(const KernelsArgs& a, int j, float scale_log2) {
    const int col = j * TILE + a.lane;
    float s = ATTN_NEG_INF;
    if (col < a.N) {
        const float* q_row = a.q + (size_t)a.row * a.d;
        const float* k_row = a.k + (size_t)col * a.d;
        float dot = 0.0f;
        for (int x = 0; x < a.d; ++x) dot += q_row[x] * k_row[x];
        s = dot * scale_log2;
    }
    a.scores[(size_t)a.row * TILE + a.lane] = s;
}

// m_ij = max over the tile's columns. Column j*32 < N always, so m_ij is finite.
__device__ void row_max_step(const KernelsArgs& a) {
    const float m = warp_reduce_max(a.scores[(size_t)a.row * TILE + a.lane]);
    if (a.lane == 0) a.tile_max[a.row] = m;
}

// P_ij = exp(S_ij - m_ij), in place.
__device__ void minus_max_and_exp(const KernelsArgs& a) {
    float* s = a.scores + (size_t)a.row * TILE + a.lane;
    *s = exp2f(*s - a.tile_max[a.row]);
}

// l_ij = row sum of P_ij.
__device__ void row_sum_step(const KernelsArgs& a) {
    const float l = warp_reduce_sum(a.scores[(size_t)a.row * TILE + a.lane]);
    if (a.lane == 0) a.tile_sum[a.row] = l;
}

// m_i, l_i, O_i updated as in the course: O stays normalised by l after every tile.
// Tile 0 starts from m = -inf, l = 0, O = 0 without reading the (uninitialised) buffers.
__device__ void update_mi_li_oi(const KernelsArgs& a, int j) {
    const float m_old = j == 0 ? ATTN_NEG_INF : a.row_max[a.row];
    const float l_old = j == 0 ? 0.0f : a.row_sum[a.row];
    const float m_ij = a.tile_max[a.row], l_ij = a.tile_sum[a.row];
    const float m_new = fmaxf(m_old, m_ij);  // finite: m_ij is
    const float old_weight = l_old * exp2f(m_old - m_new);
    const float new_weight = exp2f(m_ij - m_new);
    const float l_new = old_weight + new_weight * l_ij;

    const int col0 = j * TILE;
    const int valid_cols = min(TILE, a.N - col0);  // V rows past N are not read
    const float* p = a.scores + (size_t)a.row * TILE;
    const float* v = a.v + (size_t)col0 * a.d;
    float* o = a.o + (size_t)a.row * a.d;
    for (int x = a.lane; x < a.d; x += TILE) {
        float pv = 0.0f;
        for (int y = 0; y < valid_cols; ++y) pv += p[y] * v[(size_t)y * a.d + x];
        const float o_old = j == 0 ? 0.0f : o[x];
        o[x] = (old_weight * o_old + new_weight * pv) / l_new;
    }
    __syncwarp();  // every lane has read m_old, l_old before lane 0 overwrites them
    if (a.lane == 0) {
        a.row_max[a.row] = m_new;
        a.row_sum[a.row] = l_new;
    }
}

#define KERNELS_PARAMS                                                                                  \
    const float *qkv, float *out, int N, int d, float scale_log2, int step, float *scores, float *tile_max, \
        float *tile_sum, float *row_max, float *row_sum
#define KERNELS_ARGS kernels_args(qkv, out, N, d, scores, tile_max, tile_sum, row_max, row_sum)

// The five steps, launched in this order for each K/V tile j (step = j).
extern "C" __global__ void __launch_bounds__(TILE * TILE) QKDotAndScalar(KERNELS_PARAMS) {
    const KernelsArgs a = KERNELS_ARGS;
    if (a.row < N) qk_dot_and_scalar(a, step, scale_log2);
}
extern "C" __global__ void __launch_bounds__(TILE * TILE) RowMax(KERNELS_PARAMS) {
    const KernelsArgs a = KERNELS_ARGS;
    if (a.row < N) row_max_step(a);
}
extern "C" __global__ void __launch_bounds__(TILE * TILE) MinusMaxAndExp(KERNELS_PARAMS) {
    const KernelsArgs a = KERNELS_ARGS;
    if (a.row < N) minus_max_and_exp(a);
}
extern "C" __global__ void __launch_bounds__(TILE * TILE) RowSum(KERNELS_PARAMS) {
    const KernelsArgs a = KERNELS_ARGS;
    if (a.row < N) row_sum_step(a);
}
extern "C" __global__ void __launch_bounds__(TILE * TILE) UpdateMiLiOi(KERNELS_PARAMS) {
    const KernelsArgs a = KERNELS_ARGS;
    if (a.row < N) update_mi_li_oi(a, step);
}
