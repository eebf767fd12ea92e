// Shared device helpers for every attnbench variant: warp reductions, vector loads, constants.
// Included by all cuda/*.cu files; keep it free of kernels.
#pragma once

#include <cuda_runtime.h>
#include <math_constants.h>

#define ATTN_NEG_INF (-CUDART_INF_F)
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

__device__ __forceinline__ float dot4(float4 a, float4 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}
