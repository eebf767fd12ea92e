// Hopper (sm_90a) building blocks of the 3xTF32 wgmma kernels (wgmma3x, gemmwg3x): the TF32 split,
// the K-major 128-byte-swizzled operand layout and its descriptors, wgmma fences, mbarriers and the bulk
// copy. Keep it free of kernels.
#pragma once

#include <cstdint>

namespace {

// ---- 3xTF32 split ------------------------------------------------------------------------------
// big = x rounded to nearest TF32 (ties away), small = (x - big) rounded likewise; both masked to
// TF32 bit patterns so it does not matter whether the tensor core truncates or reads all 32 bits.
constexpr uint32_t kTf32HalfUlp = 0x1000u;
constexpr uint32_t kTf32Mask = 0xffffe000u;
__device__ __forceinline__ uint32_t tf32_round(float x) { return (__float_as_uint(x) + kTf32HalfUlp) & kTf32Mask; }
__device__ __forceinline__ void split_tf32(float x, uint32_t& big, uint32_t& small) {
    big = tf32_round(x);
    small = tf32_round(x - __uint_as_float(big));
}
__device__ __forceinline__ void split4(float4 x, float4& big, float4& small) {
    uint32_t b, s;
    split_tf32(x.x, b, s); big.x = __uint_as_float(b); small.x = __uint_as_float(s);
    split_tf32(x.y, b, s); big.y = __uint_as_float(b); small.y = __uint_as_float(s);
    split_tf32(x.z, b, s); big.z = __uint_as_float(b); small.z = __uint_as_float(s);
    split_tf32(x.w, b, s); big.w = __uint_as_float(b); small.w = __uint_as_float(s);
}

// ---- wgmma operand layout: K-major, 128-byte swizzle ------------------------------------------
// A tile of R rows (M or N index) by K columns is stored as K/32 column blocks of R rows x 128 bytes;
// in each 8-row, 1024-byte atom the 16-byte chunk c of row r sits at chunk c ^ (r & 7).
// Float offset of the 16-byte chunk c4 (K elements 4 c4 .. 4 c4 + 3) of row r:
__device__ __forceinline__ int swz(int r, int c4, int rows) {
    return (c4 >> 3) * (rows * 32) + r * 32 + (((c4 & 7) ^ (r & 7)) << 2);
}
// Shared-memory matrix descriptor: start address, LBO (unused when swizzled) = 16 B, SBO = 1024 B
// (one 8-row atom to the next), layout 128-byte swizzle. The high word (SBO, layout) is the same for
// every operand; the low word holds the start address in 16-byte units (bits 0-13) and the LBO.
constexpr uint32_t kDescHi = (1024 >> 4) | (1u << 30);
__device__ __forceinline__ uint32_t desc_lo(uint32_t addr) { return ((addr & 0x3FFFF) >> 4) | (1u << 16); }
// Descriptor of k step ks (8 tf32 = 32 bytes of K) of a tile with `rows` rows at shared address base:
// the base's low word plus the step's offset in 16-byte units. Shared addresses are below 2^18, so the
// sum never carries out of the start field; written this way the compiler derives every step's
// descriptor from one per tile with a single add, where masking each address cost it four more
// instructions a product, issued while the other warpgroup waits for the tensor cores.
__device__ __forceinline__ uint64_t desc_k(uint32_t base, int rows, int ks) {
    return (static_cast<uint64_t>(kDescHi) << 32) | (desc_lo(base) + (((ks >> 2) * (rows * 128) + (ks & 3) * 32) >> 4));
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- wgmma -------------------------------------------------------------------------------------
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
template <int K>
__device__ __forceinline__ void pin(float (&r)[K]) {
#pragma unroll
    for (int i = 0; i < K; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int K>
__device__ __forceinline__ void pin(uint32_t (&r)[K][4]) {
#pragma unroll
    for (int i = 0; i < K; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(r[i][e])::"memory");
}

// ---- mbarrier and bulk copy --------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(smem_u32(bar)),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    const uint32_t addr = smem_u32(bar);
    uint32_t done;
    do {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(addr), "r"(parity)
            : "memory");
    } while (!done);
}
__device__ __forceinline__ void bulk_copy(uint32_t smem_dst, const void* gmem_src, uint32_t bytes, uint64_t* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(smem_dst),
                 "l"(gmem_src), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
}
__device__ __forceinline__ void bulk_copy(void* smem_dst, const void* gmem_src, uint32_t bytes, uint64_t* bar) {
    bulk_copy(smem_u32(smem_dst), gmem_src, bytes, bar);
}

// ---- shared memory by its 32-bit address --------------------------------------------------------
// (A pointer into dynamic shared memory that was aligned through an integer is generic to the compiler:
// 64-bit address arithmetic and generic loads. Volatile, so they stay after the mbarrier waits.)
__device__ __forceinline__ float4 lds128(uint32_t addr) {
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ float lds32(uint32_t addr) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ void sts128_zero(uint32_t addr) {
    asm volatile("st.shared.v4.f32 [%0], {%1, %1, %1, %1};\n" ::"r"(addr), "f"(0.0f) : "memory");
}

}  // namespace
