// Micro-benchmarks of this GPU's ceilings, for `attnbench ceilings` (not a variant).
// Each kernel keeps its work in registers (no memory traffic in the loop) and writes one value per
// thread at the end so that nothing is optimised away. Work per launch:
//   ceiling_ffma      2 * FFMA_CHAINS * iters FLOPs per thread (independent fmaf chains)
//   ceiling_mma_tf32  2 * 16 * 8 * 8 * MMA_CHAINS * iters FLOPs per warp (mma.sync m16n8k8 tf32, sm_80+)
//   ceiling_ex2       EX2_CHAINS * iters MUFU.EX2 per thread (ex2.approx.ftz.f32)
//   ceiling_copy      reads and writes n float4s (DRAM bandwidth with buffers far beyond L2)
#define FFMA_CHAINS 8
#define MMA_CHAINS 4
#define EX2_CHAINS 8

extern "C" __global__ void ceiling_ffma(float* out, int iters, float a, float b) {
    float x[FFMA_CHAINS];
#pragma unroll
    for (int j = 0; j < FFMA_CHAINS; ++j) x[j] = threadIdx.x * 1e-3f + j;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < 16; ++u) {
#pragma unroll
            for (int j = 0; j < FFMA_CHAINS; ++j) x[j] = fmaf(x[j], a, b);
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < FFMA_CHAINS; ++j) sum += x[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

extern "C" __global__ void ceiling_mma_tf32(float* out, int iters) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned lane = threadIdx.x & 31;
    unsigned a[4], b[2];
#pragma unroll
    for (int j = 0; j < 4; ++j) a[j] = __float_as_uint(1.0f + 0.001f * (lane + j));
    b[0] = __float_as_uint(0.5f + 0.001f * lane);
    b[1] = __float_as_uint(0.25f + 0.001f * lane);
    float c[MMA_CHAINS][4];
#pragma unroll
    for (int k = 0; k < MMA_CHAINS; ++k)
#pragma unroll
        for (int j = 0; j < 4; ++j) c[k][j] = 0.0f;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
#pragma unroll
            for (int k = 0; k < MMA_CHAINS; ++k) {
                asm volatile(
                    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                    "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                    : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
                    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
            }
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < MMA_CHAINS; ++k) sum += c[k][0] + c[k][1] + c[k][2] + c[k][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
#else
    out[blockIdx.x * blockDim.x + threadIdx.x] = 0.0f;  // no tf32 tensor cores before sm_80
#endif
}

extern "C" __global__ void ceiling_ex2(float* out, int iters) {
    float x[EX2_CHAINS];
#pragma unroll
    for (int j = 0; j < EX2_CHAINS; ++j) x[j] = -1e-3f * (threadIdx.x + j);
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < 16; ++u) {
#pragma unroll
            for (int j = 0; j < EX2_CHAINS; ++j) {
                // x <- 2^(-x) stays in [0.5, 1]: one MUFU.EX2 with a negated operand, no overflow
                asm volatile("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(x[j]) : "f"(-x[j]));
            }
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < EX2_CHAINS; ++j) sum += x[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

extern "C" __global__ void ceiling_copy(const float4* __restrict__ src, float4* __restrict__ dst, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}
