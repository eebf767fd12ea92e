// gemmwg3x: gemmtc's materialised attention (S = Q K^T, row softmax, O = P V, each GEMM an exact 3xTF32
// product of our own, no BLAS) with the GEMMs on Hopper warpgroup MMA instead of mma.sync.
//
// Technique (beyond gemmtc): the operands are split once, by pre-passes, into big/small TF32 halves (x = big
// + small; small*big + big*small + big*big, small*small dropped, all three into one FP32 accumulator,
// small terms first) and written as tiles already in the wgmma operand layout (K-major, 128-byte swizzle:
// wgmma takes tf32 K-major only, so V is transposed on the way). One tile of 128 rows by 32 k is one
// contiguous block [big | small], so a producer warpgroup (one lane) streams A and B blocks with two
// cp.async.bulk copies a stage into a shared-memory ring (full/empty mbarriers), and two consumer
// warpgroups of 64 rows each run wgmma m64n128k8 on it, a fresh accumulator per 32-k tile added into FP32
// registers, and store them once, at the end.
//
// Launches (grid z = batch item; tiles(x, t) = ceil(x / t); TM = TN = 128):
//   gemmwg3x_split_q(qkv, q_split, N, d)          grid (tiles(d, 32), tiles(N, TM)), block 256
//   gemmwg3x_split_k(qkv, k_split, N, d)          grid (tiles(d, 32), tiles(N, TN)), block 256
//   gemmwg3x_qkt(q_split, k_split, scores, N, d, scale_log2)   grid (tiles(N, TN), tiles(N, TM)), block 384
//   gemm_softmax_rows_padded(scores, N)           (softmax_rows.cuh; S rows of ld = N rounded up to 4)
//   gemmwg3x_split_p(scores, p_split, N)          grid (tiles(N, 32), tiles(N, TM)), block 256
//   gemmwg3x_split_vt(qkv, vt_split, N, d)        grid (tiles(N, 32), tiles(d, TN)), block 256
//   gemmwg3x_pv(p_split, vt_split, out, N, d)     grid (tiles(d, TN), tiles(N, TM)), block 384
// The two GEMM launches take kSmemBytes of dynamic shared memory. Any N >= 1 and d >= 1: the split tiles
// are zero past the matrix, and the GEMMs store only rows and columns inside it. sm_90a only.
#include <cstdint>

#include "common.cuh"
#include "softmax_rows.cuh"   // gemm_softmax_rows_padded, the row softmax of S
#include "wgmma_common.cuh"  // split, swizzle, descriptors, wgmma fences, mbarriers, bulk copy

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "gemmwg3x.cu needs sm_90a (wgmma): compile with arch sm_90a"
#endif

namespace {

constexpr int kTileK = 32;                  // k per stage: one 128-byte swizzle column of tf32
constexpr int kTileM = 128;                 // rows of A per block: two consumer warpgroups of 64
constexpr int kTileN = 128;                 // rows of B (columns of C) per block: wgmma's N
constexpr int kBlockA = 2 * kTileM * kTileK;  // floats of one split A tile: big, then small
constexpr int kBlockB = 2 * kTileN * kTileK;
constexpr int kStageFloats = kBlockA + kBlockB;
constexpr int kStages = 3;                    // 64 KB stages
constexpr int kThreads = 384;                  // consumer warpgroups 0 and 1, producer warpgroup 2
constexpr int kConsumerWarps = 8;
constexpr int kSplitThreads = 256;
// dynamic shared memory: the ring, full and empty mbarriers per stage, 1024 B of slack for the swizzle alignment
constexpr int kSmemBytes = kStages * kStageFloats * 4 + 2 * kStages * 8 + 1024;
static_assert(kSmemBytes <= 227 * 1024, "shared memory");

__device__ __forceinline__ int tiles(int x, int t) { return (x + t - 1) / t; }

// d (+)= A B on wgmma m64n128k8 tf32, A and B from shared memory; scale_d 0 starts a fresh accumulator.
__device__ __forceinline__ void wgmma_tile(float (&d)[64], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// ---- split pre-passes -------------------------------------------------------------------------------
// One block writes tile (row tile blockIdx.y, k tile blockIdx.x) of item blockIdx.z's operand, whose
// element (r, k) is x[r * ld + k] (or x[k * ld + r] when kTransposed), rows x cols, zero outside, as
// [big | small] in the swizzled layout (swz). Not transposed: 8 consecutive threads read one row's 32 k;
// transposed: consecutive threads take consecutive rows r, so that they read consecutive x.
template <int kRows, bool kTransposed>
__device__ __forceinline__ void split_tile(const float* __restrict__ x, int ld, int rows, int cols,
                                           float* __restrict__ split) {
    const int r0 = blockIdx.y * kRows, k0 = blockIdx.x * kTileK;
    float* const dst = split + (static_cast<size_t>(blockIdx.y) * gridDim.x + blockIdx.x) * (2 * kRows * kTileK);
    for (int i = threadIdx.x; i < kRows * (kTileK / 4); i += kSplitThreads) {
        const int r = kTransposed ? i % kRows : i / (kTileK / 4);
        const int c4 = kTransposed ? i / kRows : i % (kTileK / 4);
        const int row = r0 + r, k = k0 + 4 * c4;
        float e[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const bool inside = row < rows && k + j < cols;
            const size_t at = kTransposed ? static_cast<size_t>(k + j) * ld + row : static_cast<size_t>(row) * ld + k + j;
            e[j] = inside ? __ldg(x + at) : 0.0f;
        }
        float4 big, small;
        split4(make_float4(e[0], e[1], e[2], e[3]), big, small);
        *reinterpret_cast<float4*>(dst + swz(r, c4, kRows)) = big;
        *reinterpret_cast<float4*>(dst + kRows * kTileK + swz(r, c4, kRows)) = small;
    }
}

// ---- the GEMM: C = alpha * A B^T over split tiles -------------------------------------------------
// A: row tile blockIdx.y of a_split (kTileM rows), B: row tile blockIdx.x of b_split (kTileN rows), both
// n_kt tiles of 32 k. C: rows x cols of leading dimension ldc; only elements inside are stored.
__device__ __forceinline__ void gemm_3xtf32(const float* __restrict__ a_split, const float* __restrict__ b_split,
                                            int n_kt, float* __restrict__ C, int ldc, int rows, int cols,
                                            float alpha) {
    extern __shared__ float4 smem_f4[];
    float* const ring = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(smem_f4) + 1023) & ~uintptr_t(1023));
    uint64_t* const full = reinterpret_cast<uint64_t*>(ring + kStages * kStageFloats);
    uint64_t* const empty = full + kStages;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(full + s, 1);
            mbar_init(empty + s, kConsumerWarps);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (warp >= kConsumerWarps) {
        // Producer warpgroup: gives its registers to the consumers; one lane streams the A and B tiles.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
        if (warp == kConsumerWarps && lane == 0) {
            const float* const a = a_split + static_cast<size_t>(blockIdx.y) * n_kt * kBlockA;
            const float* const b = b_split + static_cast<size_t>(blockIdx.x) * n_kt * kBlockB;
            for (int kt = 0; kt < n_kt; ++kt) {
                const int s = kt % kStages;
                if (kt >= kStages) mbar_wait(empty + s, ((kt / kStages) - 1) & 1);
                mbar_arrive_expect_tx(full + s, kStageFloats * 4);
                float* const stage = ring + s * kStageFloats;
                bulk_copy(stage, a + static_cast<size_t>(kt) * kBlockA, kBlockA * 4, full + s);
                bulk_copy(stage + kBlockA, b + static_cast<size_t>(kt) * kBlockB, kBlockB * 4, full + s);
            }
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
    const int wg = warp >> 2;  // rows 64 wg .. 64 wg + 63 of the block's A tile
    // The tensor cores add into their accumulator with truncation: summed over all of K it drifts (relL2
    // 4e-5 at n = 2047, measured). Each 32-k tile gets a fresh accumulator, added into FP32 registers.
    float acc[kTileN / 2], part[kTileN / 2];
#pragma unroll
    for (int i = 0; i < kTileN / 2; ++i) acc[i] = 0.0f;
    for (int kt = 0; kt < n_kt; ++kt) {
        const int s = kt % kStages;
        mbar_wait(full + s, (kt / kStages) & 1);
        const uint32_t a_big = smem_u32(ring + s * kStageFloats) + wg * 64 * 128;
        const uint32_t a_small = a_big + kTileM * kTileK * 4;
        const uint32_t b_big = smem_u32(ring + s * kStageFloats + kBlockA);
        const uint32_t b_small = b_big + kTileN * kTileK * 4;
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < kTileK / 8; ++ks) {  // the small cross terms first, then big * big
            wgmma_tile(part, desc_k(a_small, 64, ks), desc_k(b_big, kTileN, ks), ks > 0);
            wgmma_tile(part, desc_k(a_big, 64, ks), desc_k(b_small, kTileN, ks), 1);
            wgmma_tile(part, desc_k(a_big, 64, ks), desc_k(b_big, kTileN, ks), 1);
        }
        wgmma_commit();
        wgmma_wait<0>();
        if (lane == 0) mbar_arrive(empty + s);  // the stage is free for the producer
#pragma unroll
        for (int i = 0; i < kTileN / 2; ++i) acc[i] += part[i];
    }

    // accumulator i of m64nNk8: row 16 (warp % 4) + lane / 4 (+ 8 for i % 4 >= 2), column 8 (i / 4) + 2 (lane % 4) + i % 2
    const int row_lo = blockIdx.y * kTileM + wg * 64 + (warp & 3) * 16 + (lane >> 2);
    const int col0 = blockIdx.x * kTileN + 2 * (lane & 3);
#pragma unroll
    for (int i = 0; i < kTileN / 2; ++i) {
        const int row = row_lo + ((i & 2) ? 8 : 0);
        const int col = col0 + 8 * (i >> 2) + (i & 1);
        if (row < rows && col < cols) C[static_cast<size_t>(row) * ldc + col] = alpha * acc[i];
    }
}

__device__ __forceinline__ int scores_ld(int N) { return (N + 3) & ~3; }  // gemm_softmax_rows_padded's rows

}  // namespace

extern "C" __global__ void __launch_bounds__(kSplitThreads)
    gemmwg3x_split_q(const float* __restrict__ qkv, float* __restrict__ q_split, int N, int d) {
    const size_t item = blockIdx.z;
    split_tile<kTileM, false>(qkv + qkv_item_offset(item, N, d), d, N, d,
                              q_split + item * tiles(N, kTileM) * tiles(d, kTileK) * kBlockA);
}

extern "C" __global__ void __launch_bounds__(kSplitThreads)
    gemmwg3x_split_k(const float* __restrict__ qkv, float* __restrict__ k_split, int N, int d) {
    const size_t item = blockIdx.z;
    split_tile<kTileN, false>(qkv + qkv_item_offset(item, N, d) + static_cast<size_t>(N) * d, d, N, d,
                              k_split + item * tiles(N, kTileN) * tiles(d, kTileK) * kBlockB);
}

extern "C" __global__ void __launch_bounds__(kSplitThreads)
    gemmwg3x_split_vt(const float* __restrict__ qkv, float* __restrict__ vt_split, int N, int d) {
    const size_t item = blockIdx.z;
    split_tile<kTileN, true>(qkv + qkv_item_offset(item, N, d) + 2 * static_cast<size_t>(N) * d, d, d, N,
                             vt_split + item * tiles(d, kTileN) * tiles(N, kTileK) * kBlockB);
}

extern "C" __global__ void __launch_bounds__(kSplitThreads)
    gemmwg3x_split_p(const float* __restrict__ scores, float* __restrict__ p_split, int N) {
    const size_t item = blockIdx.z;
    split_tile<kTileM, false>(scores + item * N * scores_ld(N), scores_ld(N), N, N,
                              p_split + item * tiles(N, kTileM) * tiles(N, kTileK) * kBlockA);
}

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    gemmwg3x_qkt(const float* __restrict__ q_split, const float* __restrict__ k_split, float* __restrict__ scores,
                 int N, int d, float scale_log2) {
    const size_t item = blockIdx.z;
    const int n_kt = tiles(d, kTileK);
    gemm_3xtf32(q_split + item * tiles(N, kTileM) * n_kt * kBlockA, k_split + item * tiles(N, kTileN) * n_kt * kBlockB,
                n_kt, scores + item * N * scores_ld(N), scores_ld(N), N, N, scale_log2);
}

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    gemmwg3x_pv(const float* __restrict__ p_split, const float* __restrict__ vt_split, float* __restrict__ out, int N,
                int d) {
    const size_t item = blockIdx.z;
    const int n_kt = tiles(N, kTileK);
    gemm_3xtf32(p_split + item * tiles(N, kTileM) * n_kt * kBlockA, vt_split + item * tiles(d, kTileN) * n_kt * kBlockB,
                n_kt, out + out_item_offset(item, N, d), d, N, d, 1.0f);
}
