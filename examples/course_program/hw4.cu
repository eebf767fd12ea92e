// hw4.cu: a whole course-style program: read the testcase, compute attention on the GPU, write O.
//
// Build as the course does (GTX 1080; sm_61 needs CUDA 12 or older), or for the GPU you have:
//   nvcc -std=c++11 -O3 -Xptxas=-v -arch=sm_61 -lm -o hw4 hw4.cu
//   nvcc -std=c++11 -O3 -arch=native -lm -o hw4 hw4.cu
// Run and judge:
//   ./hw4 t01.in t01.out
//   attnbench judge ./hw4 --cases t01-t10
//
// Input: int32 B, N, d, then Q_i, K_i, V_i (N*d float32 each) per batch item; output: B*N*d float32.
// The program reads Q, K and V into three separate arrays (the layout most course kernels take),
// runs one flash-attention kernel (one thread per query row, K/V tiles in shared memory, online
// softmax) for d = 32 or 64 (the course's head dimensions), and writes O. Every CUDA call is
// checked, so a failure is one line on stderr and exit status 1.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "hw4: %s failed: %s\n", #call, cudaGetErrorString(err_));      \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

constexpr int BR = 64;  // query rows per block, one per thread
constexpr int BC = 32;  // keys per shared-memory tile

template <int D>
__global__ void flash_attention(const float* __restrict__ q, const float* __restrict__ k,
                                const float* __restrict__ v, float* __restrict__ o, int N,
                                float scale_log2) {
    __shared__ float k_tile[BC][D];
    __shared__ float v_tile[BC][D];
    const int tx = threadIdx.x;
    const int row = blockIdx.x * BR + tx;
    const size_t item = (size_t)blockIdx.y * N * D;
    const bool active = row < N;

    float q_row[D], acc[D];
#pragma unroll
    for (int x = 0; x < D; ++x) {
        q_row[x] = active ? q[item + (size_t)row * D + x] * scale_log2 : 0.0f;
        acc[x] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int j0 = 0; j0 < N; j0 += BC) {
        for (int i = tx; i < BC * D; i += BR) {
            const int r = i / D, c = i % D;
            const bool key = j0 + r < N;
            k_tile[r][c] = key ? k[item + (size_t)(j0 + r) * D + c] : 0.0f;
            v_tile[r][c] = key ? v[item + (size_t)(j0 + r) * D + c] : 0.0f;
        }
        __syncthreads();
        const int cols = min(BC, N - j0);
        float s[BC];
        float tile_max = -INFINITY;
#pragma unroll
        for (int c = 0; c < BC; ++c) {
            float dot = 0.0f;
#pragma unroll
            for (int x = 0; x < D; ++x) dot += q_row[x] * k_tile[c][x];
            s[c] = c < cols ? dot : -INFINITY;
            tile_max = fmaxf(tile_max, s[c]);
        }
        const float m_new = fmaxf(m, tile_max);
        const float rescale = exp2f(m - m_new);
        l *= rescale;
#pragma unroll
        for (int x = 0; x < D; ++x) acc[x] *= rescale;
#pragma unroll
        for (int c = 0; c < BC; ++c) {
            const float p = exp2f(s[c] - m_new);
            l += p;
#pragma unroll
            for (int x = 0; x < D; ++x) acc[x] += p * v_tile[c][x];
        }
        m = m_new;
        __syncthreads();
    }
    if (active) {
        const float inv_l = 1.0f / l;
#pragma unroll
        for (int x = 0; x < D; ++x) o[item + (size_t)row * D + x] = acc[x] * inv_l;
    }
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s INPUT OUTPUT\n", argv[0]);
        return 2;
    }
    FILE* in = fopen(argv[1], "rb");
    if (!in) {
        fprintf(stderr, "hw4: cannot open %s\n", argv[1]);
        return 1;
    }
    int B, N, d;
    if (fread(&B, sizeof(int), 1, in) != 1 || fread(&N, sizeof(int), 1, in) != 1 ||
        fread(&d, sizeof(int), 1, in) != 1) {
        fprintf(stderr, "hw4: %s has no header\n", argv[1]);
        return 1;
    }
    if (d != 32 && d != 64) {
        fprintf(stderr, "hw4: d = %d; this program is built for d = 32 or 64\n", d);
        return 1;
    }
    const size_t item = (size_t)N * d, total = (size_t)B * item;
    std::vector<float> q(total), k(total), v(total), o(total);
    for (int b = 0; b < B; ++b) {  // Q_b, K_b, V_b follow one another in the file
        if (fread(&q[b * item], sizeof(float), item, in) != item ||
            fread(&k[b * item], sizeof(float), item, in) != item ||
            fread(&v[b * item], sizeof(float), item, in) != item) {
            fprintf(stderr, "hw4: %s is truncated\n", argv[1]);
            return 1;
        }
    }
    fclose(in);

    float *dq, *dk, *dv, *dout;
    CHECK(cudaMalloc(&dq, total * sizeof(float)));
    CHECK(cudaMalloc(&dk, total * sizeof(float)));
    CHECK(cudaMalloc(&dv, total * sizeof(float)));
    CHECK(cudaMalloc(&dout, total * sizeof(float)));
    CHECK(cudaMemcpy(dq, q.data(), total * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dk, k.data(), total * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dv, v.data(), total * sizeof(float), cudaMemcpyHostToDevice));
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)d);
    for (int b0 = 0; b0 < B; b0 += 65535) {  // grid.y is at most 65535 batch items per launch
        const int count = B - b0 < 65535 ? B - b0 : 65535;
        const size_t offset = (size_t)b0 * item;
        dim3 grid((N + BR - 1) / BR, count);
        if (d == 32)
            flash_attention<32><<<grid, BR>>>(dq + offset, dk + offset, dv + offset, dout + offset, N, scale_log2);
        else
            flash_attention<64><<<grid, BR>>>(dq + offset, dk + offset, dv + offset, dout + offset, N, scale_log2);
        CHECK(cudaGetLastError());
    }
    CHECK(cudaMemcpy(o.data(), dout, total * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(dq));
    CHECK(cudaFree(dk));
    CHECK(cudaFree(dv));
    CHECK(cudaFree(dout));

    FILE* out = fopen(argv[2], "wb");
    if (!out || fwrite(o.data(), sizeof(float), total, out) != total || fclose(out) != 0) {
        fprintf(stderr, "hw4: cannot write %s\n", argv[2]);
        return 1;
    }
    return 0;
}
