// wgmma16s: FlashAttention forward on Hopper tensor cores (wgmma) at the course's accuracy, in split FP16.
//
// Technique (beyond wgmma3x): the scores carry the error that matters (the exponent amplifies it), so only
// Q K^T is split: Q (pre-scaled by log2(e) / sqrt(d)) and K each as hi + lo in FP16 (hi = x rounded to
// FP16, lo = x - hi rounded to FP16), S = hi*lo + lo*hi + hi*hi in one FP32 accumulator (lo*lo dropped),
// about 2^-22 of |q||k| per term. P V is one FP16 product: P rounded to FP16 (P in [0, 1]) and V in FP16,
// accumulated in FP32 (relative error about 2^-12 of max|V|, the variant's error; see the host side).
// Four FP16 wgmma products where wgmma3x runs six TF32 ones, at twice the TF32 rate, each k16 step doing
// the work of two k8 steps. The lo parts are not scaled: an input small enough for its lo part to be an
// FP16 subnormal has an absolute error of at most 2^-25 per element there, far below what the course
// tolerance (absolute) can see; only |x| > 65504 (FP16's range; Q after its scaling) is out of reach.
// - a pre-pass (wgmma16s_prep) converts K and V once per pass into a workspace: for each 64-key tile one
//   contiguous block [K2 | V^T] in the wgmma operand layout (K-major, 128-byte swizzle), K2 the
//   64 x 2d FP16 matrix [K hi | K lo] (the hi and lo k-steps of one row side by side), V^T d x 64 FP16;
// - a producer lane (setmaxnreg gives its warpgroup's registers to the consumers) streams each unit's
//   tiles with cp.async.bulk into K and V shared-memory rings (full/empty mbarriers, K released as soon
//   as S is done with it);
// - short sequences (N <= 512, d <= 64; WGMMA16S_STREAM): no pre-pass; the producer warpgroup bulk-copies
//   each raw K and V tile WGMMA16S_RAW_STAGES tiles ahead into a ring of staging buffers and its 4 warps
//   convert it into the ring in the pre-pass's layout, each warp handing its share to the consumers (each
//   tile serves one or two row blocks there: the pre-pass's launch and extra pass over K and V cost more than
//   converting in every block); the consumers load the next unit's Q while this one runs (WGMMA16S_Q_AHEAD);
// - two consumer warpgroups of 64 query rows (three on the pre-pass path at d <= 64: WGMMA16S_WARPGROUPS):
//   Q hi and Q lo split once per unit into wgmma A fragments in
//   registers (WGMMA16S_QREG; 0: [Q hi | Q lo] in shared memory); S = Q K^T by wgmma m64n64k16; online
//   softmax in FP32 registers (one MUFU.EX2 a weight, or for WGMMA16S_POLY_EIGHTHS eighths of the weights
//   exp2_poly on the FMA pipes, FlashAttention-4's relief of MUFU; keys past N masked to -inf after the product);
//   O = alpha O, then O += P V by wgmma m64n{d}k16
//   with P packed to FP16 in registers as the A operand (the accumulator layout of S is the A-fragment
//   layout of P: no key permutation). S of tile i is issued with P V of tile i - 1 and the softmax runs
//   while P V is on the tensor cores; the warpgroups issue their products in turn (named barriers),
//   FlashAttention-3 style;
// - persistent blocks and the key split with its combine, as wgmma3x (records of O, m, l per thread).
//
// Constraints: sm_90a only (wgmma, setmaxnreg, cp.async.bulk, mbarrier tx): build with arch sm_90a.
// HEAD_DIM 32, 64 or 128. Any N >= 1 (query rows past N not written; keys past N zero-filled and masked); any B.
// Launches (R = kBlockRows, 64 a consumer warpgroup): workspaces kv16 B * ceil(N / 64) * 384 d bytes, split_counters
// B * ceil(N / R) words (zero before the first pass) and, with S > 1 parts, split_partials B * ceil(N / R) * S *
// kRecordFloats floats;
// wgmma16s_prep(qkv, kv16, B, N) grid (ceil(N / 64), min(B, 65535)), block 256; then wgmma16s_fwd(qkv, out,
// B, N, scale_log2, kv16, split_partials, split_counters) grid (X, 1, S), block kThreads (128 a warpgroup), dynamic
// shared memory kSmemBytes: X blocks deal out the B * ceil(N / R) units (item, row block), S key parts.
#include <cstdint>

#include <cuda_fp16.h>

#include "common.cuh"
#include "wgmma_common.cuh"  // swizzled descriptors, wgmma fences, mbarriers, bulk copy

#ifndef HEAD_DIM
#error "wgmma16s.cu needs -DHEAD_DIM=<d>"
#endif
#if HEAD_DIM != 32 && HEAD_DIM != 64 && HEAD_DIM != 128
#error "wgmma16s.cu needs HEAD_DIM 32, 64 or 128"
#endif
#ifndef WGMMA16S_QREG
// Q hi and lo as wgmma A fragments in registers for S (1), or in shared memory (0): from registers each
// m64n64k16 reads only its B tile from shared memory, 2 KB where both operands take 4 KB, which at the
// tensor cores' FP16 rate is all of shared memory's 128 bytes a clock
#define WGMMA16S_QREG 1
#endif
#ifndef WGMMA16S_STREAM
// 1: no pre-pass; the producer warpgroup bulk-copies raw K and V tiles into two staging buffers and converts
// them into the ring itself (short sequences, where each tile serves one or two row blocks: the pre-pass's
// extra launch and pass over K and V cost more than converting again). d <= 64 only (shared memory).
#define WGMMA16S_STREAM 0
#endif
#ifndef WGMMA16S_RAW_STAGES
// Raw staging buffers of the streaming path (one raw K and V tile each), so the copies run that many tiles ahead
// of the conversion: at N = 128 a unit is two tiles, and two buffers kept one unit's K and V (16 KB at d = 32)
// in flight per SM, too few bytes for HBM's latency
#define WGMMA16S_RAW_STAGES 4
#endif
#ifndef WGMMA16S_Q_AHEAD
// 1: each consumer thread loads its Q values of the block's next unit into registers while this unit runs (the
// streaming path, where a unit is short and a load's latency at its start was paid again at every unit)
#define WGMMA16S_Q_AHEAD 0
#endif
#ifndef WGMMA16S_STAGES
// Tiles in the K and V rings (the host's _stages, which sizes the shared memory it launches with)
#define WGMMA16S_STAGES (HEAD_DIM == 128 ? 3 : 4)
#endif
#if WGMMA16S_STAGES < 2
#error "WGMMA16S_STAGES is 2 or more"
#endif
#ifndef WGMMA16S_PINGPONG
#define WGMMA16S_PINGPONG 1  // FA3's turns of the consumer warpgroups' products (named barriers); 0: free-running
#endif
#ifndef WGMMA16S_WARPGROUPS
// Consumer warpgroups of 64 query rows (2 or 3; 3 with Q in registers and the pre-pass only): at d = 32 a
// warpgroup's softmax takes as long as its products, and a third warpgroup's softmax fills the tensor cores'
// idle clocks (FlashAttention-3 runs three at small head dimensions, in 160 registers each)
#define WGMMA16S_WARPGROUPS 2
#endif
#if WGMMA16S_WARPGROUPS != 2 && WGMMA16S_WARPGROUPS != 3
#error "WGMMA16S_WARPGROUPS is 2 or 3"
#endif
#ifndef WGMMA16S_POLY_EIGHTHS
// Eighths (0 .. 8) of the softmax's weights computed by exp2_poly on the FMA pipes, the rest by MUFU.EX2 (16 a
// clock per SM): at d = 32 a warpgroup's 64 x 64 tile needs 256 clocks of MUFU, as long as its products take on
// the tensor cores (2048 FP16 products a clock), so its softmax no longer hides behind the other's products
#define WGMMA16S_POLY_EIGHTHS 0
#endif
#if WGMMA16S_POLY_EIGHTHS < 0 || WGMMA16S_POLY_EIGHTHS > 8
#error "WGMMA16S_POLY_EIGHTHS is 0 .. 8"
#endif
#if WGMMA16S_POLY_EIGHTHS > 0
#include "exp2_poly.cuh"  // exp2 by a polynomial on the FMA pipes; its coefficients come as -D defines
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "wgmma16s.cu needs sm_90a (wgmma): compile with arch sm_90a"
#endif

namespace {

constexpr int kHeadDim = HEAD_DIM;
constexpr int kWarpgroups = WGMMA16S_WARPGROUPS;     // consumer warpgroups, 64 query rows each
constexpr int kTileKeys = 64;                        // keys per K/V tile (S's N, P V's K)
constexpr int kStages = WGMMA16S_STAGES;             // shared-memory ring depth
constexpr int kBlockRows = 64 * kWarpgroups;
constexpr int kConsumerThreads = 128 * kWarpgroups;
constexpr int kThreads = kConsumerThreads + 128;     // + one producer warpgroup
constexpr int kKSteps = kHeadDim / 16;               // k16 steps of d
constexpr int kK2Bytes = kTileKeys * 2 * kHeadDim * 2;  // [K hi | K lo], FP16
constexpr int kVtBytes = kHeadDim * kTileKeys * 2;      // V^T, FP16
constexpr int kTileBytes = kK2Bytes + kVtBytes;          // one tile of the workspace
constexpr int kQ2Bytes = 64 * 2 * kHeadDim * 2;          // one warpgroup's [Q hi | Q lo]
constexpr bool kStream = WGMMA16S_STREAM;
constexpr int kRawStages = WGMMA16S_RAW_STAGES;
constexpr int kRawBuffers = kStream ? kRawStages : 0;  // in shared memory
constexpr bool kQAhead = WGMMA16S_Q_AHEAD;
constexpr int kPolyEighths = WGMMA16S_POLY_EIGHTHS;
static_assert(!kStream || kHeadDim <= 64, "the streaming path is built for d <= 64");
static_assert(kRawStages >= 2 && kRawStages <= 4, "the streaming path stages 2 to 4 raw tiles (named barriers 10-13)");
static_assert(!kQAhead || WGMMA16S_QREG, "Q ahead: Q's fragments in registers");
static_assert(kWarpgroups == 2 || (WGMMA16S_QREG && !kStream), "three consumer warpgroups: Q in registers, the pre-pass");
// setmaxnreg: a producer lane that only issues copies runs in 24 registers; a warpgroup that converts tiles
// in 56 (88 at d = 32, where fewer spilled once its per-tile indices were kept: the consumers keep 192 there,
// 224 at d = 64 with 112 live for O, Q's fragments, S and P). The consumers' increase
// is served from what the producers give back of the launch's 168 a thread (__launch_bounds__(384, 1)): an
// increase beyond it waits for ever. Three consumer warpgroups share 65536 registers as FlashAttention-3's do:
// 160 each, 32 for the producers, from a launch of 128 (__launch_bounds__(512, 1)).
constexpr int kProducerRegs = kWarpgroups == 3 ? 32 : kStream ? (kHeadDim == 32 ? 88 : 56) : 24;
constexpr int kConsumerRegs = kWarpgroups == 3 ? 160 : kStream ? (kHeadDim == 32 ? 192 : 224) : 240;
constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
static_assert(128 * (kLaunchRegs - kProducerRegs) >= kConsumerThreads * (kConsumerRegs - kLaunchRegs),
              "setmaxnreg: the producers must give back what the consumers take");
constexpr int kRawBytes = 2 * kTileKeys * kHeadDim * 4;  // one raw K and V tile, FP32 (streaming path)
// dynamic shared memory: K ring, V ring, Q2 per warpgroup (not with Q in registers), kRawStages raw staging
// tiles (streaming path), 4 mbarriers per stage and one per raw stage, 1024 alignment slack
constexpr int kQSmemBytes = WGMMA16S_QREG ? 0 : kWarpgroups * kQ2Bytes;
constexpr int kRawOffset = kStages * kTileBytes + kQSmemBytes;
constexpr int kBarrierOffset = kRawOffset + kRawBuffers * kRawBytes;
constexpr int kSmemBytes = kBarrierOffset + kStages * 32 + kRawBuffers * 8 + 1024;
static_assert(kSmemBytes <= 227 * 1024, "shared memory");
static_assert(kTileBytes % 1024 == 0 && kK2Bytes % 1024 == 0 && kQ2Bytes % 1024 == 0, "swizzle atoms stay aligned");

// Byte offset of the 16-byte chunk c16 (8 FP16 of K index 8 c16 ..) of row r in a K-major 128-byte-swizzled
// tile of `rows` rows: column blocks of 64 FP16 (128 bytes), chunk c of row r at chunk c ^ (r & 7).
__host__ __device__ constexpr uint32_t swz16(int r, int c16, int rows) {
    return static_cast<uint32_t>((c16 >> 3) * (rows * 128) + r * 128 + (((c16 & 7) ^ (r & 7)) << 4));
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);  // .x (low 16 bits) = lo: the lower K index
    return *reinterpret_cast<const uint32_t*>(&h);
}
// 8 floats -> their FP16 hi parts and lo parts (x - hi, rounded), as two 16-byte chunks.
__device__ __forceinline__ void split8(const float (&x)[8], uint4& hi, uint4& lo) {
    uint32_t h[4], l[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const __half2 hh = __floats2half2_rn(x[2 * i], x[2 * i + 1]);
        const float2 back = __half22float2(hh);
        h[i] = *reinterpret_cast<const uint32_t*>(&hh);
        l[i] = pack_half2(x[2 * i] - back.x, x[2 * i + 1] - back.y);
    }
    hi = make_uint4(h[0], h[1], h[2], h[3]);
    lo = make_uint4(l[0], l[1], l[2], l[3]);
}

// ---- wgmma wrappers (FP16 in, FP32 accumulators; K-major operands) ----
#if !WGMMA16S_QREG
// S tile: m64n64k16, A and B from shared memory.
__device__ __forceinline__ void mma_s(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
#else
// S tile with A (Q) from registers.
__device__ __forceinline__ void mma_s_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
#endif
// P V: m64n{d}k16, A (P) from registers, accumulating onto O.
#if HEAD_DIM == 32
__device__ __forceinline__ void mma_pv(float (&d)[16], const uint32_t (&a)[4], uint64_t desc_b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
#elif HEAD_DIM == 64
__device__ __forceinline__ void mma_pv(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
#else
__device__ __forceinline__ void mma_pv(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
#endif

#if !WGMMA16S_QREG
// S = Q K^T in one accumulator: the cross terms first (hi * lo, lo * hi), then hi * hi onto them (issue
// only). k-step ks of a 2d-wide row: hi steps 0 .. kKSteps - 1, lo steps kKSteps .. 2 kKSteps - 1. desc_k
// steps 32 bytes (16 FP16) at a time, four to a 128-byte column block, as it steps 8 TF32 for wgmma3x.
__device__ __forceinline__ void issue_s(float (&scores)[32], uint32_t q2, uint32_t k2) {
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
        mma_s(scores, desc_k(q2, 64, kk), desc_k(k2, kTileKeys, kKSteps + kk), kk > 0);
        mma_s(scores, desc_k(q2, 64, kKSteps + kk), desc_k(k2, kTileKeys, kk), 1);
    }
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) mma_s(scores, desc_k(q2, 64, kk), desc_k(k2, kTileKeys, kk), 1);
}

#else
// The same with Q's A fragments in registers: qf[ks] for k-step ks of [Q hi | Q lo].
__device__ __forceinline__ void issue_s_qreg(float (&scores)[32], const uint32_t (&qf)[2 * kKSteps][4], uint32_t k2) {
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
        mma_s_rs(scores, qf[kk], desc_k(k2, kTileKeys, kKSteps + kk), kk > 0);
        mma_s_rs(scores, qf[kKSteps + kk], desc_k(k2, kTileKeys, kk), 1);
    }
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) mma_s_rs(scores, qf[kk], desc_k(k2, kTileKeys, kk), 1);
}

#endif

// O += P V (issue only): P's A fragment of k-step j holds keys 16 j .. 16 j + 15; V^T rows are 128 bytes
// (64 keys), so step j is 32 bytes into each row.
__device__ __forceinline__ void issue_pv(float (&o)[kHeadDim / 2], const uint32_t (&p)[kTileKeys / 16][4], uint32_t vt) {
#pragma unroll
    for (int j = 0; j < kTileKeys / 16; ++j) mma_pv(o, p[j], desc_k(vt, kHeadDim, j));
}

#if WGMMA16S_POLY_EIGHTHS > 0
// Whether column group j (0 .. 7: keys 8j + 2t, +1 of both rows, 4 weights a thread) takes its exponentials from
// exp2_poly: kPolyEighths of the 8 groups, spread evenly (1: j = 0; 2: 0, 4; 3: 0, 3, 6; 4: the even ones) so
// that the FMA-pipe work interleaves with the MUFU work in the unrolled loop.
__host__ __device__ constexpr bool poly_group(int j) { return (j * kPolyEighths) % 8 < kPolyEighths; }
#endif

// exp2 of a weight of column group j (j a constant once the loop is unrolled: the choice costs nothing).
__device__ __forceinline__ float weight_exp2(float x, [[maybe_unused]] int j) {
#if WGMMA16S_POLY_EIGHTHS > 0
    if (poly_group(j)) return exp2_poly(x);
#endif
    return exp2_ftz(x);
}

// Online softmax of one S tile (already in log2 units: Q was scaled), in place: on return scores holds
// P = exp2(S - m_new) in the accumulator layout (s[4j + e]: e = 0, 1 -> row lo, keys 8j + 2t, +1; e = 2, 3
// -> row hi); m and l are updated and alpha = exp2(m_old - m_new) is returned per row.
__device__ __forceinline__ void softmax_tile(float (&scores)[32], int key0, int N, int t, float& m_lo, float& m_hi,
                                             float& l_lo, float& l_hi, float& alpha_lo, float& alpha_hi) {
    if (key0 + kTileKeys > N) {  // keys past N (only in the last tile) are masked after the product
#pragma unroll
        for (int j = 0; j < kTileKeys / 8; ++j) {
            const int key = key0 + j * 8 + 2 * t;
            if (key >= N) scores[4 * j] = scores[4 * j + 2] = ATTN_NEG_INF;
            if (key + 1 >= N) scores[4 * j + 1] = scores[4 * j + 3] = ATTN_NEG_INF;
        }
    }
    float max_lo = m_lo, max_hi = m_hi;
#pragma unroll
    for (int j = 0; j < kTileKeys / 8; ++j) {
        max_lo = fmaxf(max_lo, fmaxf(scores[4 * j], scores[4 * j + 1]));
        max_hi = fmaxf(max_hi, fmaxf(scores[4 * j + 2], scores[4 * j + 3]));
    }
#pragma unroll
    for (int offset = 1; offset < 4; offset <<= 1) {
        max_lo = fmaxf(max_lo, __shfl_xor_sync(0xffffffffu, max_lo, offset));
        max_hi = fmaxf(max_hi, __shfl_xor_sync(0xffffffffu, max_hi, offset));
    }
    // A row with no valid key yet keeps m = -inf; shift by 0 then, so no exp2(-inf - -inf) = NaN.
    const float shift_lo = max_lo == ATTN_NEG_INF ? 0.0f : max_lo;
    const float shift_hi = max_hi == ATTN_NEG_INF ? 0.0f : max_hi;
    alpha_lo = exp2_ftz(m_lo - shift_lo);  // 0 on the first tile (m = -inf)
    alpha_hi = exp2_ftz(m_hi - shift_hi);
    m_lo = max_lo;
    m_hi = max_hi;
    float sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
    for (int j = 0; j < kTileKeys / 8; ++j) {
        scores[4 * j + 0] = weight_exp2(scores[4 * j + 0] - shift_lo, j);
        scores[4 * j + 1] = weight_exp2(scores[4 * j + 1] - shift_lo, j);
        scores[4 * j + 2] = weight_exp2(scores[4 * j + 2] - shift_hi, j);
        scores[4 * j + 3] = weight_exp2(scores[4 * j + 3] - shift_hi, j);
        sum_lo += scores[4 * j + 0] + scores[4 * j + 1];
        sum_hi += scores[4 * j + 2] + scores[4 * j + 3];
    }
    l_lo = fmaf(l_lo, alpha_lo, sum_lo);  // per-lane partial sums; the quad adds them at the end
    l_hi = fmaf(l_hi, alpha_hi, sum_hi);
}

// P (accumulator layout, FP32) -> FP16 A fragments: step j (keys 16 j ..): a0 = (row lo, keys 16j + 2t, +1),
// a1 = (row hi, same keys), a2 = (row lo, keys 16j + 8 + 2t, +1), a3 = (row hi, same keys). The l sums keep
// the FP32 weights: the FP16 rounding of P is part of the P V product's error (2^-12 relative a weight).
__device__ __forceinline__ void pack_p(const float (&s)[32], uint32_t (&p)[kTileKeys / 16][4]) {
#pragma unroll
    for (int j = 0; j < kTileKeys / 16; ++j) {
        p[j][0] = pack_half2(s[8 * j + 0], s[8 * j + 1]);
        p[j][1] = pack_half2(s[8 * j + 2], s[8 * j + 3]);
        p[j][2] = pack_half2(s[8 * j + 4], s[8 * j + 5]);
        p[j][3] = pack_half2(s[8 * j + 6], s[8 * j + 7]);
    }
}

__device__ __forceinline__ void rescale_o(float (&o)[kHeadDim / 2], float alpha_lo, float alpha_hi) {
#pragma unroll
    for (int n = 0; n < kHeadDim / 8; ++n) {
        o[4 * n + 0] *= alpha_lo;
        o[4 * n + 1] *= alpha_lo;
        o[4 * n + 2] *= alpha_hi;
        o[4 * n + 3] *= alpha_hi;
    }
}

// FlashAttention-3's schedule of the consumer warpgroups' products, in turn (wgmma3x's ping-pong for two):
// named barrier kSchedBarrier + w says warpgroup w may issue, 256 threads (w's wait, its predecessor's arrival).
constexpr int kSchedBarrier = 7;  // 7, 8, 9 (1, 2: Q in shared memory; 5: the key split; 10-13: kRawBarrier)
constexpr int kRawBarrier = 10;   // + staging buffer: the streaming producers' reads of it are done
__device__ __forceinline__ void sched_wait(int wg) {
#if WGMMA16S_PINGPONG
    asm volatile("bar.sync %0, 256;\n" ::"r"(kSchedBarrier + wg) : "memory");
#endif
}
__device__ __forceinline__ void sched_release(int wg, bool last) {
#if WGMMA16S_PINGPONG
    // the last warpgroup skips its last release so that every arrival has a matching wait
    const int next = wg + 1 == kWarpgroups ? 0 : wg + 1;
    if (!(last && wg == kWarpgroups - 1)) asm volatile("bar.arrive %0, 256;\n" ::"r"(kSchedBarrier + next) : "memory");
#endif
}

#include "wgmma_split.cuh"  // the key split, as wgmma3x: records of O, m, l and their combination

// One 8-byte store of two adjacent floats: a float2 store whose values the compiler had not placed in a register
// pair became two 4-byte stores, their sectors written twice (t11: 2 of a thread's 8 stores, 11% of the kernel's
// global sectors, ncu)
__device__ __forceinline__ void stg64(float* addr, float x, float y) {
    asm volatile("st.global.v2.f32 [%0], {%1, %2};\n" ::"l"(addr), "f"(x), "f"(y) : "memory");
}
__device__ __forceinline__ void sts128(uint32_t addr, uint4 v) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

}  // namespace

// ---- the pre-pass: K and V of every item, once, into the operand layout ----
// One block per (64-key tile, item); items past gridDim.y by steps of it. Block 256. K2 rows: a thread
// converts 8 consecutive floats of one row into a hi and a lo chunk; V goes through a padded shared-memory
// tile for the transposition, each thread writing one 16-byte chunk (8 keys) of a V^T row.
constexpr int kPrepThreads = 256;

extern "C" __global__ void __launch_bounds__(kPrepThreads)
    wgmma16s_prep(const float* __restrict__ qkv, uint8_t* __restrict__ kv16, int B, int N) {
    __shared__ float v_tile[kTileKeys][kHeadDim + 1];
    const int tile = blockIdx.x;
    const int n_tiles = gridDim.x;
    const int key0 = tile * kTileKeys;
    constexpr int kRowChunks = kHeadDim / 8;  // 8-float chunks of a row
    for (int b = blockIdx.y; b < B; b += gridDim.y) {
        const float* const K = qkv + qkv_item_offset(b, N, kHeadDim) + static_cast<size_t>(N) * kHeadDim;
        const float* const V = K + static_cast<size_t>(N) * kHeadDim;
        uint8_t* const dst = kv16 + (static_cast<size_t>(b) * n_tiles + tile) * kTileBytes;
        __syncthreads();  // the last item's v_tile reads are done
        for (int i = threadIdx.x; i < kTileKeys * kRowChunks; i += kPrepThreads) {
            const int r = i / kRowChunks, c = i % kRowChunks;
            const bool ok = key0 + r < N;
            const float* const kr = K + static_cast<size_t>(key0 + r) * kHeadDim + 8 * c;
            const float* const vr = V + static_cast<size_t>(key0 + r) * kHeadDim + 8 * c;
            const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
            const float4 k0 = ok ? __ldg(reinterpret_cast<const float4*>(kr)) : zero;
            const float4 k1 = ok ? __ldg(reinterpret_cast<const float4*>(kr) + 1) : zero;
            const float4 v0 = ok ? __ldg(reinterpret_cast<const float4*>(vr)) : zero;
            const float4 v1 = ok ? __ldg(reinterpret_cast<const float4*>(vr) + 1) : zero;
            const float x[8] = {k0.x, k0.y, k0.z, k0.w, k1.x, k1.y, k1.z, k1.w};
            uint4 hi, lo;
            split8(x, hi, lo);
            *reinterpret_cast<uint4*>(dst + swz16(r, c, kTileKeys)) = hi;
            *reinterpret_cast<uint4*>(dst + swz16(r, kRowChunks + c, kTileKeys)) = lo;
            const float v[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
#pragma unroll
            for (int e = 0; e < 8; ++e) v_tile[r][8 * c + e] = v[e];
        }
        __syncthreads();
        // V^T: row n (a column of V), chunk c = keys 8 c .. 8 c + 7; consecutive threads, consecutive chunks.
        for (int i = threadIdx.x; i < kHeadDim * (kTileKeys / 8); i += kPrepThreads) {
            const int n = i / (kTileKeys / 8), c = i % (kTileKeys / 8);
            uint32_t h[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) h[e] = pack_half2(v_tile[8 * c + 2 * e][n], v_tile[8 * c + 2 * e + 1][n]);
            *reinterpret_cast<uint4*>(dst + kK2Bytes + swz16(n, c, kHeadDim)) = make_uint4(h[0], h[1], h[2], h[3]);
        }
    }
}

// ---- the main kernel ----
// Grid (X, 1, key parts), block kThreads. The work is B * ceil(N / kBlockRows) units (item, row block),
// item-major; block x takes units x, x + X, ... Its rings, mbarrier phases and ping-pong run on from one
// unit to the next. Shared memory: K ring [kStages][K2], V ring [kStages][V^T], Q2 per warpgroup, then
// mbarriers full_k, full_v, empty_k, empty_v [kStages] each.
extern "C" __global__ void __launch_bounds__(kThreads, 1)
    wgmma16s_fwd(const float* __restrict__ qkv, float* __restrict__ out, int B, int N, float scale_log2,
                 const uint8_t* __restrict__ kv16, float* __restrict__ split_partials, float* __restrict__ split_counters) {
    extern __shared__ float4 smem_f4[];
    uint8_t* const smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_f4) + 1023) & ~uintptr_t(1023));
    uint8_t* const ring_k = smem;
    uint8_t* const ring_v = ring_k + kStages * kK2Bytes;
    [[maybe_unused]] uint8_t* const q_all = ring_v + kStages * kVtBytes;  // [kWarpgroups][Q2]
    uint64_t* const full_k = reinterpret_cast<uint64_t*>(smem + kBarrierOffset);
    uint64_t* const full_v = full_k + kStages;
    uint64_t* const empty_k = full_v + kStages;
    uint64_t* const empty_v = empty_k + kStages;
    uint64_t* const raw_full = empty_v + kStages;  // [kRawStages]: staging tile loaded (streaming path)

    const int row_tiles = (N + kBlockRows - 1) / kBlockRows;
    const int units = B * row_tiles;
    const int all_tiles = (N + kTileKeys - 1) / kTileKeys;
    const int splits = key_parts(N);
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    if (static_cast<int>(blockIdx.z) >= splits || static_cast<int>(blockIdx.x) >= units) return;  // block-uniform
    const int tile_begin = static_cast<int>(blockIdx.z) * all_tiles / splits;
    const int n_tiles = (static_cast<int>(blockIdx.z) + 1) * all_tiles / splits - tile_begin;

    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(full_k + s, kStream ? 4 : 1);  // streaming: each producer warp's arrival; else the copy's
            mbar_init(full_v + s, kStream ? 4 : 1);
            mbar_init(empty_k + s, kConsumerThreads / 32);
            mbar_init(empty_v + s, kConsumerThreads / 32);
        }
        for (int r = 0; r < kRawBuffers; ++r) mbar_init(raw_full + r, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (warp >= kConsumerThreads / 32) {
        // Producer warpgroup: one lane streams the converted tiles of each unit's item through the rings.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs) : "memory");
        if constexpr (kStream) {
            // The block's tiles in order, g = 0, 1, ...: unit blockIdx.x + (g / n_tiles) X, its tile g % n_tiles.
            // Raw K and V rows of tile g are bulk-copied into staging buffer g % kRawStages, kRawStages tiles ahead;
            // each of the 4 warps converts its share into ring stage g % kStages (keys past N as zeros) and hands
            // it to the consumers itself (full_k and full_v count the 4 warps), K as soon as it is written. Warp 0
            // refills a buffer once the 4 have read it (named barrier kRawBarrier + buffer: the other warps arrive
            // and go on; they cannot come back to it before warp 0's refill). Every per-tile index is kept
            // incrementally: the old loop's divisions and its barrier of the 4 warps on every tile held the
            // consumers waiting on full_k (t11, ncu).
            const int ptid = threadIdx.x - kConsumerThreads;
            const int step = static_cast<int>(gridDim.x);
            const int per_block = (units - static_cast<int>(blockIdx.x) + step - 1) / step;
            const int total = per_block * n_tiles;
            uint8_t* const raw = smem + kRawOffset;
            auto copy_raw = [&](int u, int tile, int r) {  // unit u's tile `tile` (of the block's part) into buffer r
                const int key0 = (tile_begin + tile) * kTileKeys;
                const uint32_t bytes = static_cast<uint32_t>(min(kTileKeys, N - key0)) * kHeadDim * 4;  // multiple of 16
                const float* const K = qkv + qkv_item_offset(u / row_tiles, N, kHeadDim) + static_cast<size_t>(N + key0) * kHeadDim;
                uint8_t* const dst = raw + r * kRawBytes;
                mbar_arrive_expect_tx(raw_full + r, 2 * bytes);
                bulk_copy(dst, K, bytes, raw_full + r);
                bulk_copy(dst + kRawBytes / 2, K + static_cast<size_t>(N) * kHeadDim, bytes, raw_full + r);
            };
            // the unit and tile kRawStages tiles ahead of the one converted (the next copy's)
            int copy_unit = static_cast<int>(blockIdx.x) + (kRawStages / n_tiles) * step;
            int copy_tile = kRawStages % n_tiles;
            if (ptid == 0)
                for (int gt = 0, u = blockIdx.x, tile = 0; gt < min(total, kRawStages); ++gt) {
                    copy_raw(u, tile, gt);
                    if (++tile == n_tiles) tile = 0, u += step;
                }
            constexpr int kRowChunks = kHeadDim / 8;
            constexpr int kKItems = kTileKeys * kRowChunks / 128;  // 8-float chunks of K a thread converts
            constexpr int kVItems = kHeadDim * (kTileKeys / 8) / 128;  // 8-key chunks of a V^T row a thread converts
            int tile = 0;  // of gt within its unit
            for (int gt = 0; gt < total; ++gt) {
                const int s = gt % kStages;
                const int r = gt % kRawStages;
                const uint32_t parity = ((gt / kStages) - 1) & 1;
                const int rows = min(kTileKeys, N - (tile_begin + tile) * kTileKeys);
                const uint32_t rk = smem_u32(raw + r * kRawBytes), rv = rk + kRawBytes / 2;
                const uint32_t dk = smem_u32(ring_k + s * kK2Bytes), dv = smem_u32(ring_v + s * kVtBytes);
                mbar_wait(raw_full + r, (gt / kRawStages) & 1);
                if (gt >= kStages) mbar_wait(empty_k + s, parity);
#pragma unroll 2
                for (int j = 0; j < kKItems; ++j) {
                    const int i = ptid + 128 * j, kr = i / kRowChunks, c = i % kRowChunks;
                    float4 a = lds128(rk + (kr * kHeadDim + 8 * c) * 4), b = lds128(rk + (kr * kHeadDim + 8 * c + 4) * 4);
                    if (kr >= rows) a = b = make_float4(0.f, 0.f, 0.f, 0.f);
                    const float x[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
                    uint4 hi, lo;
                    split8(x, hi, lo);
                    sts128(dk + swz16(kr, c, kTileKeys), hi);
                    sts128(dk + swz16(kr, kRowChunks + c, kTileKeys), lo);
                }
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes -> wgmma
                __syncwarp();
                if (lane == 0) mbar_arrive(full_k + s);
                if (gt >= kStages) mbar_wait(empty_v + s, parity);
#pragma unroll 2
                for (int j = 0; j < kVItems; ++j) {
                    const int i = ptid + 128 * j, n = i % kHeadDim, c = i / kHeadDim;  // consecutive threads, columns
                    uint32_t h[4];
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int key = 8 * c + 2 * e;
                        const float v0 = key < rows ? lds32(rv + (key * kHeadDim + n) * 4) : 0.0f;
                        const float v1 = key + 1 < rows ? lds32(rv + ((key + 1) * kHeadDim + n) * 4) : 0.0f;
                        h[e] = pack_half2(v0, v1);
                    }
                    sts128(dv + swz16(n, c, kHeadDim), make_uint4(h[0], h[1], h[2], h[3]));
                }
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes -> wgmma, bulk copy
                __syncwarp();
                if (lane == 0) mbar_arrive(full_v + s);
                if (ptid < 32) {  // warp 0 refills buffer r, kRawStages tiles on, once the 4 warps have read it
                    asm volatile("bar.sync %0, 128;\n" ::"r"(kRawBarrier + r) : "memory");
                    if (lane == 0 && gt + kRawStages < total) copy_raw(copy_unit, copy_tile, r);
                } else {
                    asm volatile("bar.arrive %0, 128;\n" ::"r"(kRawBarrier + r) : "memory");
                }
                if (++copy_tile == n_tiles) copy_tile = 0, copy_unit += step;
                if (++tile == n_tiles) tile = 0;
            }
            return;
        }
        if (warp != kConsumerThreads / 32 || lane != 0) return;
        int g = 0;  // tiles of the block's earlier units
        for (int u = blockIdx.x; u < units; u += gridDim.x, g += n_tiles) {
            const int b = u / row_tiles;
            const uint8_t* const src = kv16 + (static_cast<size_t>(b) * all_tiles + tile_begin) * kTileBytes;
            for (int tile = 0; tile < n_tiles; ++tile) {
                const int gt = g + tile;
                const int s = gt % kStages;
                const uint32_t parity = ((gt / kStages) - 1) & 1;
                const uint8_t* const from = src + static_cast<size_t>(tile) * kTileBytes;
                if (gt >= kStages) mbar_wait(empty_k + s, parity);
                mbar_arrive_expect_tx(full_k + s, kK2Bytes);
                bulk_copy(ring_k + s * kK2Bytes, from, kK2Bytes, full_k + s);
                if (gt >= kStages) mbar_wait(empty_v + s, parity);
                mbar_arrive_expect_tx(full_v + s, kVtBytes);
                bulk_copy(ring_v + s * kVtBytes, from + kK2Bytes, kVtBytes, full_v + s);
            }
        }
        return;
    }

    // ---- consumer warpgroup wg: query rows q0 .. q0 + 63 of each unit ----
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs) : "memory");
    const int wg = warp >> 2;
    const int wl = warp & 3;  // warp in warpgroup: rows 16 wl .. 16 wl + 15
    const int g = lane >> 2, t = lane & 3;
#if !WGMMA16S_QREG
    const int tid = threadIdx.x & 127;
    uint8_t* const q2 = q_all + wg * kQ2Bytes;
    const uint32_t q2a = smem_u32(q2);
#endif
    const uint32_t rk = smem_u32(ring_k), rv = smem_u32(ring_v);
    if (wg == kWarpgroups - 1) asm volatile("bar.arrive %0, 256;\n" ::"n"(kSchedBarrier) : "memory");  // warpgroup 0 issues first

#if WGMMA16S_QREG
    // The thread's Q values of unit u (rows clamped to N - 1; the rows past N are zeroed by their scale), in the
    // order of Q's A fragments below.
    auto load_q = [&](int u, float2 (&v)[kKSteps][4]) {
        const int b = u / row_tiles;
        const int row_lo = (u - b * row_tiles) * kBlockRows + wg * 64 + wl * 16 + g;
        const float* const Q = qkv + qkv_item_offset(b, N, kHeadDim);
        const float* const ql = Q + static_cast<size_t>(min(row_lo, N - 1)) * kHeadDim + 2 * t;
        const float* const qh = Q + static_cast<size_t>(min(row_lo + 8, N - 1)) * kHeadDim + 2 * t;
#pragma unroll
        for (int kk = 0; kk < kKSteps; ++kk) {
            v[kk][0] = __ldg(reinterpret_cast<const float2*>(ql + 16 * kk));
            v[kk][1] = __ldg(reinterpret_cast<const float2*>(qh + 16 * kk));
            v[kk][2] = __ldg(reinterpret_cast<const float2*>(ql + 16 * kk + 8));
            v[kk][3] = __ldg(reinterpret_cast<const float2*>(qh + 16 * kk + 8));
        }
    };
    [[maybe_unused]] float2 q_next[kKSteps][4];  // Q ahead: the next unit's values, in flight during this one
    if constexpr (kQAhead) load_q(blockIdx.x, q_next);
#endif

    int done = 0;  // tiles of the block's earlier units (the rings' count runs on across units)
    for (int u = blockIdx.x; u < units; u += gridDim.x, done += n_tiles) {
        const int b = u / row_tiles;
        const int q0 = (u - b * row_tiles) * kBlockRows + wg * 64;
        const bool final_unit = u + static_cast<int>(gridDim.x) >= units;  // (the ping-pong's last release)
        const int row_lo = q0 + wl * 16 + g;
        const int row_hi = row_lo + 8;
#if WGMMA16S_QREG
        // Q's A fragments of k-step kk (columns 16 kk ..): a0 = (row lo, columns 2t, 2t + 1), a1 = (row hi, the
        // same), a2 = (row lo, columns 8 + 2t, + 1), a3 = (row hi, the same); hi parts in steps 0 .. kKSteps - 1,
        // lo parts in steps kKSteps ..; Q scaled into log2 units first, rows past N zero.
        uint32_t qf[2 * kKSteps][4];
        {
            const float f_lo = row_lo < N ? scale_log2 : 0.0f, f_hi = row_hi < N ? scale_log2 : 0.0f;
            float2 v[kKSteps][4];
            if constexpr (kQAhead) {
#pragma unroll
                for (int kk = 0; kk < kKSteps; ++kk)
#pragma unroll
                    for (int e = 0; e < 4; ++e) v[kk][e] = q_next[kk][e];
                if (!final_unit) load_q(u + static_cast<int>(gridDim.x), q_next);
            } else {
                load_q(u, v);
            }
#pragma unroll
            for (int kk = 0; kk < kKSteps; ++kk) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const float f = (e & 1) ? f_hi : f_lo;
                    const float x = v[kk][e].x * f, y = v[kk][e].y * f;
                    const __half2 h = __floats2half2_rn(x, y);
                    const float2 back = __half22float2(h);
                    qf[kk][e] = *reinterpret_cast<const uint32_t*>(&h);
                    qf[kKSteps + kk][e] = pack_half2(x - back.x, y - back.y);
                }
            }
        }
#define ISSUE_S(k2) issue_s_qreg(scores, qf, k2)
#else
#define ISSUE_S(k2) issue_s(scores, q2a, k2)
        {
            // Q2 = [Q hi | Q lo] of the warpgroup's 64 rows, Q scaled into log2 units first; rows past N zero.
            const float* const Q = qkv + qkv_item_offset(b, N, kHeadDim);
            constexpr int kRowChunks = kHeadDim / 8;
            constexpr int kQChunks = 64 * kRowChunks / 128;
            // Q of the unit before is no longer read: every warp of the warpgroup has waited for its products
            if (done > 0) asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
            float4 q[kQChunks][2];
#pragma unroll
            for (int k = 0; k < kQChunks; ++k) {
                const int i = tid + 128 * k, r = i / kRowChunks, c = i % kRowChunks;
                const float4* const at = reinterpret_cast<const float4*>(Q + static_cast<size_t>(min(q0 + r, N - 1)) * kHeadDim + 8 * c);
                q[k][0] = __ldg(at);
                q[k][1] = __ldg(at + 1);
            }
#pragma unroll
            for (int k = 0; k < kQChunks; ++k) {
                const int i = tid + 128 * k, r = i / kRowChunks, c = i % kRowChunks;
                const float f = q0 + r < N ? scale_log2 : 0.0f;
                const float x[8] = {q[k][0].x * f, q[k][0].y * f, q[k][0].z * f, q[k][0].w * f,
                                    q[k][1].x * f, q[k][1].y * f, q[k][1].z * f, q[k][1].w * f};
                uint4 hi, lo;
                split8(x, hi, lo);
                *reinterpret_cast<uint4*>(q2 + swz16(r, c, 64)) = hi;
                *reinterpret_cast<uint4*>(q2 + swz16(r, kRowChunks + c, 64)) = lo;
            }
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes -> wgmma reads
            asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
        }
#endif
        float m_lo = ATTN_NEG_INF, m_hi = ATTN_NEG_INF;
        float l_lo = 0.0f, l_hi = 0.0f;
        float o[kHeadDim / 2];
#pragma unroll
        for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.0f;
        float scores[32];
        uint32_t p[kTileKeys / 16][4];
        float alpha_lo, alpha_hi;

        // S of tile i is issued together with P V of tile i - 1; the softmax of tile i runs while that
        // P V is on the tensor cores. O is rescaled by tile i's alpha once P V of tile i - 1 is done.
        {
            const int s = done % kStages;
            mbar_wait(full_k + s, (done / kStages) & 1);
            sched_wait(wg);
            wgmma_fence();
            ISSUE_S(rk + s * kK2Bytes);
            wgmma_commit();
            sched_release(wg, false);
            wgmma_wait<0>();
            pin(scores);
            __syncwarp();
            if (lane == 0) mbar_arrive(empty_k + s);
        }
        softmax_tile(scores, tile_begin * kTileKeys, N, t, m_lo, m_hi, l_lo, l_hi, alpha_lo, alpha_hi);
        pack_p(scores, p);
        for (int tile = 1; tile < n_tiles; ++tile) {
            const int gt = done + tile;
            const int s = gt % kStages, sp = (gt - 1) % kStages;
            mbar_wait(full_k + s, (gt / kStages) & 1);
            mbar_wait(full_v + sp, ((gt - 1) / kStages) & 1);
            pin(p);
            pin(o);
            sched_wait(wg);
            wgmma_fence();
            ISSUE_S(rk + s * kK2Bytes);
            wgmma_commit();
            issue_pv(o, p, rv + sp * kVtBytes);
            wgmma_commit();
            sched_release(wg, false);
            wgmma_wait<1>();  // S of this tile is done; P V of the last one may still run
            pin(scores);
            __syncwarp();
            if (lane == 0) mbar_arrive(empty_k + s);
            softmax_tile(scores, (tile_begin + tile) * kTileKeys, N, t, m_lo, m_hi, l_lo, l_hi, alpha_lo, alpha_hi);
            wgmma_wait<0>();
            pin(o);
            pin(p);
            __syncwarp();
            if (lane == 0) mbar_arrive(empty_v + sp);
            rescale_o(o, alpha_lo, alpha_hi);
            pack_p(scores, p);
        }
        {
            const int gt = done + n_tiles - 1;
            const int sp = gt % kStages;
            mbar_wait(full_v + sp, (gt / kStages) & 1);
            pin(p);
            pin(o);
            sched_wait(wg);
            wgmma_fence();
            issue_pv(o, p, rv + sp * kVtBytes);
            wgmma_commit();
            sched_release(wg, final_unit);
            wgmma_wait<0>();
            pin(o);
            pin(p);
            __syncwarp();
            if (lane == 0) mbar_arrive(empty_v + sp);
        }

        // The quad's lanes hold disjoint columns of each row: add their partial row sums, then normalise.
#pragma unroll
        for (int offset = 1; offset < 4; offset <<= 1) {
            l_lo += __shfl_xor_sync(0xffffffffu, l_lo, offset);
            l_hi += __shfl_xor_sync(0xffffffffu, l_hi, offset);
        }
        // a split's rows are written by the part that finishes last
        if (key_parts(N) == 1 || combine_splits(o, m_lo, m_hi, l_lo, l_hi, split_partials, split_counters, N, u)) {
            const float inv_lo = 1.0f / l_lo;
            const float inv_hi = 1.0f / l_hi;
            float* const O = out + out_item_offset(b, N, kHeadDim);
#pragma unroll
            for (int n = 0; n < kHeadDim / 8; ++n) {
                const int col = n * 8 + 2 * t;
                if (row_lo < N) stg64(O + static_cast<size_t>(row_lo) * kHeadDim + col, o[4 * n + 0] * inv_lo, o[4 * n + 1] * inv_lo);
                if (row_hi < N) stg64(O + static_cast<size_t>(row_hi) * kHeadDim + col, o[4 * n + 2] * inv_hi, o[4 * n + 3] * inv_hi);
            }
        }
    }
}
