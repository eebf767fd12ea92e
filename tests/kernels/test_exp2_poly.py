"""exp2 by a polynomial on the FMA pipes (attnbench/kernels/exp2_poly.py, cuda/exp2_poly.cuh): the coefficients
are the degree-3 relative minimax fit rounded to float32, the proof of the module's bound holds, and the header's
exact float32 operations, modelled here in numpy, stay within that bound against float64 exp2 over the softmax's
whole input range, with 0 (never garbage) in the clamped tail. On a GPU: the device computes the model bit for bit."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

from attnbench.kernels import exp2_poly
from attnbench.kernels.exp2_poly import COEFFICIENT_BITS, DEGREE, MINIMAX_ERROR, REL_ERROR_BOUND
from attnbench.locations import kernel_dir

F32 = np.float32
U = 2.0**-24  # float32's unit roundoff


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """fmaf(a, b, c) with one rounding, as the GPU's FFMA: numpy has no float32 FMA, and float64's a * b + c
    rounded again to float32 can round twice. a * b is exact in float64 (48 bits); the sum's float64 rounding error
    e is exact (TwoSum); rounding s to float32 is then right unless s sits exactly on a float32 midpoint, where e's
    sign decides (no other midpoint can lie between s and the exact s + e: it would be a closer float64)."""
    a64, b64, c64 = (np.asarray(v, dtype=F32).astype(np.float64) for v in (a, b, c))
    product = a64 * b64
    s = product + c64
    bb = s - product
    e = (product - (s - bb)) + (c64 - bb)
    r = s.astype(F32)
    up, down = np.nextafter(r, F32(np.inf)), np.nextafter(r, F32(-np.inf))
    mid_up = (r.astype(np.float64) + up.astype(np.float64)) / 2
    mid_down = (r.astype(np.float64) + down.astype(np.float64)) / 2
    r = np.where((s == mid_up) & (e > 0), up, r)
    return np.where((s == mid_down) & (e < 0), down, r)


def exp2_poly_model(x: np.ndarray) -> np.ndarray:
    """cuda/exp2_poly.cuh's exp2_poly in numpy float32, operation by operation (each _rn intrinsic one numpy op)."""
    c = [F32(v) for v in exp2_poly.coefficients()]
    rounder = F32(exp2_poly.ROUNDER)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        x = np.fmax(np.asarray(x, dtype=F32), F32(exp2_poly.CLAMP))  # fmaxf: NaN gives the clamp, as on the GPU
        t = x + rounder
        f = x - (t - rounder)
        p = fma32(c[3], f, c[2])
        p = fma32(p, f, c[1])
        p = fma32(p, f, c[0])
        two_n = ((t.view(np.uint32) << np.uint32(23)) + np.uint32(0x3F800000)).view(F32)
        return p * two_n


def remez_relative(degree: int, lo: float = -0.5, hi: float = 0.5, rounds: int = 25) -> tuple[np.ndarray, float]:
    """The polynomial of `degree` closest to 2^f on [lo, hi] in relative error (Remez exchange), and its levelled
    error. Neither numpy nor the project's other dependencies offer a minimax fit, hence these lines."""
    reference = lo + (hi - lo) / 2 * (1 - np.cos(np.pi * np.arange(degree + 2) / (degree + 1)))
    grid = np.linspace(lo, hi, 100_001)
    for _ in range(rounds):
        # p(x_i) - 2^x_i = (-1)^i E 2^x_i at the reference points: linear in the coefficients and E
        system = np.hstack([reference[:, None] ** np.arange(degree + 1),
                            -((-1.0) ** np.arange(degree + 2) * 2.0**reference)[:, None]])
        solution = np.linalg.solve(system, 2.0**reference)
        coefficients, levelled = solution[:-1], abs(solution[-1])
        error = np.polynomial.polynomial.polyval(grid, coefficients) / 2.0**grid - 1
        # the new reference: the largest |error| of each run of one sign
        runs = np.split(np.arange(grid.size), np.flatnonzero(np.diff(np.sign(error))) + 1)
        peaks = np.array([run[np.argmax(np.abs(error[run]))] for run in runs])
        if peaks.size > degree + 2:
            start = max(range(peaks.size - degree - 1), key=lambda s: np.abs(error[peaks[s:s + degree + 2]]).min())
            peaks = peaks[start:start + degree + 2]
        reference = grid[peaks]
    return coefficients, levelled


def exact_fma32(a: float, b: float, c: float) -> float:
    """The float32 nearest a * b + c (ties to even), in exact rational arithmetic."""
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    guess = F32(float(exact))
    candidates = [np.nextafter(guess, F32(-np.inf)), guess, np.nextafter(guess, F32(np.inf))]
    distances = [abs(Fraction(float(v)) - exact) for v in candidates]
    best = min(distances)
    nearest = [v for v, dist in zip(candidates, distances) if dist == best]
    return float(min(nearest, key=lambda v: int(np.array(v, dtype=F32).view(np.uint32)) & 1))


def test_the_fma_model_rounds_once(rng):
    # a * b lands on a float32 midpoint (1 + 2^-11 + 2^-24) and c tips it: float64 then float32 rounds it down
    tie = F32(1 + 2**-12)
    assert fma32(tie, tie, F32(2**-60)) == np.nextafter(F32(1 + 2**-11), F32(2))
    assert fma32(tie, tie, F32(-(2**-60))) == F32(1 + 2**-11)
    a = (rng.uniform(-1, 1, 3000) * 2.0 ** rng.integers(-30, 30, 3000)).astype(F32)
    b = (rng.uniform(-1, 1, 3000) * 2.0 ** rng.integers(-30, 30, 3000)).astype(F32)
    c = (-(a.astype(np.float64) * b) * (1 + rng.uniform(-1e-6, 1e-6, 3000))).astype(F32)  # cancellation
    c[::2] = rng.uniform(-1, 1, 1500).astype(F32)
    got = fma32(a, b, c)
    want = [exact_fma32(float(x), float(y), float(z)) for x, y, z in zip(a, b, c)]
    assert np.array_equal(got, np.array(want, dtype=F32))


def test_the_coefficients_are_the_minimax_fit_rounded_to_float32():
    coefficients, levelled = remez_relative(DEGREE)
    assert tuple(int(v) for v in coefficients.astype(F32).view(np.uint32)) == COEFFICIENT_BITS
    assert len(COEFFICIENT_BITS) == DEGREE + 1 and 7.47e-5 < levelled < MINIMAX_ERROR


def test_the_proof_of_the_bound_holds():
    """The module's proof, step by step: the grid, the bound on e'' and on e' between grid points, Horner's
    roundings; the constants it states must cover what these give."""
    c = np.array(exp2_poly.coefficients())
    poly = np.polynomial.Polynomial(c)
    h = 1e-6
    f = np.linspace(-0.5, 0.5, 1_000_001)
    e = poly(f) * 2.0**-f - 1
    de = (poly.deriv()(f) - np.log(2) * poly(f)) * 2.0**-f
    assert (c > 0).all()  # so |p|, |p'|, |p''| are largest at f = 1/2
    d2 = np.sqrt(2) * (poly.deriv(2)(0.5) + 2 * np.log(2) * poly.deriv()(0.5) + np.log(2) ** 2 * poly(0.5))
    de_bound = np.abs(de).max() + h / 2 * d2
    e_bound = np.abs(e).max() + h / 2 * de_bound + 1e-15  # float64's own error in e, generously
    assert e_bound <= MINIMAX_ERROR
    gamma3 = 3 * U / (1 - 3 * U)
    horner = 2 * gamma3 * (1 + MINIMAX_ERROR)
    assert MINIMAX_ERROR + horner + MINIMAX_ERROR * horner <= REL_ERROR_BOUND < 1.01 * (MINIMAX_ERROR + horner)


def softmax_inputs(rng) -> np.ndarray:
    """x = score - row max <= 0 as float32: every float32 in [-2, -1) (there f = x - rint(x) takes every multiple
    of 2^-23 in [-1/2, 1/2)), random ones over [-200, 0] and down to tiny |x|, and the edges of each step."""
    every = np.arange(np.array(-2.0, F32).view(np.uint32), np.array(-1.0, F32).view(np.uint32), -1,
                      dtype=np.uint32).view(F32)
    spread = rng.uniform(-200.0, 0.0, 2_000_000).astype(F32)
    near_zero = -(2.0 ** rng.uniform(-40, 0, 500_000)).astype(F32)
    steps = np.arange(-130, 1, dtype=np.float64)
    edges = np.concatenate([steps, steps + 0.5, steps - 0.5])
    edges = np.concatenate([edges, np.nextafter(edges.astype(F32), F32(np.inf)), np.nextafter(edges.astype(F32), F32(-np.inf))])
    extremes = np.array([0.0, -0.0, -125.5, -126.5, -127.0, -127.5, -1e30, -np.inf, -np.finfo(F32).max], dtype=F32)
    return np.concatenate([every, spread, near_zero, edges.astype(F32), extremes])


def test_the_formula_stays_within_its_bound_against_float64_over_the_softmax_range(rng):
    x = softmax_inputs(rng)
    x = x[x <= 0]
    y = exp2_poly_model(x)
    normal = x >= F32(-125.5)
    relative = np.abs(y[normal].astype(np.float64) / np.exp2(x[normal].astype(np.float64)) - 1)
    assert relative.max() <= REL_ERROR_BOUND, f"worst at x = {x[normal][relative.argmax()]}: {relative.max():.4g}"
    assert relative.max() > 0.99 * MINIMAX_ERROR  # the model does see the polynomial's error (not an exact exp2)
    assert y[x == 0].astype(np.float64) == pytest.approx(1.0, abs=REL_ERROR_BOUND)


def test_the_clamped_tail_gives_zero_never_garbage(rng):
    x = softmax_inputs(rng)
    tail = x[x < F32(-125.5)]
    y = exp2_poly_model(tail)
    assert tail.size > 100_000 and np.isfinite(y).all() and (y >= 0).all() and (y <= 2.0**-125).all()
    assert (y[tail < F32(-126.5)] == 0).all()  # -inf (a masked key) included
    assert exp2_poly_model(np.array([-np.inf, -127.0, -1000.0], dtype=F32)).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("eighths", [2, 4, 8])
def test_a_softmax_on_the_polynomials_weights_moves_each_output_by_at_most_the_bound_times_vs_spread(eighths, rng):
    """The module's last claim: weights off by delta_i <= REL_ERROR_BOUND (in P V and in the sum alike) move
    O = sum p_i v_i / sum p_i by at most REL_ERROR_BOUND (1 + 1e-4) max |v_i - O|. Rows of 2048 scores (log2
    units, spread from 0.01 to 300) with the kernel's split: `eighths` of each 8-key group's weights by the
    polynomial, the others (MUFU's) taken as exact here."""
    rows, keys = 64, 2048
    spread = np.geomspace(0.01, 300, rows)[:, None]
    scores = (rng.standard_normal((rows, keys)) * spread).astype(F32)
    x = (scores - scores.max(axis=1, keepdims=True)).astype(F32)
    exact = np.exp2(x.astype(np.float64))
    by_poly = (np.arange(keys) // 2) % 4 * 2 < eighths if eighths < 8 else np.ones(keys, bool)
    weights = np.where(by_poly, exp2_poly_model(x).astype(np.float64), exact)
    v = rng.uniform(-3, 3, (rows, keys, 16))
    o_exact = np.einsum("rk,rkc->rc", exact, v) / exact.sum(axis=1)[:, None]
    o_poly = np.einsum("rk,rkc->rc", weights, v) / weights.sum(axis=1)[:, None]
    reach = np.abs(v - o_exact[:, None, :]).max(axis=1)
    assert (np.abs(o_poly - o_exact) <= REL_ERROR_BOUND * (1 + 1e-4) * reach + 1e-12).all()
    assert np.abs(o_poly - o_exact).max() > 0  # the polynomial's weights did differ


def test_the_header_evaluates_the_models_operations_with_the_modules_coefficients():
    header = (kernel_dir() / "exp2_poly.cuh").read_text()
    body = re.sub(r"//[^\n]*", "", header[header.index("float exp2_poly(float x)"):])  # code, not its comments
    operations = re.findall(r"fmaxf|__fadd_rn|__fsub_rn|__fmaf_rn|__fmul_rn|<< 23|0x3F800000u", body)
    assert operations == ["fmaxf", "__fadd_rn", "__fsub_rn", "__fsub_rn", "__fmaf_rn", "__fmaf_rn", "__fmaf_rn",
                          "<< 23", "0x3F800000u", "__fmul_rn"]
    assert re.findall(r"EXP2_POLY_C(\d)\)", body) == ["3", "2", "1", "0"]  # Horner from c3 down
    assert "fmaxf(x, -127.0f)" in body and "12582912.0f" in body  # CLAMP and ROUNDER
    assert exp2_poly.CLAMP == -127.0 and exp2_poly.ROUNDER == 12582912.0
    assert exp2_poly.exp2_poly_defines() == {f"EXP2_POLY_C{i}": COEFFICIENT_BITS[i] for i in range(DEGREE + 1)}


KERNEL = """
#include "exp2_poly.cuh"
extern "C" __global__ void exp2_poly_all(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = exp2_poly(x[i]);
}
"""


@pytest.mark.gpu
def test_the_device_computes_the_model_bit_for_bit(gpu, rng):
    """What the CPU tests prove holds on the GPU only if nvcc keeps the header's operations as they are."""
    import pycuda.driver as cuda
    from pycuda.compiler import SourceModule

    defines = [f"-D{name}={bits}" for name, bits in exp2_poly.exp2_poly_defines().items()]
    module = SourceModule(KERNEL, options=["-O3", *defines], arch=gpu.arch, include_dirs=[str(kernel_dir())],
                          no_extern_c=True)
    x = softmax_inputs(rng)
    y = np.empty_like(x)
    block = 256
    module.get_function("exp2_poly_all")(cuda.In(x), cuda.Out(y), np.int32(x.size),
                                         block=(block, 1, 1), grid=((x.size + block - 1) // block, 1))
    want = exp2_poly_model(x)
    differ = np.flatnonzero(y.view(np.uint32) != want.view(np.uint32))
    assert differ.size == 0, f"{differ.size} differ, first x = {x[differ[0]]!r}: GPU {y[differ[0]]!r}, model {want[differ[0]]!r}"
