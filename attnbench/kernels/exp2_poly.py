"""exp2 on the FMA pipes: the one source of the polynomial that cuda/exp2_poly.cuh evaluates (its coefficients
reach the kernel as -D defines of their float32 bits) and that tests/kernels/test_exp2_poly.py checks.

A softmax at head dim 32 needs one exponential per 128 products, and Hopper's MUFU unit does 16 a clock per SM:
FlashAttention-4 relieves it by computing part of the exponentials with FMAs. The formula, for x <= 0 (a score
minus its row's maximum, in log2 units):

    x  = max(x, -127)                       clamp: exp2 of any lower score (-inf included) comes out 0
    t  = x + 1.5 * 2^23                     fp32 add: rounds x to the integer n = rint(x) (ties to even)
    f  = x - (t - 1.5 * 2^23)               f = x - n in [-1/2, 1/2]
    p  = fma(fma(fma(c3, f, c2), f, c1), f, c0)          2^f, Horner with fused multiply-adds
    2^n: the float of bits (bits(t) << 23) + (127 << 23)  (+0.0 for n = -127)
    y  = p * 2^n

Why each step is exact (x in [-127, 0]): x + 1.5 * 2^23 lies in [2^23, 2^24), where float32's spacing is 1, so t is
1.5 * 2^23 + n exactly; t - 1.5 * 2^23 = n exactly (Sterbenz); x - n is exact (x in [n - 1/2, n + 1/2] and, for
n <= -1, within a factor two of n: Sterbenz again; for n = 0 it is x). bits(t) = 0x4B400000 + n, whose low nine
bits are n mod 512, so (bits(t) << 23) mod 2^32 = (n mod 512) << 23 and adding 127 << 23 gives (n + 127) << 23:
the float 2^n for n >= -126, and +0.0 for n = -127. The product p * 2^n is exact while it is a normal float
(x >= -125.5). So the only errors are the polynomial's and Horner's roundings.

The coefficients: the minimax (Remez) fit of 2^f on [-1/2, 1/2] in relative error, degree 3 (levelled error
7.4781e-5), each rounded to float32 (tests/kernels/test_exp2_poly.py refits them with numpy and checks the rounding).

The proof of the bound. Let e(f) = p(f) 2^-f - 1 for the float32 coefficients in exact arithmetic.
- On the grid f_i = -1/2 + i h, h = 1e-6, |e(f_i)| <= 7.47988e-5 (float64, whose error there is ~1e-16).
- e'(f) = 2^-f (p'(f) - ln2 p(f)) and e''(f) = 2^-f (p'' - 2 ln2 p' + ln2^2 p); all coefficients are positive,
  so |p|, |p'|, |p''| are largest at f = 1/2 and |e''| <= sqrt(2) (p''(1/2) + 2 ln2 p'(1/2) + ln2^2 p(1/2)) = 3.80.
- Between grid points |e'| <= max_i |e'(f_i)| + (h / 2) 3.80 = 2.74e-3, hence
  |e(f)| <= max_i |e(f_i)| + (h / 2) 2.74e-3 = 7.48002e-5 on all of [-1/2, 1/2]: MINIMAX_ERROR.
- Horner with FMAs rounds three times (unit roundoff u = 2^-24): the computed value is
  c0 (1 + d0) + c1 f (1 + d0)(1 + d1) + (c2 f^2 + c3 f^3)(1 + d0)(1 + d1)(1 + d2), |d_k| <= u, so its distance
  from p(f) is at most gamma_3 (c0 + c1 |f| + c2 f^2 + c3 |f|^3) = gamma_3 p(|f|), gamma_3 = 3u / (1 - 3u); over
  2^f that is at most gamma_3 (1 + MINIMAX_ERROR) 2^(|f| - f) <= 2 gamma_3 (1 + MINIMAX_ERROR) = 3.577e-7.
- Together: |y / 2^x - 1| <= 7.48002e-5 + 3.577e-7 + their product = 7.5158e-5 < REL_ERROR_BOUND for every float32
  x in [-125.5, 0]; below, 0 <= y <= 2^-125 (and y = 0 for x < -126.5), where 2^x < 2^-125 too.

What it costs the softmax: a weight off by a relative delta_i <= REL_ERROR_BOUND, in both the sum l and P V,
moves O = sum p_i v_i / sum p_i by sum p_i delta_i (v_i - O) / sum p_i (1 + delta_i): at most 7.52e-5 (1 + 1e-4)
times max |v_i - O|, a third of what rounding P to FP16 (2^-12 a weight, in P V only) allows already.
"""

from __future__ import annotations

import struct

DEGREE = 3
# float32 bits of c0 .. c3 (c0 + c1 f + c2 f^2 + c3 f^3 ~ 2^f on [-1/2, 1/2]): 0.99992806, 0.69326097, 0.24261113,
# 0.055171669, the degree-3 relative minimax fit rounded to float32
COEFFICIENT_BITS = (0x3F7FFB49, 0x3F31798D, 0x3E786F0D, 0x3D61FBB0)
MINIMAX_ERROR = 7.48002e-5  # |p(f) 2^-f - 1| in exact arithmetic on [-1/2, 1/2], proved above
REL_ERROR_BOUND = 7.52e-5  # the formula in float32, x in [-125.5, 0], proved above
CLAMP = -127.0  # x below this is taken as it; exp2 is 0 for x < -126.5
ROUNDER = 1.5 * 2**23  # adding it rounds a float32 in [-2^22, 2^22] to an integer


def coefficients() -> tuple[float, ...]:
    """c0 .. c3 as the float32 values the kernel uses (widened to Python floats exactly)."""
    return tuple(struct.unpack("<f", struct.pack("<I", bits))[0] for bits in COEFFICIENT_BITS)


def exp2_poly_defines() -> dict[str, int]:
    """The -D defines cuda/exp2_poly.cuh reads: EXP2_POLY_C0 .. C3, each a float32's bits as an integer."""
    return {f"EXP2_POLY_C{i}": bits for i, bits in enumerate(COEFFICIENT_BITS)}
