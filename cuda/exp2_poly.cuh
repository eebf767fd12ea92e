// exp2 on the FMA pipes instead of the MUFU unit (FlashAttention-4's relief of the exponential unit): for x <= 0,
// Cody-Waite reduction x = n + f (n = rint(x), f in [-1/2, 1/2]), 2^f by a degree-3 minimax polynomial in FMAs,
// 2^n built in the exponent bits. Relative error below 7.52e-5 for x >= -125.5, 0 for x < -126.5 (-inf included):
// the coefficients, the proof and the numpy model of these exact operations are in attnbench/kernels/exp2_poly.py,
// whose -D defines EXP2_POLY_C0 .. C3 (float32 bits) are the only copy of the coefficients.
// Every step is an explicit _rn intrinsic so that nvcc neither fuses nor reorders what the proof counts.
#pragma once

#if !defined(EXP2_POLY_C0) || !defined(EXP2_POLY_C1) || !defined(EXP2_POLY_C2) || !defined(EXP2_POLY_C3)
#error "exp2_poly.cuh needs -DEXP2_POLY_C0..C3 (attnbench.kernels.exp2_poly.exp2_poly_defines)"
#endif

__device__ __forceinline__ float exp2_poly(float x) {
    constexpr float kRounder = 12582912.0f;  // 1.5 * 2^23: x + kRounder holds rint(x) in its low mantissa bits
    x = fmaxf(x, -127.0f);                    // lower scores give n = -127, whose 2^n below is +0.0
    const float t = __fadd_rn(x, kRounder);
    const float f = __fsub_rn(x, __fsub_rn(t, kRounder));  // exact: x - rint(x)
    float p = __fmaf_rn(__uint_as_float(EXP2_POLY_C3), f, __uint_as_float(EXP2_POLY_C2));
    p = __fmaf_rn(p, f, __uint_as_float(EXP2_POLY_C1));
    p = __fmaf_rn(p, f, __uint_as_float(EXP2_POLY_C0));
    // bits(t) = 0x4B400000 + n: shifted by 23 (mod 2^32) it is n << 23, and + (127 << 23) the float 2^n
    const float two_n = __uint_as_float((__float_as_uint(t) << 23) + 0x3F800000u);
    return __fmul_rn(p, two_n);
}
