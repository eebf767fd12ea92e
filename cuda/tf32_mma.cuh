// 3xTF32 on mma.sync and cp.async, shared by the tensor-core variants on sm_80 PTX (tf32x3, gemmtc).
// Keep it free of kernels.
#pragma once

#include <cstdint>

#include "common.cuh"

// ---- 3xTF32 building blocks ------------------------------------------------------------------

// The tensor core reads a .tf32 operand as the top 19 bits of its register (it truncates), so a
// "round to nearest" TF32 is the float's bits plus half a TF32 ulp (0x1000); the low bits may stay.
// This is cvt.rna.tf32.f32 (ties away from zero) for every finite value short of overflow, in 1-2
// integer ops: cvt.rna itself compiles to a ~4-instruction emulation with NaN checks on sm_80/sm_90.
constexpr uint32_t kTf32HalfUlp = 0x1000u;
constexpr uint32_t kTf32Mask = 0xffffe000u;

// x = big + small: big = x rounded to TF32 (exact value, so x - big is exact), small = the rest, rounded
// to TF32 when read. Both as mma operand registers.
__device__ __forceinline__ void split_tf32(float x, uint32_t& big, uint32_t& small) {
    big = (__float_as_uint(x) + kTf32HalfUlp) & kTf32Mask;
    small = __float_as_uint(x - __uint_as_float(big)) + kTf32HalfUlp;
}

// c += a * b on mma.sync.m16n8k8 tf32 (g = lane / 4, t = lane % 4):
// A a0 = (g, t), a1 = (g + 8, t), a2 = (g, t + 4), a3 = (g + 8, t + 4); B b0 = (k = t, n = g), b1 = (t + 4, g);
// C c0 = (g, 2t), c1 = (g, 2t + 1), c2 = (g + 8, 2t), c3 = (g + 8, 2t + 1).
__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// c += a * b in 3xTF32: the two small cross terms first, then big * big (small * small is dropped).
__device__ __forceinline__ void mma_3xtf32(float (&c)[4], const uint32_t (&a_big)[4], const uint32_t (&a_small)[4],
                                           float b0, float b1) {
    uint32_t b0_big, b0_small, b1_big, b1_small;
    split_tf32(b0, b0_big, b0_small);
    split_tf32(b1, b1_big, b1_small);
    mma_tf32(c, a_small, b0_big, b1_big);
    mma_tf32(c, a_big, b0_small, b1_small);
    mma_tf32(c, a_big, b0_big, b1_big);
}

// ---- cp.async ---------------------------------------------------------------------------------

// 16 bytes global -> shared, bypassing L1; an invalid row reads nothing and writes zeros.
__device__ __forceinline__ void cp_async_16(float* smem_dst, const float* gmem_src, bool valid) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes)
                 : "memory");
}
// 4 bytes global -> shared (for rows that are not 16-byte aligned); invalid: reads nothing, writes a zero.
__device__ __forceinline__ void cp_async_4(float* smem_dst, const float* gmem_src, bool valid) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
    const int src_bytes = valid ? 4 : 0;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
