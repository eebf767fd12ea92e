// Shared device helpers for every attnbench variant: warp reductions, vector loads, constants.
// Included by all cuda/*.cu files; keep it free of kernels.
#pragma once

#ifndef __CUDACC_RTC__  // NVRTC has the runtime types built in (the sm_61 compile check uses it)
#include <cuda_runtime.h>
#endif

#define ATTN_NEG_INF (-__int_as_float(0x7f800000))  // math_constants.h's CUDART_INF_F, which NVRTC lacks
#define ATTN_LOG2E 1.4426950408889634f

// Offsets of batch item b inside the interleaved input (Q K V per item) and the output.
__device__ __forceinline__ size_t qkv_item_offset(int b, int N, int d) {
    return (size_t)b * 3 * (size_t)N * (size_t)d;
}
__device__ __forceinline__ size_t out_item_offset(int b, int N, int d) {
    return (size_t)b * (size_t)N * (size_t)d;
}

__device__ __forceinline__ float warp_reduce_max(float x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
    return x;
}

__device__ __forceinline__ float warp_reduce_sum(float x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

// A row of length d starting at p can be read as float4 only when p is 16-byte aligned.
__device__ __forceinline__ bool is_aligned16(const void* p) {
    return (reinterpret_cast<size_t>(p) & 15) == 0;
}

// 2^x for softmax weights: one MUFU.EX2, results below 2^-126 flushed to zero (ex2.approx.ftz.f32).
// exp2f outside fast math wraps the same MUFU.EX2 in a range test and two predicated multiplies per
// call, only to return such results as denormals. The weights are 2^(s - max) <= 1 with a 1 in every
// tile, so a flushed weight is below 2^-126 of one that is there: it changes no float32 sum, and
// nothing else changes (same instruction, same error; 2^-inf is still +0).
__device__ __forceinline__ float exp2_ftz(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float dot4(float4 a, float4 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}

// O row update of report 004's design, one float4 at a time: o = old_scale * o + new_scale * pv.
// Each load and store is one 16-byte access (scalar ones, which the compiler must emit for a float*
// it cannot prove aligned, cost four requests and 32 sectors each). o must be 16-byte aligned: d % 4 == 0.
__device__ __forceinline__ void rescale_add4(float4* o, float old_scale, float new_scale, float4 pv) {
    const float4 old = *o;
    *o = make_float4(old_scale * old.x + new_scale * pv.x, old_scale * old.y + new_scale * pv.y,
                     old_scale * old.z + new_scale * pv.z, old_scale * old.w + new_scale * pv.w);
}
