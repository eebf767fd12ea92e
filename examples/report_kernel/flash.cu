// flash.cu: a report-style flash attention kernel with separate q, k, v pointers, as a course
// report would write it, run by attnbench unchanged. Its launch facts are in attnbench.toml here.
//
//   cd examples/report_kernel
//   attnbench run t10 out.bin --variant flash --check
//   attnbench compare --variants flash,qreg,tf32x3,torch --cases t10,t22
//
// One block of BR threads per BR query rows of one batch item; each thread owns one row, with its
// Q row (pre-scaled by log2(e)/sqrt(d)) and its output accumulator in registers. K and V stream
// through shared memory in tiles of BC rows; each tile gets an online-softmax update: the tile's
// scores, the new running max, one rescale of the accumulator, then exp2 weights times V.
// HEAD_DIM is d, compiled in; d up to 64 keeps the row arrays in registers. Any N.

#ifndef HEAD_DIM
#error "HEAD_DIM is defined by attnbench from the testcase's d (defines in attnbench.toml)"
#endif
#define BR 64  // query rows per block = threads per block (block in attnbench.toml)
#define BC 32  // keys per shared-memory tile

extern "C" __global__ void flash_separate(const float* __restrict__ q, const float* __restrict__ k,
                                          const float* __restrict__ v, float* __restrict__ o,
                                          int N, float scale_log2) {
    __shared__ float k_tile[BC][HEAD_DIM];
    __shared__ float v_tile[BC][HEAD_DIM];
    const int tx = threadIdx.x;
    const int row = blockIdx.x * BR + tx;
    const size_t item = (size_t)blockIdx.y * N * HEAD_DIM;
    const bool active = row < N;  // inactive threads still help load the tiles

    float q_row[HEAD_DIM], acc[HEAD_DIM];
#pragma unroll
    for (int x = 0; x < HEAD_DIM; ++x) {
        q_row[x] = active ? q[item + (size_t)row * HEAD_DIM + x] * scale_log2 : 0.0f;
        acc[x] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;

    for (int j0 = 0; j0 < N; j0 += BC) {
        for (int i = tx; i < BC * HEAD_DIM; i += BR) {  // consecutive threads, consecutive floats
            const int r = i / HEAD_DIM, c = i % HEAD_DIM;
            const bool key = j0 + r < N;
            k_tile[r][c] = key ? k[item + (size_t)(j0 + r) * HEAD_DIM + c] : 0.0f;
            v_tile[r][c] = key ? v[item + (size_t)(j0 + r) * HEAD_DIM + c] : 0.0f;
        }
        __syncthreads();
        const int cols = min(BC, N - j0);
        float s[BC];
        float tile_max = -INFINITY;
#pragma unroll
        for (int c = 0; c < BC; ++c) {
            float dot = 0.0f;
#pragma unroll
            for (int x = 0; x < HEAD_DIM; ++x) dot += q_row[x] * k_tile[c][x];
            s[c] = c < cols ? dot : -INFINITY;  // keys past N weigh exp2(-inf) = 0
            tile_max = fmaxf(tile_max, s[c]);
        }
        const float m_new = fmaxf(m, tile_max);
        const float rescale = exp2f(m - m_new);  // 0 on the first tile, where m = -inf
        l *= rescale;
#pragma unroll
        for (int x = 0; x < HEAD_DIM; ++x) acc[x] *= rescale;
#pragma unroll
        for (int c = 0; c < BC; ++c) {
            const float p = exp2f(s[c] - m_new);
            l += p;
#pragma unroll
            for (int x = 0; x < HEAD_DIM; ++x) acc[x] += p * v_tile[c][x];
        }
        m = m_new;
        __syncthreads();  // the tile is read by all before the next one overwrites it
    }
    if (active) {
        const float inv_l = 1.0f / l;
#pragma unroll
        for (int x = 0; x < HEAD_DIM; ++x) o[item + (size_t)row * HEAD_DIM + x] = acc[x] * inv_l;
    }
}
