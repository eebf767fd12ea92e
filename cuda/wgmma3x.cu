// wgmma3x: FlashAttention forward on Hopper tensor cores (wgmma), float32-accurate through 3xTF32.
//
// Technique (beyond 004, and beyond tf32x3's mma.sync): the same 3xTF32 arithmetic (x = big + small,
// big = x rounded to TF32; small*big + big*small + big*big, small*small dropped; a fresh tensor-core
// accumulator per K/V tile, added into FP32 registers) on sm_90a warpgroup MMA, FlashAttention-3 style:
// - a pre-pass splits K and V into big/small TF32 halves and writes each 64-key tile (32 at d = 128) as
//   one contiguous block already in the wgmma operand layout (K-major, 128-byte swizzle); V is
//   transposed on the way (wgmma takes tf32 K-major only) and its keys permuted within groups of 8 so
//   that P's accumulator layout is directly the A-fragment layout. A kernel of its own (wgmma3x_prep)
//   splits the items the main kernel's first two rounds of blocks start on; inside the main kernel,
//   three warps of each block's producer warpgroup take the other items' (item, tile) jobs in order from
//   a counter of the grid's, so most of this DRAM-bound pass over K and V overlaps the tensor-bound
//   products;
// - a producer lane (setmaxnreg gives the producer warpgroup's registers to the consumers) streams each
//   item's blocks, once its jobs are done, with cp.async.bulk into K and V shared-memory rings
//   (full/empty mbarriers, K released as soon as S is done with it);
// - N <= 256, 512 at d = 32, 1024 at d = 128 (wgmma3x_stream: no pre-pass): the producer warpgroup
//   bulk-copies each raw K and V tile into a staging tile of its own and its 128 threads split it into the ring
//   (split_raw_rows_k, split_raw_rows_vt: the pre-pass's layout). With one staging tile each for K and V,
//   the producer waits on each copy: faster than the pre-pass's extra launch and pass over K/V on short
//   items, slower on long;
// - two consumer warpgroups of 64 query rows: S = Q K^T by wgmma m64nNk8 (Q split once, in shared
//   memory; at d = 32 both halves in registers, at d = 128 Q big in registers and Q small in shared
//   memory), the small cross terms first and big * big onto them in one accumulator; online softmax in
//   registers (one MUFU.EX2 a weight, scale folded; keys past N masked to -inf after the product); O +=
//   P V by wgmma with P split in registers as the A operand (small = P - big, not rounded again). d <=
//   64: S of tile i is issued with P V of tile i - 1 and the softmax runs while P V is on the tensor
//   cores, the two warpgroups ping-pong (named barriers). d = 128: S, softmax, then P V in two halves of
//   64 columns through one accumulator, the two warpgroups free-running (O, Q big and a second S or
//   P V accumulator do not fit in a consumer's 240 registers together).
// - persistent blocks: a block works through units (item, row block) x, x + X, ... of the grid's
//   X, its rings, phases and ping-pong running on from one unit to the next, so that set-up, the first
//   copy's latency and the ring's fill are paid once per block rather than once per unit;
// - few items (t10: the grid's last wave nearly empty): the key range of each row block is split
//   into gridDim.z parts (flash-decoding style; the host chooses the count). Each block writes a record
//   of its unnormalised O, m and l; the last of a row block's parts to finish (a counter, which it sets
//   back to zero) adds the records in part order, rescaled to the common max, and writes the rows.
// - short sequences (d = 32, N <= 128: many items of one block's worth each, t11): wgmma3x_short, with no
//   pre-pass and no workspace. A block of 2 consumer warpgroups holds whole items and works through
//   WGMMA3X_SHORT_ITEMS consecutive ones; a producer warpgroup bulk-copies each item's raw Q K V two items
//   ahead into one of two staging buffers and splits K/V of the next item into the same operand tiles as
//   the pre-pass (split_raw_rows_k/vt; split_k_tile/vt_tile for a tile past N) while the consumers compute
//   the current one;
//   the consumers split Q into registers, then S, softmax, P V as in wgmma3x_fwd.
//
// Constraints: sm_90a only (wgmma, setmaxnreg, cp.async.bulk, mbarrier tx): build with arch sm_90a.
// HEAD_DIM 32, 64 or 128. Any N >= 1 (query rows past N not written; keys past N zero-filled and masked); any B.
// Launches, d = 32 and N <= 128: wgmma3x_short(qkv, out, B, N, scale_log2) grid ceil(B / WGMMA3X_SHORT_ITEMS),
// block 384, dynamic shared memory kShortSmemBytes (230,464 B: two operand buffers of 64 KB, two raw buffers of 48
// KB, 8 mbarriers), no workspace. Otherwise: workspaces split_counters B * ceil(N / 128) words, zero before
// the first pass, and, with S > 1 parts, split_partials B * ceil(N / 128) * S * kRecordFloats floats; N <=
// 256 (512 at d = 32, 1024 at d = 128): wgmma3x_stream(qkv, out, B, N, scale_log2, split_partials,
// split_counters); beyond: workspaces kv_split 4 * B * ceil(N / BN) * BN * d floats (BN = 64, 32 at d = 128)
// and prep_counters 3 + B * ceil(ceil(N / BN) / 8) words, zero before the first pass,
// wgmma3x_prep(qkv, kv_split, prep_counters, N) grid (ceil(N / BN), P), block 256 (P items, at most B and
// 65535), then wgmma3x_fwd(qkv, out, B, N, scale_log2, kv_split, prep_counters, split_partials,
// split_counters). Both main kernels: dynamic shared memory
// kStreamSmemBytes (181,504 B at d = 32, 230,528 B at d = 64 and 128), grid (X, 1, S), block 384: X blocks deal
// out the B * ceil(N / 128) units (item, row block), any X from 1 up; S parts, at most ceil(N / BN) of them
// used.
#include <cstdint>

#include "common.cuh"
#include "wgmma_common.cuh"  // split, swizzle, descriptors, wgmma fences, mbarriers, bulk copy

#ifndef HEAD_DIM
#error "wgmma3x.cu needs -DHEAD_DIM=<d>"
#endif
#if HEAD_DIM != 32 && HEAD_DIM != 64 && HEAD_DIM != 128
#error "wgmma3x.cu needs HEAD_DIM 32, 64 or 128"
#endif
#ifndef WGMMA3X_OVERLAP
// FA3 intra-warpgroup overlap of softmax with the tensor cores; 0: plain order. Not at d = 128: S of the
// next tile, P of this one and Q big would not fit beside O in the consumers' registers (spills).
#define WGMMA3X_OVERLAP (HEAD_DIM != 128)
#endif
// (No preprocessor guard on __CUDA_ARCH_FEAT_SM90_ALL: pycuda's cache-key preprocessing pass does not
// define it. Built for anything but sm_90a, ptxas rejects the wgmma / setmaxnreg instructions.)
#ifndef WGMMA3X_QREG
// Q in registers for S (measured: pays at d = 32, not at d = 64, see NOTES.md); at d = 128 Q big must be in
// registers: two warpgroups' Q big and small do not fit in shared memory beside the rings
#define WGMMA3X_QREG (HEAD_DIM == 32 || HEAD_DIM == 128)
#endif
#ifndef WGMMA3X_PINGPONG
#define WGMMA3X_PINGPONG 1  // FA3 ping-pong of the two consumer warpgroups (named barriers); 0: free-running
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "wgmma3x.cu needs sm_90a (wgmma): compile with arch sm_90a"
#endif

namespace {

constexpr int kHeadDim = HEAD_DIM;
constexpr int kWarpgroups = 2;                         // consumer warpgroups, 64 query rows each
constexpr int kTileKeys = kHeadDim <= 64 ? 64 : 32;    // keys per K/V tile (S's N, P V's K)
constexpr int kStages = kHeadDim == 32 ? 4 : 2;        // shared-memory ring depth
constexpr int kBlockRows = 64 * kWarpgroups;
constexpr int kConsumerThreads = 128 * kWarpgroups;
constexpr int kThreads = kConsumerThreads + 128;        // + one producer warpgroup
constexpr int kTileFloats = kTileKeys * kHeadDim;       // one of K big, K small, V^T big, V^T small
constexpr int kStageFloats = 4 * kTileFloats;
constexpr int kQFloats = 64 * kHeadDim;                 // one warpgroup's Q big (or small)
constexpr int kProducerThreads = 128;
constexpr int kProducerBarrier = 6;  // named barrier of the producer warpgroup (1, 2: Q; 3, 4: ping-pong; 5: split)
// setmaxnreg with 2 consumer warpgroups: the consumers keep the 240 registers they need (232 spills at
// d = 64); the producer splits in 24, one float4 at a time (split_raw_rows_k, split_raw_rows_vt).
constexpr int kProducerRegs = 24;
constexpr int kConsumerRegs = 240;
static_assert(kProducerThreads * kProducerRegs + kConsumerThreads * kConsumerRegs <= 65536, "register file");
// WGMMA3X_QREG: S = Q K^T takes Q from registers (wgmma A operand), saving shared-memory bandwidth.
// d = 32: Q big and small both in registers; d = 128 (and d = 64 where WGMMA3X_QREG asks): Q big in
// registers, Q small still in shared memory.
constexpr bool kQReg = WGMMA3X_QREG;
constexpr bool kQSmallInRegs = kQReg && kHeadDim == 32;
constexpr int kQRegSteps = kQReg ? kHeadDim / 8 : 1;
constexpr int kQSmallSteps = kQSmallInRegs ? kHeadDim / 8 : 1;
// Q halves a consumer warpgroup keeps in shared memory: big and small, or at d = 128 small only (Q big in
// registers; two warpgroups' Q big and small, 128 KB, would leave no room for the rings).
constexpr int kQSmemHalves = kHeadDim == 128 ? 1 : 2;
static_assert(kHeadDim != 128 || (kQReg && !kQSmallInRegs),
              "d = 128 keeps Q big in registers, Q small in shared memory");
// d = 128: P V in two halves of 64 columns (V^T rows) through one 32-float accumulator: a 64-float one
// beside O and Q big would not fit in the consumers' 240 registers.
constexpr int kPvHalves = kHeadDim == 128 ? 2 : 1;
constexpr int kPvCols = kHeadDim / kPvHalves;
// dynamic shared memory of the main kernels: K and V rings + Q (big, small) per warpgroup + 4 mbarriers per
// stage, 2 for the raw tiles and 1 for the streaming lane's end, then one raw K and one raw V tile,
// 128-byte aligned, + 1024 alignment slack.
constexpr int kBarrierOffsetFloats = kStages * kStageFloats + kWarpgroups * kQSmemHalves * kQFloats;  // rings, Q
constexpr int kRawOffsetFloats = (kBarrierOffsetFloats * 4 + kStages * 32 + 24 + 127) / 128 * 32;
constexpr int kStreamSmemBytes = kRawOffsetFloats * 4 + 2 * kTileFloats * 4 + 1024;
static_assert(kStreamSmemBytes <= 227 * 1024, "shared memory");

// ---- generated wgmma wrappers (m64nNk8 tf32, A from shared memory or registers) ----
#if HEAD_DIM == 128
__device__ __forceinline__ void wgmma_ss_n32(float (&d)[16], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
#else
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
#endif

#if HEAD_DIM == 32 || HEAD_DIM == 128
__device__ __forceinline__ void wgmma_rs_n32(float (&d)[16], const uint32_t (&a)[4], uint64_t desc_b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
#endif
#if HEAD_DIM == 64 || HEAD_DIM == 128 || (WGMMA3X_QREG && HEAD_DIM == 32)
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
#endif

// S tile (64 x kTileKeys) products, A from shared memory or registers, and P V tile (64 x kPvCols) products.
__device__ __forceinline__ void mma_s(float (&d)[kTileKeys / 2], uint64_t a, uint64_t b, int scale_d) {
#if HEAD_DIM == 128
    wgmma_ss_n32(d, a, b, scale_d);
#else
    wgmma_ss_n64(d, a, b, scale_d);
#endif
}
#if WGMMA3X_QREG
__device__ __forceinline__ void mma_s_rs(float (&d)[kTileKeys / 2], const uint32_t (&a)[4], uint64_t b, int scale_d) {
#if HEAD_DIM == 128
    wgmma_rs_n32(d, a, b, scale_d);
#else
    wgmma_rs_n64(d, a, b, scale_d);
#endif
}
#endif
__device__ __forceinline__ void mma_pv(float (&d)[kPvCols / 2], const uint32_t (&a)[4], uint64_t b, int scale_d) {
#if HEAD_DIM == 32
    wgmma_rs_n32(d, a, b, scale_d);
#else
    wgmma_rs_n64(d, a, b, scale_d);
#endif
}

// ---- one K/V tile in the operand layout ---------------------------------------------------------
// A tile's [K big | K small] (split_k_tile) and [V^T big | V^T small] (split_vt_tile), kTileFloats floats
// each half, at dst (global memory for wgmma3x_prep, shared memory for wgmma3x_short's tiles past N; the
// producers' splits of whole raw tiles are split_raw_rows_k/vt below, in the same layout).
// load_k(r, c4) gives the float4 of tile row r, columns 4 c4 .. 4 c4 + 3, and load_v(key, n) one V
// element; both return 0 for keys past N. V is transposed (wgmma takes tf32 K-major only) with the key
// order 0 2 4 6 1 3 5 7 inside each group of 8, since P's A fragment holds keys 2t, 2t + 1 (see split_p).
// kVtAlongN: consecutive threads take consecutive V columns n (for an unpadded row-major V in shared
// memory, where the keys of one column share a bank); otherwise consecutive 16-byte chunks of one V^T
// row (whole 128-byte rows, for stores to global memory).
template <int kThreadCount, int kUnroll, class LoadK>
__device__ __forceinline__ void split_k_tile(float* dst, LoadK load_k, int tid) {
    constexpr int kRowChunks = kHeadDim / 4;
#pragma unroll kUnroll
    for (int i = tid; i < kTileKeys * kRowChunks; i += kThreadCount) {
        const int r = i / kRowChunks, c4 = i % kRowChunks;
        float4 big, small;
        split4(load_k(r, c4), big, small);
        *reinterpret_cast<float4*>(dst + swz(r, c4, kTileKeys)) = big;
        *reinterpret_cast<float4*>(dst + kTileFloats + swz(r, c4, kTileKeys)) = small;
    }
}
template <int kThreadCount, int kUnroll, bool kVtAlongN, class LoadV>
__device__ __forceinline__ void split_vt_tile(float* dst, LoadV load_v, int tid) {
    constexpr int kKeyChunks = kTileKeys / 4;
#pragma unroll kUnroll
    for (int i = tid; i < kHeadDim * kKeyChunks; i += kThreadCount) {
        const int n = kVtAlongN ? i % kHeadDim : i / kKeyChunks;
        const int p4 = kVtAlongN ? i / kHeadDim : i % kKeyChunks;
        const int key = ((p4 >> 1) << 3) + (p4 & 1);  // positions 4 p4 .. 4 p4 + 3 hold keys key, key + 2, +4, +6
        const float4 v = make_float4(load_v(key, n), load_v(key + 2, n), load_v(key + 4, n), load_v(key + 6, n));
        float4 big, small;
        split4(v, big, small);
        *reinterpret_cast<float4*>(dst + swz(n, p4, kHeadDim)) = big;
        *reinterpret_cast<float4*>(dst + kTileFloats + swz(n, p4, kHeadDim)) = small;
    }
}
// A destination in shared memory by its 32-bit address, stepped in floats like a float*.
struct SmemFloats {
    uint32_t addr;
    __device__ SmemFloats operator+(unsigned floats) const { return {addr + 4 * floats}; }
};
__device__ __forceinline__ void store4(float* at, float4 v) { *reinterpret_cast<float4*>(at) = v; }
__device__ __forceinline__ void store4(SmemFloats at, float4 v) {
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(at.addr), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}
// One float4 of a raw tile split into `at` (big) and `at + kTileFloats` (small), big stored before small is
// formed: the producer warpgroup runs in 24 registers.
template <class Dst>
__device__ __forceinline__ void split_store(float4 x, Dst at) {
    float4 big;
    big.x = __uint_as_float(tf32_round(x.x));
    big.y = __uint_as_float(tf32_round(x.y));
    big.z = __uint_as_float(tf32_round(x.z));
    big.w = __uint_as_float(tf32_round(x.w));
    store4(at, big);
    x.x = __uint_as_float(tf32_round(x.x - big.x));
    x.y = __uint_as_float(tf32_round(x.y - big.y));
    x.z = __uint_as_float(tf32_round(x.z - big.z));
    x.w = __uint_as_float(tf32_round(x.w - big.w));
    store4(at + kTileFloats, x);
}
// The producer's splits of one raw tile (at shared address raw, every row valid: the tail of a short last
// tile is zeroed first) into dst (global memory, or shared memory by address), by kThreads threads from
// thread kFirstThread. Written for a thread count that divides into a row's chunks rather than through
// split_k_tile / split_vt_tile: each thread keeps its column and steps over rows, and the raw tile is read
// by its 32-bit shared address, so an element costs its split and little else. The generic loops' index
// and 64-bit address arithmetic (the aligned dynamic shared memory is a generic pointer to the compiler)
// cost 60-67 instructions a float4 against 35-49 here, and held up the consumers (measured on the H100:
// 8 us a pre-pass job, a third of t22's kernel spent splitting).
template <int kThreads, int kFirstThread, class Dst>
__device__ __forceinline__ void split_raw_rows_k(Dst dst, uint32_t raw) {
    // the thread's index read afresh (asm volatile), not kept from the kernel's start: in 24 registers the
    // values derived from it would be spilled across the callers' loops
    unsigned tid;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
    tid -= kFirstThread;
    constexpr unsigned kRowChunks = kHeadDim / 4;
    constexpr unsigned kRowStep = kThreads / kRowChunks;
    static_assert(kThreads % kRowChunks == 0, "a thread keeps one column chunk");
    const unsigned c4 = tid % kRowChunks;
    const Dst column = dst + (c4 >> 3) * (kTileKeys * 32);
#pragma unroll 1
    for (unsigned r = tid / kRowChunks; r < kTileKeys; r += kRowStep)
        split_store(lds128(raw + (r * kHeadDim + 4 * c4) * 4), column + (r * 32 + (((c4 ^ r) & 7) << 2)));  // swz(r, c4, kTileKeys)
}
template <int kThreads, class Dst>
__device__ __forceinline__ void split_raw_rows_vt(Dst dst, uint32_t raw, unsigned tid) {
    constexpr unsigned kKeyChunks = kTileKeys / 4;
#pragma unroll 1
    for (unsigned i = tid; i < kHeadDim * kKeyChunks; i += kThreads) {
        const unsigned n = i % kHeadDim, p4 = i / kHeadDim;  // consecutive threads, consecutive columns: no bank conflict
        const unsigned key = ((p4 >> 1) << 3) + (p4 & 1);    // as split_vt_tile: keys key, key + 2, + 4, + 6
        const uint32_t v = raw + (key * kHeadDim + n) * 4;
        split_store(make_float4(lds32(v), lds32(v + 8 * kHeadDim), lds32(v + 16 * kHeadDim), lds32(v + 24 * kHeadDim)),
                    dst + ((p4 >> 3) * (kHeadDim * 32) + n * 32 + (((p4 ^ n) & 7) << 2)));  // swz(n, p4, kHeadDim)
    }
}
// A short last tile: raw rows past `rows` (stale, never copied) become zeros, for keys past N, before the
// threads' barrier that follows.
template <int kThreads>
__device__ __forceinline__ void zero_raw_rows(uint32_t raw, int rows, unsigned tid) {
    for (unsigned i = rows * kHeadDim / 4 + tid; i < kTileFloats / 4; i += kThreads) sts128_zero(raw + 16 * i);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // before the next bulk copy writes here
}

}  // namespace

// ---- the pre-pass: a kernel of its own for the first items, the main kernel's producer for the rest ----
// Each (item, K/V tile) pair is one job: its raw K and V rows are split into kv_split as one contiguous
// block of kStageFloats floats in the ring's layout ([K big | K small | V^T big | V^T small], as
// split_k_tile and split_vt_tile lay it out). wgmma3x_prep does every job of items 0 .. P - 1 (its grid's
// y; P is what the main kernel's first blocks need, or every item when there are few); inside
// wgmma3x_fwd, three warps of each block's producer warpgroup take the jobs of items P .. B - 1 in order
// from a counter shared by the grid, while the warpgroup's first lane streams split tiles into the rings.
// So most of the pre-pass's DRAM-bound pass over K and V runs beside the tensor-bound products, and a
// short launch covers the start, where every block waits for its first tiles and the workers (one job in
// flight a block) could not keep up.
// prep_counters: [0] jobs handed out, [1] blocks finished, [2] P (written by wgmma3x_prep), then one count
// of split tiles per group of kReadyTiles consecutive tiles of each item (item-major), so that a lane starts
// on an item's first tiles while its later ones are split. [0], [1] and the groups are zero before a pass
// (the host zeroes the workspace once); the last block of wgmma3x_fwd sets them back to zero.
// Progress: a block whose streaming lane waits for a tile has its own workers taking jobs until every job
// is handed out, and a job handed out is finished by a resident block, so no wait is on a block that is
// not running (this holds for any grid, persistent or not).
constexpr int kPrepThreads = 256;
constexpr int kPrepCounterHead = 3;
constexpr int kPrepWorkers = kProducerThreads - 32;  // producer warps 1-3 (warp 0's lane 0 streams)
constexpr int kWorkerBarrier = 7;                    // named barrier of the workers
constexpr int kReadyTiles = 8;

__device__ __forceinline__ int ready_groups(int N) { return (N + kTileKeys * kReadyTiles - 1) / (kTileKeys * kReadyTiles); }

// wgmma3x_prep: one block per (key tile, item) of items 0 .. gridDim.y - 1; V goes through a padded
// shared-memory tile for the transposition. It records how many items it split for wgmma3x_fwd.
extern "C" __global__ void __launch_bounds__(kPrepThreads)
    wgmma3x_prep(const float* __restrict__ qkv, float* __restrict__ kv_split, unsigned* __restrict__ prep_counters, int N) {
    __shared__ float v_tile[kTileKeys][kHeadDim + 1];
    const int tile = blockIdx.x;
    const int b = blockIdx.y;
    const int n_tiles = gridDim.x;
    if (tile == 0 && b == 0 && threadIdx.x == 0) prep_counters[2] = gridDim.y;
    const float* const K = qkv + qkv_item_offset(b, N, kHeadDim) + static_cast<size_t>(N) * kHeadDim;
    const float* const V = K + static_cast<size_t>(N) * kHeadDim;
    float* const dst = kv_split + (static_cast<size_t>(b) * n_tiles + tile) * kStageFloats;
    const int key0 = tile * kTileKeys;
    constexpr int kRowChunks = kHeadDim / 4;
    for (int i = threadIdx.x; i < kTileKeys * kRowChunks; i += kPrepThreads) {
        const int r = i / kRowChunks, c4 = i % kRowChunks;
        const float4 v = key0 + r < N ? __ldg(reinterpret_cast<const float4*>(V + static_cast<size_t>(key0 + r) * kHeadDim + 4 * c4))
                                      : make_float4(0.f, 0.f, 0.f, 0.f);
        v_tile[r][4 * c4 + 0] = v.x;
        v_tile[r][4 * c4 + 1] = v.y;
        v_tile[r][4 * c4 + 2] = v.z;
        v_tile[r][4 * c4 + 3] = v.w;
    }
    __syncthreads();
    split_k_tile<kPrepThreads, 2>(
        dst,
        [&](int r, int c4) {
            return key0 + r < N ? __ldg(reinterpret_cast<const float4*>(K + static_cast<size_t>(key0 + r) * kHeadDim + 4 * c4))
                                : make_float4(0.f, 0.f, 0.f, 0.f);
        },
        threadIdx.x);
    split_vt_tile<kPrepThreads, 2, false>(dst + 2 * kTileFloats, [&](int key, int n) { return v_tile[key][n]; }, threadIdx.x);
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ int nctaid_x() {
    unsigned x;
    asm volatile("mov.u32 %0, %%nctaid.x;\n" : "=r"(x));
    return static_cast<int>(x);
}
__device__ __forceinline__ void workers_sync() {
    asm volatile("bar.sync %0, %1;\n" ::"n"(kWorkerBarrier), "n"(kPrepWorkers) : "memory");
}

// A short last tile in the workers' raw tile.
__device__ __forceinline__ void zero_raw_tail(uint32_t raw, int rows, unsigned wtid) {
    zero_raw_rows<kPrepWorkers>(raw, rows, wtid);
    workers_sync();
}

// The workers' loop. The next job is taken while this one is split, and its K is copied in while this
// job's V is split (raw_full_k and raw_full_v complete in the same phase for each job).
__device__ __forceinline__ void run_prep_jobs(const float* __restrict__ qkv, float* __restrict__ kv_split,
                                              unsigned* __restrict__ prep_counters, int B, int N, uint32_t raw_k,
                                              uint64_t* raw_full_k, uint64_t* raw_full_v, unsigned wtid) {
    __shared__ unsigned job_slot;
    const int all_tiles = (N + kTileKeys - 1) / kTileKeys;
    const unsigned jobs = static_cast<unsigned>(B) * static_cast<unsigned>(all_tiles);  // job j: item j / all_tiles's tile j % all_tiles
    // the jobs of wgmma3x_prep's items come first: prep_counters[2] * all_tiles of them (read where needed,
    // not kept: the producer warpgroup runs in 24 registers)
    auto first = [&] { return __ldcg(prep_counters + 2) * static_cast<unsigned>(all_tiles); };
    auto rows_of = [&](unsigned j) { return min(kTileKeys, N - static_cast<int>(j % all_tiles) * kTileKeys); };
    const uint32_t raw_v = raw_k + kTileFloats * 4;
    auto copy_raw = [&](uint32_t raw, unsigned j, int which, uint64_t* bar) {  // which: 1 K, 2 V
        const int b = static_cast<int>(j / all_tiles), tile = static_cast<int>(j % all_tiles);
        const float* const src = qkv + qkv_item_offset(b, N, kHeadDim) + static_cast<size_t>(which * N + tile * kTileKeys) * kHeadDim;
        const uint32_t bytes = static_cast<uint32_t>(rows_of(j)) * kHeadDim * 4;  // a multiple of 16: kHeadDim >= 32
        mbar_arrive_expect_tx(bar, bytes);
        bulk_copy(raw, src, bytes, bar);
    };
    if (wtid == 0) {
        job_slot = first() + atomicAdd(prep_counters, 1u);
        if (job_slot < jobs) {
            copy_raw(raw_k, job_slot, 1, raw_full_k);
            copy_raw(raw_v, job_slot, 2, raw_full_v);
        }
    }
    workers_sync();
    unsigned j = job_slot;
    workers_sync();  // every worker has read job_slot before the loop writes the next job into it
    for (uint32_t phase = 0; j < jobs; phase ^= 1) {
        // The next job: every worker has read job_slot (after the last iteration's first barrier), and all
        // read it again only after this iteration's first barrier.
        if (wtid == 0) job_slot = first() + atomicAdd(prep_counters, 1u);
        const int rows = rows_of(j);
        mbar_wait(raw_full_k, phase);
        if (rows < kTileKeys) zero_raw_tail(raw_k, rows, wtid);
        split_raw_rows_k<kPrepWorkers, kConsumerThreads + 32>(kv_split + static_cast<size_t>(j) * kStageFloats, raw_k);
        workers_sync();  // raw_k is free; job_slot holds the next job
        const unsigned next = job_slot;
        if (wtid == 0 && next < jobs) copy_raw(raw_k, next, 1, raw_full_k);
        mbar_wait(raw_full_v, phase);
        if (rows < kTileKeys) zero_raw_tail(raw_v, rows, wtid);
        split_raw_rows_vt<kPrepWorkers>(kv_split + static_cast<size_t>(j) * kStageFloats + 2 * kTileFloats, raw_v, wtid);
        __threadfence();  // this job's stores, device-wide, before the item's count below
        workers_sync();   // raw_v is free; every worker's stores are fenced
        if (wtid == 0) {
            const unsigned b = j / all_tiles;
            atomicAdd(prep_counters + kPrepCounterHead + b * ready_groups(N) + (j - b * all_tiles) / kReadyTiles, 1u);
            if (next < jobs) copy_raw(raw_v, next, 2, raw_full_v);
        }
        j = next;
    }
}

// The streaming lane's wait for the group of item b's tiles that holds `tile`, before it copies any of them
// (items past wgmma3x_prep's; those were split before this launch).
__device__ __forceinline__ void wait_tiles_split(const unsigned* prep_counters, int b, int tile, int N) {
    if (static_cast<unsigned>(b) < __ldcg(prep_counters + 2)) return;
    const int all_tiles = (N + kTileKeys - 1) / kTileKeys, group = tile / kReadyTiles;
    const unsigned tiles = static_cast<unsigned>(min(kReadyTiles, all_tiles - group * kReadyTiles));
    while (load_acquire(prep_counters + kPrepCounterHead + b * ready_groups(N) + group) < tiles) __nanosleep(128);
    asm volatile("fence.proxy.async.global;\n" ::: "memory");  // the bulk copies that follow read the split tiles
}

// The workers' last step: count the block as finished; the last block of the grid sets prep_counters back
// to zero for the next pass. Every job is done by then (each block's workers finish theirs before it
// counts), and no lane reads the counters any more (each block's lane is done before its workers count).
__device__ __forceinline__ void finish_prep(unsigned* __restrict__ prep_counters, int B, int N, int wtid) {
    __shared__ unsigned finished_before;
    if (wtid == 0) {
        __threadfence();
        finished_before = atomicAdd(prep_counters + 1, 1u);
    }
    workers_sync();
    if (finished_before != gridDim.x * gridDim.y * gridDim.z - 1) return;
    for (int i = wtid; i < B * ready_groups(N); i += kPrepWorkers) prep_counters[kPrepCounterHead + i] = 0u;
    if (wtid == 0) prep_counters[0] = prep_counters[1] = 0u;
}


// ---- the consumer's steps on one tile ------------------------------------------------------------
// S = Q K^T in one accumulator, the small cross terms first, then big * big onto them (issue only).
// Measured on the H200 against a second accumulator for the small terms added in FP32 after the
// product: 1-2% faster (32 fewer additions on the softmax's path and 32 fewer registers), and relL2
// 1-5% lower on t02-t30.
__device__ __forceinline__ void issue_s(float (&scores)[kTileKeys / 2], uint32_t qb, uint32_t qs, uint32_t kb) {
    const uint32_t ks = kb + kTileFloats * 4;
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 8; ++kk) {
        mma_s(scores, desc_k(qs, 64, kk), desc_k(kb, kTileKeys, kk), kk > 0);
        mma_s(scores, desc_k(qb, 64, kk), desc_k(ks, kTileKeys, kk), 1);
    }
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 8; ++kk) mma_s(scores, desc_k(qb, 64, kk), desc_k(kb, kTileKeys, kk), 1);
}

#if WGMMA3X_QREG
// S = Q K^T with Q's A fragments in registers (see kQReg).
__device__ __forceinline__ void issue_s_qreg(float (&scores)[kTileKeys / 2],
                                             const uint32_t (&qf_big)[kQRegSteps][4],
                                             const uint32_t (&qf_small)[kQSmallSteps][4], uint32_t qs, uint32_t kb) {
    const uint32_t ks = kb + kTileFloats * 4;
    if constexpr (kQSmallInRegs) {
#pragma unroll
        for (int kk = 0; kk < kHeadDim / 8; ++kk) {
            mma_s_rs(scores, qf_small[kk], desc_k(kb, kTileKeys, kk), kk > 0);
            mma_s_rs(scores, qf_big[kk], desc_k(ks, kTileKeys, kk), 1);
        }
#pragma unroll
        for (int kk = 0; kk < kHeadDim / 8; ++kk) mma_s_rs(scores, qf_big[kk], desc_k(kb, kTileKeys, kk), 1);
    } else {
#pragma unroll
        for (int kk = 0; kk < kHeadDim / 8; ++kk) {
            mma_s(scores, desc_k(qs, 64, kk), desc_k(kb, kTileKeys, kk), kk > 0);
            mma_s_rs(scores, qf_big[kk], desc_k(ks, kTileKeys, kk), 1);
        }
#pragma unroll
        for (int kk = 0; kk < kHeadDim / 8; ++kk) mma_s_rs(scores, qf_big[kk], desc_k(kb, kTileKeys, kk), 1);
    }
}
#define ISSUE_S(kaddr) issue_s_qreg(scores, qf_big, qf_small, qs, kaddr)
#else
#define ISSUE_S(kaddr) issue_s(scores, qb, qs, kaddr)
#endif

// P V (columns kPvCols h .. kPvCols (h + 1) - 1) into the fresh accumulator pv, small terms first (issue only).
__device__ __forceinline__ void issue_pv(float (&pv)[kPvCols / 2], const uint32_t (&p_big)[kTileKeys / 8][4],
                                         const uint32_t (&p_small)[kTileKeys / 8][4], uint32_t vb, int h = 0) {
    vb += h * kPvCols * 128;  // V^T rows kPvCols h ..: one 128-byte row (kTileKeys = 32 keys at d = 128) each
    const uint32_t vs = vb + kTileFloats * 4;
#pragma unroll
    for (int j = 0; j < kTileKeys / 8; ++j) {
        mma_pv(pv, p_small[j], desc_k(vb, kHeadDim, j), j > 0);
        mma_pv(pv, p_big[j], desc_k(vs, kHeadDim, j), 1);
        mma_pv(pv, p_big[j], desc_k(vb, kHeadDim, j), 1);
    }
}

// Online softmax of one S tile, in place: on return scores holds P = exp2(S * scale_log2 - m_new) in the
// accumulator layout (s[4j + e]: e = 0, 1 -> row lo, keys 8j + 2t, +1; e = 2, 3 -> row hi); m and l are
// updated and alpha = exp2(m_old - m_new) is returned per row.
__device__ __forceinline__ void softmax_tile(float (&scores)[kTileKeys / 2],
                                             int key0, int N, int t, float scale_log2, float& m_lo, float& m_hi,
                                             float& l_lo, float& l_hi, float& alpha_lo, float& alpha_hi) {
    if (key0 + kTileKeys > N) {  // keys past N (only in the last tile) are masked after the product
#pragma unroll
        for (int j = 0; j < kTileKeys / 8; ++j) {
            const int key = key0 + j * 8 + 2 * t;
            if (key >= N) scores[4 * j] = scores[4 * j + 2] = ATTN_NEG_INF;
            if (key + 1 >= N) scores[4 * j + 1] = scores[4 * j + 3] = ATTN_NEG_INF;
        }
    }
    float max_lo = ATTN_NEG_INF, max_hi = ATTN_NEG_INF;
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
    const float m_new_lo = fmaxf(m_lo, max_lo * scale_log2);
    const float m_new_hi = fmaxf(m_hi, max_hi * scale_log2);
    // A row with no valid key yet keeps m = -inf; shift by 0 then, so no exp2f(-inf - -inf) = NaN.
    const float shift_lo = m_new_lo == ATTN_NEG_INF ? 0.0f : m_new_lo;
    const float shift_hi = m_new_hi == ATTN_NEG_INF ? 0.0f : m_new_hi;
    alpha_lo = exp2_ftz(m_lo - shift_lo);  // 0 on the first tile (m = -inf)
    alpha_hi = exp2_ftz(m_hi - shift_hi);
    m_lo = m_new_lo;
    m_hi = m_new_hi;
    float sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
    for (int j = 0; j < kTileKeys / 8; ++j) {
        scores[4 * j + 0] = exp2_ftz(fmaf(scores[4 * j + 0], scale_log2, -shift_lo));
        scores[4 * j + 1] = exp2_ftz(fmaf(scores[4 * j + 1], scale_log2, -shift_lo));
        scores[4 * j + 2] = exp2_ftz(fmaf(scores[4 * j + 2], scale_log2, -shift_hi));
        scores[4 * j + 3] = exp2_ftz(fmaf(scores[4 * j + 3], scale_log2, -shift_hi));
        sum_lo += scores[4 * j + 0] + scores[4 * j + 1];
        sum_hi += scores[4 * j + 2] + scores[4 * j + 3];
    }
    l_lo = fmaf(l_lo, alpha_lo, sum_lo);  // per-lane partial sums; the quad adds them at the end
    l_hi = fmaf(l_hi, alpha_hi, sum_hi);
}

// P (accumulator layout) -> A fragments, split: a0 = (lo, k' = t) = key 2t, a1 = (hi, key 2t),
// a2 = (lo, key 2t + 1), a3 = (hi, key 2t + 1); V^T's keys are permuted to match by the pre-pass.
__device__ __forceinline__ void split_p(const float (&p)[kTileKeys / 2], uint32_t (&p_big)[kTileKeys / 8][4],
                                        uint32_t (&p_small)[kTileKeys / 8][4]) {
    // small = x - big as it is, not rounded to a TF32 pattern: the tensor core reads it as TF32 either way,
    // and the rounding's two instructions a weight sat on the softmax's path (measured on the H200 with
    // exp2_ftz: t29 -5%, t30 -5%, t22 -3%, t02 -2%; relL2 unchanged to three digits).
    auto split = [](float x, uint32_t& big, uint32_t& small) {
        big = tf32_round(x);
        small = __float_as_uint(x - __uint_as_float(big));
    };
#pragma unroll
    for (int j = 0; j < kTileKeys / 8; ++j) {
        split(p[4 * j + 0], p_big[j][0], p_small[j][0]);
        split(p[4 * j + 2], p_big[j][1], p_small[j][1]);
        split(p[4 * j + 1], p_big[j][2], p_small[j][2]);
        split(p[4 * j + 3], p_big[j][3], p_small[j][3]);
    }
}

// O = alpha O + pv in FP32 (the 3xTF32 accuracy rule: no long-running tensor-core sums), for the columns of
// P V half h.
__device__ __forceinline__ void update_o(float (&o)[kHeadDim / 2], const float (&pv)[kPvCols / 2], float alpha_lo,
                                         float alpha_hi, int h = 0) {
#pragma unroll
    for (int n = 0; n < kPvCols / 8; ++n) {
        const int on = h * (kPvCols / 8) + n;
        o[4 * on + 0] = fmaf(o[4 * on + 0], alpha_lo, pv[4 * n + 0]);
        o[4 * on + 1] = fmaf(o[4 * on + 1], alpha_lo, pv[4 * n + 1]);
        o[4 * on + 2] = fmaf(o[4 * on + 2], alpha_hi, pv[4 * n + 2]);
        o[4 * on + 3] = fmaf(o[4 * on + 3], alpha_hi, pv[4 * n + 3]);
    }
}
// O = alpha O + P V once the (first) P V product is done in pv. At d = 128 that was the first half of the
// columns: it is added, then the second half runs through the same accumulator (the other warpgroup's
// products keep the tensor cores busy meanwhile).
__device__ __forceinline__ void add_pv(float (&o)[kHeadDim / 2], float (&pv)[kPvCols / 2],
                                       uint32_t (&p_big)[kTileKeys / 8][4], uint32_t (&p_small)[kTileKeys / 8][4],
                                       uint32_t vb, float alpha_lo, float alpha_hi) {
    update_o(o, pv, alpha_lo, alpha_hi, 0);
    if constexpr (kPvHalves == 2) {
        wgmma_fence();  // pv was read by the addition above
        issue_pv(pv, p_big, p_small, vb, 1);
        wgmma_commit();
        wgmma_wait<0>();
        pin(pv);
        pin(p_big);
        pin(p_small);
        update_o(o, pv, alpha_lo, alpha_hi, 1);
    }
}

// FlashAttention-3 ping-pong between the two consumer warpgroups: a warpgroup issues its products only
// after the other one has issued its own, so the tensor cores run one warpgroup's batch while the other
// does its softmax. Named barriers 3 (warpgroup 0 may issue) and 4 (warpgroup 1 may issue), 256 threads.
__device__ __forceinline__ void sched_wait(int wg) {
#if WGMMA3X_PINGPONG
    asm volatile("bar.sync %0, 256;\n" ::"r"(3 + wg) : "memory");
#endif
}
__device__ __forceinline__ void sched_release(int wg, bool last) {
#if WGMMA3X_PINGPONG
    // warpgroup 1 skips its last release so that every arrival has a matching wait
    if (!(last && wg == 1)) asm volatile("bar.arrive %0, 256;\n" ::"r"(4 - wg) : "memory");
#endif
}

#include "wgmma_split.cuh"  // the key split: records of O, m, l and their combination

// Main kernels: grid (X, 1, key parts), block kThreads. The work is B * ceil(N / kBlockRows) units (item,
// row block), item-major; block x takes units x, x + X, x + 2X, ... With X below the unit count a block
// is persistent: its rings, mbarrier phases and ping-pong run on from one unit to the next, so the
// producer fills the ring with the next unit's tiles while the consumers finish the current one (no
// launch, set-up or first-copy latency per unit). wgmma3x_fwd streams the pre-split tiles of kv_split, which
// wgmma3x_prep wrote for the first items and its producer warpgroup's other warps write meanwhile for the
// rest (run_prep_jobs); wgmma3x_stream splits raw tiles itself. Both take dynamic shared memory
// kStreamSmemBytes.
// Shared memory: K ring [kStages][K big | K small], V ring [kStages][V^T big | V^T small], Q big/small
// per warpgroup, then mbarriers full_k, full_v, empty_k, empty_v [kStages] each, raw_full_k, raw_full_v and streamed;
// then one raw K and one raw V tile (128-byte aligned). K and V have barriers of their own so that a K
// stage is handed back as soon as S is done with it.
template <bool kStreamed>
__device__ __forceinline__ void fwd_body(const float* __restrict__ qkv, float* __restrict__ out, int B, int N, float scale_log2,
                                         float* __restrict__ kv_split, unsigned* __restrict__ prep_counters,
                                         float* __restrict__ split_partials, float* __restrict__ split_counters) {
    extern __shared__ float4 smem_f4[];
    // 1024-byte alignment for the swizzle atoms. (Through an integer, so generic to the compiler; the
    // shared-state-space alignment of aligned_smem gave this kernel another register allocation at
    // d = 64, 1-3% slower on the H100 on t22, t30, t16.)
    float* const smem = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(smem_f4) + 1023) & ~uintptr_t(1023));
    float* const ring_k = smem;
    float* const ring_v = ring_k + kStages * 2 * kTileFloats;
    float* const q_all = ring_v + kStages * 2 * kTileFloats;    // [kWarpgroups][kQSmemHalves][kQFloats]
    uint64_t* const full_k = reinterpret_cast<uint64_t*>(q_all + kWarpgroups * kQSmemHalves * kQFloats);
    uint64_t* const full_v = full_k + kStages;
    uint64_t* const empty_k = full_v + kStages;
    uint64_t* const empty_v = empty_k + kStages;
    uint64_t* const raw_full_k = empty_v + kStages;
    uint64_t* const raw_full_v = raw_full_k + 1;
    uint64_t* const streamed = raw_full_v + 1;  // wgmma3x_fwd: the streaming lane reads no counter any more
    float* const raw_k = smem + kRawOffsetFloats;  // one raw K tile, row-major
    float* const raw_v = raw_k + kTileFloats;                                // one raw V tile

    const int row_tiles = (N + kBlockRows - 1) / kBlockRows;
    const int units = B * row_tiles;
    // Key split (gridDim.z parts, flash-decoding style): this block takes K/V tiles tile_begin ..
    // tile_begin + n_tiles - 1 of each of its units' items. The ring's slots and phases count the block's
    // tiles from 0 over all its units (g: the tiles before the current unit's).
    const int all_tiles = (N + kTileKeys - 1) / kTileKeys;
    const int splits = key_parts(N);
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    // a part with no tile, or a block with no unit (block-uniform, before any barrier); it still counts as
    // finished for the pre-pass's counters
    const int wtid = static_cast<int>(threadIdx.x) - kConsumerThreads - 32;  // pre-pass worker (wgmma3x_fwd)
    if (static_cast<int>(blockIdx.z) >= splits || static_cast<int>(blockIdx.x) >= units) {
        if (!kStreamed && wtid >= 0) finish_prep(prep_counters, B, N, wtid);
        return;
    }
    const int tile_begin = static_cast<int>(blockIdx.z) * all_tiles / splits;
    const int n_tiles = (static_cast<int>(blockIdx.z) + 1) * all_tiles / splits - tile_begin;

    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(full_k + s, 1);
            mbar_init(full_v + s, 1);
            mbar_init(empty_k + s, kConsumerThreads / 32);
            mbar_init(empty_v + s, kConsumerThreads / 32);
        }
        mbar_init(raw_full_k, 1);
        mbar_init(raw_full_v, 1);
        mbar_init(streamed, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (warp >= kConsumerThreads / 32) {
        // Producer warpgroup: it gives most of its registers to the consumers.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs) : "memory");
        if constexpr (kStreamed) {
            // One thread bulk-copies the raw K and V tiles of each unit's item (row-major, as in the input)
            // into raw_k and raw_v; all 128 split each one into the ring's operand layout, then hand the stage
            // to the consumers and the raw tile back to the copy. The K of tile i + 1 (or of the next unit's
            // first tile) is in flight while V of tile i is split, and the other way round.
            const int ptid = threadIdx.x - kConsumerThreads;
            // item of unit u's K (its V follows at N d floats); valid rows of tile i of a unit (a multiple of
            // 16 bytes each: kHeadDim >= 32)
            auto k_of = [&](int u) { return qkv + qkv_item_offset(u / row_tiles, N, kHeadDim) + static_cast<size_t>(N) * kHeadDim; };
            auto tile_rows = [&](int i) { return min(kTileKeys, N - (tile_begin + i) * kTileKeys); };
            auto copy_raw = [&](float* dst, const float* src, int i, uint64_t* bar) {
                const uint32_t bytes = static_cast<uint32_t>(tile_rows(i)) * kHeadDim * 4;
                mbar_arrive_expect_tx(bar, bytes);
                bulk_copy(dst, src + static_cast<size_t>(tile_begin + i) * kTileKeys * kHeadDim, bytes, bar);
            };
            const size_t n_d = static_cast<size_t>(N) * kHeadDim;
            if (ptid == 0) {
                const float* const K = k_of(blockIdx.x);
                copy_raw(raw_k, K, 0, raw_full_k);
                copy_raw(raw_v, K + n_d, 0, raw_full_v);
            }
            int g = 0;  // tiles of the block's earlier units
            for (int u = blockIdx.x; u < units; u += gridDim.x, g += n_tiles) {
                const int next = u + gridDim.x;
                const float* const K = k_of(u);
                // The raw tile after this unit's tile i: its tile i + 1, or the next unit's first.
                const bool has_next = next < units;
                const float* const K_next = k_of(has_next ? next : u);
                // the next unit's Q rows into L2 while this one runs (measured on the H200: t12 3% faster)
                if (ptid == 0 && has_next) {
                    const int nrb = next % row_tiles;
                    const uint32_t q_rows = static_cast<uint32_t>(min(kBlockRows, N - nrb * kBlockRows));
                    const float* const q_next = K_next - n_d + static_cast<size_t>(nrb) * kBlockRows * kHeadDim;
                    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(q_next), "r"(q_rows * kHeadDim * 4) : "memory");
                }
                for (int tile = 0; tile < n_tiles; ++tile) {
                    const int gt = g + tile;
                    const int s = gt % kStages;
                    const uint32_t parity = ((gt / kStages) - 1) & 1;
                    const int rows = tile_rows(tile);
                    const bool last = tile + 1 == n_tiles;
                    if (gt >= kStages) mbar_wait(empty_k + s, parity);
                    mbar_wait(raw_full_k, gt & 1);
                    if (rows < kTileKeys) {
                        zero_raw_rows<kProducerThreads>(smem_u32(raw_k), rows, ptid);
                        asm volatile("bar.sync %0, %1;\n" ::"n"(kProducerBarrier), "n"(kProducerThreads) : "memory");
                    }
                    split_raw_rows_k<kProducerThreads, kConsumerThreads>(SmemFloats{smem_u32(ring_k + s * 2 * kTileFloats)}, smem_u32(raw_k));
                    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes -> wgmma and bulk-copy
                    asm volatile("bar.sync %0, %1;\n" ::"n"(kProducerBarrier), "n"(kProducerThreads) : "memory");
                    if (ptid == 0) {
                        mbar_arrive(full_k + s);
                        if (!last) copy_raw(raw_k, K, tile + 1, raw_full_k);
                        else if (has_next) copy_raw(raw_k, K_next, 0, raw_full_k);
                    }
                    if (gt >= kStages) mbar_wait(empty_v + s, parity);
                    mbar_wait(raw_full_v, gt & 1);
                    if (rows < kTileKeys) {
                        zero_raw_rows<kProducerThreads>(smem_u32(raw_v), rows, ptid);
                        asm volatile("bar.sync %0, %1;\n" ::"n"(kProducerBarrier), "n"(kProducerThreads) : "memory");
                    }
                    split_raw_rows_vt<kProducerThreads>(SmemFloats{smem_u32(ring_v + s * 2 * kTileFloats)}, smem_u32(raw_v), ptid);
                    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                    asm volatile("bar.sync %0, %1;\n" ::"n"(kProducerBarrier), "n"(kProducerThreads) : "memory");
                    if (ptid == 0) {
                        mbar_arrive(full_v + s);
                        if (!last) copy_raw(raw_v, K + n_d, tile + 1, raw_full_v);
                        else if (has_next) copy_raw(raw_v, K_next + n_d, 0, raw_full_v);
                    }
                }
            }
        } else if (warp == kConsumerThreads / 32) {
            // One lane streams the pre-split tiles of each unit's item through the rings, once they are split.
            if (lane != 0) return;
            int g = 0;  // tiles of the block's earlier units
            // (the grid's x read afresh at each step, not kept: in 24 registers it was spilled)
            for (int u = blockIdx.x; u < units; u += nctaid_x(), g += n_tiles) {
                const int b = u / row_tiles;
                const float* const src = kv_split + (static_cast<size_t>(b) * all_tiles + static_cast<unsigned>(tile_begin)) * kStageFloats;  // (zero-extended: one register fewer)
                for (int tile = 0; tile < n_tiles; ++tile) {
                    if (tile == 0 || (tile_begin + tile) % kReadyTiles == 0) wait_tiles_split(prep_counters, b, tile_begin + tile, N);
                    const int gt = g + tile;
                    const int s = gt % kStages;
                    const uint32_t parity = ((gt / kStages) - 1) & 1;
                    const float* const from = src + static_cast<size_t>(tile) * kStageFloats;
                    if (gt >= kStages) mbar_wait(empty_k + s, parity);
                    mbar_arrive_expect_tx(full_k + s, 2 * kTileFloats * 4);
                    bulk_copy(ring_k + s * 2 * kTileFloats, from, 2 * kTileFloats * 4, full_k + s);
                    if (gt >= kStages) mbar_wait(empty_v + s, parity);
                    mbar_arrive_expect_tx(full_v + s, 2 * kTileFloats * 4);
                    bulk_copy(ring_v + s * 2 * kTileFloats, from + 2 * kTileFloats, 2 * kTileFloats * 4, full_v + s);
                }
            }
            mbar_arrive(streamed);
        } else {
            run_prep_jobs(qkv, kv_split, prep_counters, B, N, smem_u32(raw_k), raw_full_k, raw_full_v, wtid);
            mbar_wait(streamed, 0);
            finish_prep(prep_counters, B, N, wtid);
        }
        return;
    }

    // ---- consumer warpgroup wg: query rows q0 .. q0 + 63 of each unit ----
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs) : "memory");
    const int wg = warp >> 2;
    const int wl = warp & 3;  // warp in warpgroup: rows 16 wl .. 16 wl + 15
    const int tid = threadIdx.x & 127;
    const int g = lane >> 2, t = lane & 3;
    float* const q_big = q_all + wg * kQSmemHalves * kQFloats;  // (not kept at d = 128: Q big is in registers)
    float* const q_small = q_big + (kQSmemHalves - 1) * kQFloats;
    const uint32_t qb = smem_u32(q_big), qs = smem_u32(q_small);
    const uint32_t rk = smem_u32(ring_k), rv = smem_u32(ring_v);
    constexpr uint32_t kHalfStageBytes = 2 * kTileFloats * 4;
#if WGMMA3X_OVERLAP && WGMMA3X_PINGPONG
    if (wg == 1) asm volatile("bar.arrive 3, 256;\n" ::: "memory");  // warpgroup 0 issues first
#endif

    int done = 0;  // tiles of the block's earlier units (the rings' count runs on across units)
    // d = 128: the row blocks formed again (unsigned, another expression than the kernel's start, which ptxas
    // would keep: in the consumers' registers it was spilled)
    const int my_row_tiles = kHeadDim == 128 ? static_cast<int>((static_cast<unsigned>(N) + kBlockRows - 1) / kBlockRows) : row_tiles;
    for (int u = blockIdx.x; u < (kHeadDim == 128 ? B * my_row_tiles : units); u += gridDim.x, done += n_tiles) {
        const int b = u / my_row_tiles;
        const int q0 = (u - b * my_row_tiles) * kBlockRows + wg * 64;
        [[maybe_unused]] const bool final_unit = u + static_cast<int>(gridDim.x) >= units;  // (the ping-pong's last release)
        {
            const float* const Q = qkv + qkv_item_offset(b, N, kHeadDim);
            constexpr int kRowChunks = kHeadDim / 4;
            // Q of the unit before is no longer read: every warp of the warpgroup has waited for its products
            if (!kQSmallInRegs && done > 0) asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
            // All of the thread's loads are issued before the first is used (one memory latency, not one a
            // chunk): rows past N load row N - 1, in bounds, and are zeroed when split.
            constexpr int kQChunks = kQSmallInRegs ? 0 : 64 * kRowChunks / 128;  // d = 32 with kQReg: none
            float4 q[kQChunks > 0 ? kQChunks : 1];
#pragma unroll
            for (int k = 0; k < kQChunks; ++k) {
                const int i = tid + 128 * k, r = i / kRowChunks, c4 = i % kRowChunks;
                q[k] = __ldg(reinterpret_cast<const float4*>(Q + static_cast<size_t>(min(q0 + r, N - 1)) * kHeadDim + 4 * c4));
            }
#pragma unroll
            for (int k = 0; k < kQChunks; ++k) {
                const int i = tid + 128 * k, r = i / kRowChunks, c4 = i % kRowChunks;
                float4 big, small;
                split4(q0 + r < N ? q[k] : make_float4(0.f, 0.f, 0.f, 0.f), big, small);
                if constexpr (kQSmemHalves == 2) *reinterpret_cast<float4*>(q_big + swz(r, c4, 64)) = big;
                *reinterpret_cast<float4*>(q_small + swz(r, c4, 64)) = small;
            }
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes -> wgmma reads
            asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
        }

        const int row_lo = q0 + wl * 16 + g;
        const int row_hi = row_lo + 8;
        // Q A fragments in registers (kQReg): a0 = (lo, 8kk + t), a1 = (hi, 8kk + t), a2 = (lo, +4), a3 = (hi, +4).
        [[maybe_unused]] uint32_t qf_big[kQRegSteps][4];
        [[maybe_unused]] uint32_t qf_small[kQSmallSteps][4];
        if constexpr (kQReg) {
            const float* const Q = qkv + qkv_item_offset(b, N, kHeadDim);
            const bool lo_ok = row_lo < N, hi_ok = row_hi < N;
            const float* const ql = Q + (lo_ok ? static_cast<size_t>(row_lo) * kHeadDim : 0);
            const float* const qh = Q + (hi_ok ? static_cast<size_t>(row_hi) * kHeadDim : 0);
#pragma unroll
            for (int kk = 0; kk < kQRegSteps; ++kk) {
                const int c = kk * 8 + t;
                const float v[4] = {lo_ok ? __ldg(ql + c) : 0.0f, hi_ok ? __ldg(qh + c) : 0.0f,
                                    lo_ok ? __ldg(ql + c + 4) : 0.0f, hi_ok ? __ldg(qh + c + 4) : 0.0f};
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    uint32_t big, small;
                    split_tf32(v[e], big, small);
                    qf_big[kk][e] = big;
                    if constexpr (kQSmallInRegs) qf_small[kk][e] = small;
                }
            }
        }
        float m_lo = ATTN_NEG_INF, m_hi = ATTN_NEG_INF;
        float l_lo = 0.0f, l_hi = 0.0f;
        float o[kHeadDim / 2];
#pragma unroll
        for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.0f;
        float scores[kTileKeys / 2];
        uint32_t p_big[kTileKeys / 8][4], p_small[kTileKeys / 8][4];
        float pv[kPvCols / 2];
        float alpha_lo, alpha_hi;

#if WGMMA3X_OVERLAP
        // FlashAttention-3 intra-warpgroup overlap: S of tile i is issued together with P V of tile i - 1,
        // and the softmax of tile i runs while P V of tile i - 1 is still on the tensor cores.
        {
            const int s = done % kStages;
            mbar_wait(full_k + s, (done / kStages) & 1);
            sched_wait(wg);
            wgmma_fence();
            ISSUE_S(rk + s * kHalfStageBytes);
            wgmma_commit();
            sched_release(wg, false);
            wgmma_wait<0>();
            pin(scores);
            __syncwarp();
            if (lane == 0) mbar_arrive(empty_k + s);
        }
        softmax_tile(scores, tile_begin * kTileKeys, N, t, scale_log2, m_lo, m_hi, l_lo, l_hi, alpha_lo, alpha_hi);
        split_p(scores, p_big, p_small);
        float pend_lo = alpha_lo, pend_hi = alpha_hi;  // the rescale that goes with the P V in flight
        for (int tile = 1; tile < n_tiles; ++tile) {
            const int gt = done + tile;
            const int s = gt % kStages, sp = (gt - 1) % kStages;
            mbar_wait(full_k + s, (gt / kStages) & 1);
            mbar_wait(full_v + sp, ((gt - 1) / kStages) & 1);
            pin(p_big);
            pin(p_small);
            sched_wait(wg);
            wgmma_fence();
            ISSUE_S(rk + s * kHalfStageBytes);
            wgmma_commit();
            issue_pv(pv, p_big, p_small, rv + sp * kHalfStageBytes);
            wgmma_commit();
            sched_release(wg, false);
            wgmma_wait<1>();  // S of this tile is done; P V of the last one may still run
            pin(scores);
            __syncwarp();
            if (lane == 0) mbar_arrive(empty_k + s);
            softmax_tile(scores, (tile_begin + tile) * kTileKeys, N, t, scale_log2, m_lo, m_hi, l_lo, l_hi, alpha_lo,
                         alpha_hi);
            wgmma_wait<0>();
            pin(pv);
            pin(p_big);
            pin(p_small);
            add_pv(o, pv, p_big, p_small, rv + sp * kHalfStageBytes, pend_lo, pend_hi);
            __syncwarp();
            if (lane == 0) mbar_arrive(empty_v + sp);
            pend_lo = alpha_lo;
            pend_hi = alpha_hi;
            split_p(scores, p_big, p_small);
        }
        {
            const int gt = done + n_tiles - 1;
            const int sp = gt % kStages;
            mbar_wait(full_v + sp, (gt / kStages) & 1);
            pin(p_big);
            pin(p_small);
            sched_wait(wg);
            wgmma_fence();
            issue_pv(pv, p_big, p_small, rv + sp * kHalfStageBytes);
            wgmma_commit();
            sched_release(wg, final_unit);
            wgmma_wait<0>();
            pin(pv);
            pin(p_big);
            pin(p_small);
            add_pv(o, pv, p_big, p_small, rv + sp * kHalfStageBytes, pend_lo, pend_hi);
            __syncwarp();
            if (lane == 0) mbar_arrive(empty_v + sp);
        }
#else
        // Plain order: S, softmax, P V, one after the other (the two warpgroups overlap each other).
        for (int tile = 0; tile < n_tiles; ++tile) {
            const int gt = done + tile;
            const int s = gt % kStages;
            const uint32_t parity = (gt / kStages) & 1;
            mbar_wait(full_k + s, parity);
            pin(o);
            wgmma_fence();
            ISSUE_S(rk + s * kHalfStageBytes);
            wgmma_commit();
            wgmma_wait<0>();
            pin(scores);
            __syncwarp();
            if (lane == 0) mbar_arrive(empty_k + s);
            softmax_tile(scores, (tile_begin + tile) * kTileKeys, N, t, scale_log2, m_lo, m_hi, l_lo, l_hi, alpha_lo,
                         alpha_hi);
            split_p(scores, p_big, p_small);
            mbar_wait(full_v + s, parity);
            pin(p_big);
            pin(p_small);
            wgmma_fence();
            issue_pv(pv, p_big, p_small, rv + s * kHalfStageBytes);
            wgmma_commit();
            wgmma_wait<0>();
            pin(pv);
            pin(p_big);
            pin(p_small);
            add_pv(o, pv, p_big, p_small, rv + s * kHalfStageBytes, alpha_lo, alpha_hi);
            __syncwarp();
            if (lane == 0) mbar_arrive(empty_v + s);
        }
#endif

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
                if (row_lo < N)
                    *reinterpret_cast<float2*>(O + static_cast<size_t>(row_lo) * kHeadDim + col) =
                        make_float2(o[4 * n + 0] * inv_lo, o[4 * n + 1] * inv_lo);
                if (row_hi < N)
                    *reinterpret_cast<float2*>(O + static_cast<size_t>(row_hi) * kHeadDim + col) =
                        make_float2(o[4 * n + 2] * inv_hi, o[4 * n + 3] * inv_hi);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    wgmma3x_fwd(const float* __restrict__ qkv, float* __restrict__ out, int B, int N, float scale_log2,
                float* __restrict__ kv_split, unsigned* __restrict__ prep_counters,
                float* __restrict__ split_partials, float* __restrict__ split_counters) {
    fwd_body<false>(qkv, out, B, N, scale_log2, kv_split, prep_counters, split_partials, split_counters);
}

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    wgmma3x_stream(const float* __restrict__ qkv, float* __restrict__ out, int B, int N, float scale_log2,
                   float* __restrict__ split_partials, float* __restrict__ split_counters) {
    fwd_body<true>(qkv, out, B, N, scale_log2, nullptr, nullptr, split_partials, split_counters);
}

#if HEAD_DIM == 32 && WGMMA3X_QREG
// ---- short sequences (N <= 128, d = 32): several batch items per block, no pre-pass ---------------
// 128-long sequences in many items are a scheduling problem, not a tile problem: a block of 2 consumer
// warpgroups (128 query rows, the whole item) works through kShortItems consecutive items. A third,
// producer warpgroup takes the split off their path: one of its threads streams each item's raw Q K V
// (3 N d contiguous floats) into one of two staging buffers with cp.async.bulk, two items ahead, and its
// 128 threads split/transpose K and V of item i + 1 into the other operand buffer (split_raw_rows_k/vt, as the
// pre-pass does) while the consumers run item i. Each consumer warpgroup splits its Q rows into
// registers and runs its 64 rows (S, softmax, P V). mbarriers, per 2-slot ring (phase of item i: i / 2):
// full[s] raw buffer s loaded (tx count); opfull[b] operand buffer b split; opempty[b] consumers done with
// operand buffer b; qtaken[s] consumers done reading Q from raw buffer s.
#ifndef WGMMA3X_SHORT_ITEMS
#define WGMMA3X_SHORT_ITEMS 8  // the host passes its own value (attnbench/kernels/wgmma3x.py)
#endif
namespace {
constexpr int kStageBytes = 4 * kStageFloats;  // one K/V tile: K big, K small, V^T big, V^T small

// Dynamic shared memory from its first 1024-byte boundary (the swizzle atoms' alignment), stepped from the
// __shared__ array itself: a pointer aligned through an integer is generic to the compiler (generic loads
// and stores, 64-bit address arithmetic), this one stays in the shared state space.
__device__ __forceinline__ float* aligned_smem(float4* smem_f4) {
    return reinterpret_cast<float*>(smem_f4 + (((1024u - (smem_u32(smem_f4) & 1023u)) & 1023u) >> 4));
}

constexpr int kShortItems = WGMMA3X_SHORT_ITEMS;              // batch items per block
constexpr int kShortMaxN = 2 * 64;                           // 2 warpgroups x 64 query rows
constexpr int kShortConsumers = 256;                         // consumer warpgroups 0 and 1
constexpr int kShortProducers = 128;                         // producer warpgroup 2
constexpr int kShortThreads = kShortConsumers + kShortProducers;
constexpr int kShortRawStages = 2;                           // raw Q K V staging buffers
constexpr int kShortRawFloats = 3 * kShortMaxN * kHeadDim;   // one item's Q, K, V (48 KB)
constexpr int kShortOpFloats = (kShortMaxN / kTileKeys) * kStageFloats;  // 2 tiles of K/V big/small (64 KB)
constexpr int kShortBarriers = 4 * kShortRawStages;          // full, opfull, opempty, qtaken [2] each
// operand tiles x 2, raw buffers, 8 mbarriers, 1024 alignment slack: 230,464 B
constexpr int kShortSmemBytes = 2 * kShortOpFloats * 4 + kShortRawStages * kShortRawFloats * 4 + kShortBarriers * 8 + 1024;
static_assert(kShortSmemBytes <= 227 * 1024, "shared memory");
// setmaxnreg: the producer splits (arithmetic, not only copies) in 40 registers; the consumers get the rest.
constexpr int kShortProducerRegs = 40;
constexpr int kShortConsumerRegs = 232;
static_assert(kShortProducers * kShortProducerRegs + kShortConsumers * kShortConsumerRegs <= 65536, "register file");
static_assert(kShortProducers * kShortProducerRegs + kShortConsumers * kShortConsumerRegs <= kShortThreads * 168,
              "setmaxnreg: the launch's 168 registers a thread (__launch_bounds__(384, 1)) must cover the redistribution");
static_assert(kQSmallInRegs, "the short path keeps Q big and small in registers");
static_assert(kQRegSteps == 4, "the Q read takes a row's 8 column chunks (d = 32)");
static_assert(kShortItems >= 1, "items per block");
static_assert(kShortRawStages == 2, "one phase (item / 2) for the raw and the operand rings: both have 2 slots");
constexpr int kShortProducerBarrier = 5;  // named barrier of the producer's 128 threads (3 and 4: ping-pong)
}  // namespace

// x[j] = x[(j - by) & 7]: a rotation by a run-time amount on registers (static indices only), bit by bit.
__device__ __forceinline__ void rotate_right8(float (&x)[8], int by) {
#pragma unroll
    for (int bit = 1; bit < 8; bit <<= 1) {
        float y[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) y[j] = (by & bit) ? x[(j - bit) & 7] : x[j];
#pragma unroll
        for (int j = 0; j < 8; ++j) x[j] = y[j];
    }
}

// Grid ceil(B / kShortItems), block 384, dynamic shared memory kShortSmemBytes; N in 1 .. 128.
// Shared memory: operand tiles [2][tile 0 | tile 1] (each [K big | K small | V^T big | V^T small]), raw
// buffers [kShortRawStages][Q | K | V] (N rows each, as in the input), then mbarriers full, opfull,
// opempty, qtaken [kShortRawStages] each.
extern "C" __global__ void __launch_bounds__(kShortThreads, 1)
    wgmma3x_short(const float* __restrict__ qkv, float* __restrict__ out, int B, int N, float scale_log2) {
    extern __shared__ float4 short_smem_f4[];  // (its own name: fwd_body declares smem_f4)
    float* const smem = aligned_smem(short_smem_f4);
    float* const ops = smem;
    float* const raw = ops + 2 * kShortOpFloats;
    uint64_t* const full = reinterpret_cast<uint64_t*>(raw + kShortRawStages * kShortRawFloats);
    uint64_t* const opfull = full + kShortRawStages;
    uint64_t* const opempty = opfull + kShortRawStages;
    uint64_t* const qtaken = opempty + kShortRawStages;

    const int tid = threadIdx.x;
    const int first = blockIdx.x * kShortItems;
    const int count = min(kShortItems, B - first);
    const int n_tiles = (N + kTileKeys - 1) / kTileKeys;
    const uint32_t item_bytes = 3u * static_cast<uint32_t>(N) * kHeadDim * 4;  // a multiple of 16 at d = 32
    // Consumer threads that take part: warpgroup 1 has no rows when N <= 64 and leaves at once, so the
    // consumers' barriers count only warpgroup 0's 128 threads then (block-uniform). Every consumer
    // thread arrives itself, after its own reads: no arrive stands for another thread's loads.
    const uint32_t consumer_threads = N > 64 ? kShortConsumers : kShortConsumers / 2;

    if (tid == kShortConsumers) {  // the producer thread that issues every bulk copy
        for (int s = 0; s < kShortRawStages; ++s) {
            mbar_init(full + s, 1);
            mbar_init(opfull + s, 1);  // the producer's thread 0, after its warpgroup's named barrier
            mbar_init(opempty + s, consumer_threads);
            mbar_init(qtaken + s, consumer_threads);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        for (int s = 0; s < kShortRawStages && s < count; ++s) {
            mbar_arrive_expect_tx(full + s, item_bytes);
            bulk_copy(raw + s * kShortRawFloats, qkv + qkv_item_offset(first + s, N, kHeadDim), item_bytes, full + s);
        }
    }
    __syncthreads();  // the only block-wide barrier: the mbarriers are initialised

    const int warp = tid >> 5;
    const int lane = tid & 31;

    if (tid >= kShortConsumers) {
        // ---- producer warpgroup: split K and V of each item into the operand buffer (it & 1) ----
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kShortProducerRegs) : "memory");
        const int ptid = tid - kShortConsumers;
        for (int it = 0; it < count; ++it) {
            const int s = it % kShortRawStages;
            const uint32_t phase = (it / kShortRawStages) & 1;  // this item's phase of both 2-slot rings
            const float* const raw_k = raw + s * kShortRawFloats + N * kHeadDim;
            const float* const raw_v = raw_k + N * kHeadDim;
            float* const op = ops + (it & 1) * kShortOpFloats;
            if (it >= 2) mbar_wait(opempty + (it & 1), phase ^ 1);  // the consumers are done with item it - 2
            mbar_wait(full + s, phase);
            // K and V -> operand tiles; rows past N (stale or never loaded) become zeros.
            for (int tile = 0; tile < n_tiles; ++tile) {
                const int key0 = tile * kTileKeys;
                if (key0 + kTileKeys <= N) {  // a whole tile (t11's two): the producer's fast split
                    split_raw_rows_k<kShortProducers, kShortConsumers>(SmemFloats{smem_u32(op + tile * kStageFloats)},
                                                                      smem_u32(raw_k + key0 * kHeadDim));
                    split_raw_rows_vt<kShortProducers>(SmemFloats{smem_u32(op + tile * kStageFloats + 2 * kTileFloats)},
                                                       smem_u32(raw_v + key0 * kHeadDim), ptid);
                    continue;
                }
                split_k_tile<kShortProducers, 1>(
                    op + tile * kStageFloats,
                    [&](int r, int c4) {
                        return key0 + r < N ? *reinterpret_cast<const float4*>(raw_k + (key0 + r) * kHeadDim + 4 * c4)
                                            : make_float4(0.f, 0.f, 0.f, 0.f);
                    },
                    ptid);
                split_vt_tile<kShortProducers, 1, true>(
                    op + tile * kStageFloats + 2 * kTileFloats,
                    [&](int key, int n) { return key0 + key < N ? raw_v[(key0 + key) * kHeadDim + n] : 0.0f; }, ptid);
            }
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes -> wgmma reads
            // Operand buffer complete and raw buffer s's K, V read by all 128 producer threads.
            asm volatile("bar.sync %0, %1;\n" ::"n"(kShortProducerBarrier), "n"(kShortProducers) : "memory");
            if (ptid == 0) {
                mbar_arrive(opfull + (it & 1));
                if (it + kShortRawStages < count) {
                    mbar_wait(qtaken + s, phase);  // the consumers hold item it's Q in registers
                    mbar_arrive_expect_tx(full + s, item_bytes);
                    bulk_copy(raw + s * kShortRawFloats, qkv + qkv_item_offset(first + it + kShortRawStages, N, kHeadDim),
                              item_bytes, full + s);
                }
            }
        }
        return;
    }

    // ---- consumer warpgroups 0 and 1: query rows 64 wg .. 64 wg + 63 of every item ----
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kShortConsumerRegs) : "memory");
    const int wg = warp >> 2;
    const int wl = warp & 3;  // warp in warpgroup: rows 16 wl .. 16 wl + 15
    const int g = lane >> 2, t = lane & 3;
    const int row_lo = wg * 64 + wl * 16 + g;
    const int row_hi = row_lo + 8;
    const bool wg_has_rows = wg * 64 < N;  // warpgroup-uniform: all rows of warpgroup 1 lie past N when N <= 64
    if (!wg_has_rows) return;              // (not counted in consumer_threads)

    for (int it = 0; it < count; ++it) {
        const int s = it % kShortRawStages;
        const uint32_t phase = (it / kShortRawStages) & 1;
        const float* const raw_q = raw + s * kShortRawFloats;
        float* const op = ops + (it & 1) * kShortOpFloats;
        mbar_wait(full + s, phase);

        // Q A fragments: a0 = (lo, 8kk + t), a1 = (hi, 8kk + t), a2 = (lo, +4), a3 = (hi, +4); 0 past N.
        // A thread needs columns t + 4 j (j = 0..7) of its rows. Read in order, a warp's 8 rows (g) would
        // share 4 banks (8-way conflicts); read in the order j = (i + g) & 7 they take 32 banks, and a
        // rotation by g (three stages of selects) puts the values back in order.
        float q_lo[8], q_hi[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int c = ((i + g) & 7) * 4 + t;
            q_lo[i] = row_lo < N ? raw_q[row_lo * kHeadDim + c] : 0.0f;
            q_hi[i] = row_hi < N ? raw_q[row_hi * kHeadDim + c] : 0.0f;
        }
        rotate_right8(q_lo, g);
        rotate_right8(q_hi, g);
        uint32_t qf_big[kQRegSteps][4], qf_small[kQSmallSteps][4];
#pragma unroll
        for (int kk = 0; kk < kQRegSteps; ++kk) {
            const float v[4] = {q_lo[2 * kk], q_hi[2 * kk], q_lo[2 * kk + 1], q_hi[2 * kk + 1]};
#pragma unroll
            for (int e = 0; e < 4; ++e) split_tf32(v[e], qf_big[kk][e], qf_small[kk][e]);
        }
        mbar_arrive(qtaken + s);  // each thread's Q reads are done: raw buffer s may be refilled (item it + 2)
        mbar_wait(opfull + (it & 1), phase);     // the producer's split of item it

        const uint32_t op_addr = smem_u32(op);
        float m_lo = ATTN_NEG_INF, m_hi = ATTN_NEG_INF;
        float l_lo = 0.0f, l_hi = 0.0f;
        float o[kHeadDim / 2];
#pragma unroll
        for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.0f;
        float scores[kTileKeys / 2];
        uint32_t p_big[kTileKeys / 8][4], p_small[kTileKeys / 8][4];
        float pv[kPvCols / 2];
        float alpha_lo, alpha_hi;
        // The fwd kernel's schedule (FlashAttention-3): S of tile i is issued with P V of tile i - 1 and
        // the softmax of tile i runs while that P V is on the tensor cores; when both warpgroups have
        // rows (N > 64, block-uniform), they ping-pong their batches, so one's softmax and split run
        // while the other's products do.
        const bool pingpong = N > 64;
        constexpr uint32_t kVOffset = 2 * kTileFloats * 4;  // V^T big after K big and K small
        if (pingpong && wg == 1) asm volatile("bar.arrive 3, 256;\n" ::: "memory");  // warpgroup 0 issues first
        pin(o);
        pin(qf_big);
        pin(qf_small);
        if (pingpong) sched_wait(wg);
        wgmma_fence();
        issue_s_qreg(scores, qf_big, qf_small, 0, op_addr);
        wgmma_commit();
        if (pingpong) sched_release(wg, false);
        wgmma_wait<0>();
        pin(scores);
        softmax_tile(scores, 0, N, t, scale_log2, m_lo, m_hi, l_lo, l_hi, alpha_lo, alpha_hi);
        split_p(scores, p_big, p_small);
        float pend_lo = alpha_lo, pend_hi = alpha_hi;  // the rescale that goes with the P V in flight
        for (int tile = 1; tile < n_tiles; ++tile) {
            const uint32_t kb = op_addr + tile * kStageBytes;
            pin(p_big);
            pin(p_small);
            if (pingpong) sched_wait(wg);
            wgmma_fence();
            issue_s_qreg(scores, qf_big, qf_small, 0, kb);
            wgmma_commit();
            issue_pv(pv, p_big, p_small, kb - kStageBytes + kVOffset);
            wgmma_commit();
            if (pingpong) sched_release(wg, false);
            wgmma_wait<1>();  // S of this tile is done; P V of the last one may still run
            pin(scores);
            softmax_tile(scores, tile * kTileKeys, N, t, scale_log2, m_lo, m_hi, l_lo, l_hi, alpha_lo, alpha_hi);
            wgmma_wait<0>();
            pin(pv);
            pin(p_big);
            pin(p_small);
            update_o(o, pv, pend_lo, pend_hi);
            pend_lo = alpha_lo;
            pend_hi = alpha_hi;
            split_p(scores, p_big, p_small);
        }
        pin(p_big);
        pin(p_small);
        if (pingpong) sched_wait(wg);
        wgmma_fence();
        issue_pv(pv, p_big, p_small, op_addr + (n_tiles - 1) * kStageBytes + kVOffset);
        wgmma_commit();
        if (pingpong) sched_release(wg, true);
        wgmma_wait<0>();
        pin(pv);
        mbar_arrive(opempty + (it & 1));  // this thread's last wgmma read of operand buffer it & 1 is done
        update_o(o, pv, pend_lo, pend_hi);

#pragma unroll
        for (int offset = 1; offset < 4; offset <<= 1) {
            l_lo += __shfl_xor_sync(0xffffffffu, l_lo, offset);
            l_hi += __shfl_xor_sync(0xffffffffu, l_hi, offset);
        }
        const float inv_lo = 1.0f / l_lo;
        const float inv_hi = 1.0f / l_hi;
        float* const O = out + out_item_offset(first + it, N, kHeadDim);
#pragma unroll
        for (int n = 0; n < kHeadDim / 8; ++n) {
            const int col = n * 8 + 2 * t;
            if (row_lo < N)
                *reinterpret_cast<float2*>(O + row_lo * kHeadDim + col) = make_float2(o[4 * n + 0] * inv_lo, o[4 * n + 1] * inv_lo);
            if (row_hi < N)
                *reinterpret_cast<float2*>(O + row_hi * kHeadDim + col) = make_float2(o[4 * n + 2] * inv_hi, o[4 * n + 3] * inv_hi);
        }
    }
}
#endif
