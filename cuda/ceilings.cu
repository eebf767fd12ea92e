// Micro-benchmarks of this GPU's ceilings, for `attnbench ceilings` (not a variant).
// Each kernel keeps its work in registers (no memory traffic in the loop) and writes one value per
// thread at the end so that nothing is optimised away. Work per launch:
//   ceiling_ffma      2 * FFMA_CHAINS * iters FLOPs per thread (independent fmaf chains)
//   ceiling_mma_tf32  2 * 16 * 8 * 8 * MMA_CHAINS * iters FLOPs per warp (mma.sync m16n8k8 tf32, sm_80+)
//   ceiling_ex2       EX2_CHAINS * iters MUFU.EX2 per thread (ex2.approx.ftz.f32)
//   ceiling_copy      reads and writes n float4s (DRAM bandwidth with buffers far beyond L2)
//   ceiling_wgmma_tf32  2 * 64 * 128 * 8 * WGMMA_BATCH * iters FLOPs per warpgroup (sm_90a only)
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

// wgmma (sm_90a only): m64n128k8 TF32 with both operands from shared memory, no swizzle. Every
// address the descriptors can reach lies inside the 6 KB of operands whichever way the hardware reads
// the leading / stride byte offsets; the values are not checked, the instruction count is what counts.
// Work: 2 * 64 * 128 * 8 FLOPs per warpgroup per wgmma, WGMMA_BATCH per commit group.
#define WGMMA_BATCH 8
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ unsigned long long wgmma_desc(const void* smem, unsigned lbo, unsigned sbo) {
    const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    unsigned long long desc = (addr & 0x3FFFF) >> 4;
    desc |= (unsigned long long)((lbo & 0x3FFFF) >> 4) << 16;
    desc |= (unsigned long long)((sbo & 0x3FFFF) >> 4) << 32;
    return desc;  // base offset 0, no swizzle (bits 62-63 = 0)
}
#endif

extern "C" __global__ void ceiling_wgmma_tf32(float* out, int iters) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ __align__(128) float a_tile[64 * 8];   // 8 groups of 8 rows x 2 core matrices of 8 x 4
    __shared__ __align__(128) float b_tile[128 * 8];
    for (int i = threadIdx.x; i < 64 * 8; i += blockDim.x) a_tile[i] = 1.0f + 0.001f * (i & 7);
    for (int i = threadIdx.x; i < 128 * 8; i += blockDim.x) b_tile[i] = 0.5f + 0.001f * (i & 7);
    __syncthreads();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // make the stores visible to wgmma
    const unsigned long long da = wgmma_desc(a_tile, 128, 256);
    const unsigned long long db = wgmma_desc(b_tile, 128, 256);
    float d[64];
#pragma unroll
    for (int j = 0; j < 64; ++j) d[j] = 0.0f;
    for (int i = 0; i < iters; ++i) {
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int u = 0; u < WGMMA_BATCH; ++u) {
            asm volatile(
                "{\n"
                ".reg .pred p;\n"
                "setp.ne.b32 p, %66, 0;\n"
                "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
                "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n"
                "}\n"
              : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
              : "l"(da), "l"(db), "r"(1));
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < 64; ++j) sum += d[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
#else
    out[blockIdx.x * blockDim.x + threadIdx.x] = 0.0f;  // wgmma needs sm_90a
#endif
}
