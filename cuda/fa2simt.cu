// fa2simt: FlashAttention-2's forward work split on FP32 FFMA only (no tensor cores).
//
// Technique: beyond 004. Report 004's last step (qreg, §4.2.10) gives each thread one query row and
// does every product as a dot product over shared memory; this kernel does S = Q K^T and O += P V
// as register-tiled SGEMMs, the way FlashAttention-2 splits the work, but on CUDA cores.
//  - One block per (Q tile of BR rows, batch item); each warp owns WARP_ROWS query rows of it.
//  - The 32 lanes of a warp form a 4 x 8 grid: a lane owns a TM x 8 micro-tile of S (rows in
//    groups of 4, keys in groups of 4) and the TM x (d/8) micro-tile of O on the same rows, so each
//    k step of the inner loops is 64 FFMA on four 16-byte shared loads (TM = 8), as in a good SGEMM.
//  - Q is kept transposed in shared memory (Qt[k][row]); K is copied transposed (Kt[k][key]) by
//    4-byte cp.async, V row-major by 16-byte cp.async, both double buffered: the copy of tile j+1
//    runs under the compute of tile j, one block barrier per tile. Plain loads below sm_80.
//  - Online softmax in registers: the row max is agreed with 3 shuffles across the 8 lanes of a row,
//    the row sum is kept per lane and summed once at the end. Scores stay raw; exponents are
//    exp2(s * scale_log2 - m * scale_log2) with one FFMA (m kept pre-scaled) and one MUFU.EX2.
//  - P goes from registers to a warp-private transposed tile (Pt[key][row], one 16-byte store per 4
//    rows) and feeds P V as its A operand after a __syncwarp.
//  - Every 16-byte shared load is a broadcast of at most 128 distinct bytes (one wavefront); the
//    padded row stride BR + 4 makes the P stores conflict-free.
//
// Constraints: d (HEAD_DIM, compile time) in {32, 64, 128}. Any N >= 1, any B: Q rows past N are
// zero and never written, K/V rows past N are zero-filled and their scores masked to -inf.
// Threads and dynamic shared memory (set by the host; FA2SIMT_SMEM_BYTES below):
//   d = 32:  256 threads, BR = 256, 133,632 B      (4 warps, N <= 128: 128, BR = 128, 84,480 B)
//   d = 64:  256 threads, BR = 256, 200,704 B      (4 warps, N <= 128: 128, BR = 128, 135,168 B)
//   d = 128: 128 threads, BR = 64,  187,392 B
// These need sm_80+ (up to 227 KB a block); it builds for sm_61, but a GTX 1080 allows 48 KB.
#include "common.cuh"

#ifndef HEAD_DIM
#error "fa2simt.cu needs -DHEAD_DIM=32, 64 or 128"
#endif
#if HEAD_DIM != 32 && HEAD_DIM != 64 && HEAD_DIM != 128
#error "fa2simt.cu takes HEAD_DIM 32, 64 or 128"
#endif

namespace {

constexpr int D = HEAD_DIM;
#ifdef FA2_WARPS
constexpr int WARPS = FA2_WARPS;
#else
constexpr int WARPS = D == 128 ? 4 : 8;       // warps per block
#endif
constexpr int THREADS = 32 * WARPS;
constexpr int LR = 4;                          // lanes along rows
constexpr int LC = 8;                          // lanes along keys / output columns
constexpr int TM = D == 128 ? 4 : 8;           // rows per lane
constexpr int TN = 8;                          // keys per lane
constexpr int TD = D / LC;                     // output columns per lane
constexpr int WARP_ROWS = LR * TM;             // 32 (16 at d = 128)
constexpr int BR = WARPS * WARP_ROWS;          // query rows per block
constexpr int BC = LC * TN;                    // keys per tile: 64
constexpr int QS = BR + 4;                     // row stride of Qt and Pt (4*QS = 16 mod 32 banks)
constexpr int KS = BC + 4;                     // row stride of Kt
constexpr int VS = D;                          // row stride of V tiles
constexpr int QT_FLOATS = D * QS;
constexpr int PT_FLOATS = BC * QS;
constexpr int KT_FLOATS = D * KS;              // one stage
constexpr int V_FLOATS = BC * VS;              // one stage
// Tuning defines (the host passes them; the defaults are the configurations measured best on an
// H200 for N > 128):
//  FA2_WARPS    warps per block: 8 at d = 32 and 64 (BR = 256), 4 at d = 128 (BR = 64). The host
//               passes 4 at d <= 64 when N <= 128 (BR = 128 wastes fewer rows).
//  FA2_UNROLL   unroll of the two inner k loops: 64 at d = 32 (both loops whole), 32 at d = 64,
//               8 at d = 128. The host passes 32 at d = 32 with 4 warps.
//  FA2_SPLIT_S  how S = Q K^T is summed: 0 one float32 sum over d; 1 two register sums (even and
//               odd dims); 2 the first half of d summed, parked in the lane's own Pt slots, the
//               second half summed and the two added. 1 and 2 shorten the float32 sums, which
//               matters only when scores are large (inputs in [-30, 30]: max error 6.1e-3 -> 3.2e-3
//               at d = 64). Defaults: 0 at d = 32, 2 at d = 64, 1 at d = 128.
#ifndef FA2_UNROLL
#define FA2_UNROLL (D == 32 ? 64 : D == 64 ? 32 : 8)
#endif
#ifndef FA2_SPLIT_S
#define FA2_SPLIT_S (D == 32 ? 0 : D == 64 ? 2 : 1)
#endif
constexpr int UNROLL = FA2_UNROLL;
constexpr int SPLIT_S = FA2_SPLIT_S;
static_assert(SPLIT_S >= 0 && SPLIT_S <= 2, "FA2_SPLIT_S is 0, 1 or 2");
static_assert(TM % 4 == 0 && TN % 4 == 0 && TD % 4 == 0, "micro-tiles are groups of 4");
static_assert((BC * D / 32) % WARPS == 0, "K tile copy must split evenly");
static_assert(THREADS % (D / 4) == 0 && BC % (THREADS / (D / 4)) == 0, "V tile copy must split evenly");
static_assert((BR * D / 4) % THREADS == 0, "Q tile load must split evenly");
}  // namespace

// Bytes of dynamic shared memory the host must give: Qt + Pt + 2 Kt + 2 V.
#define FA2SIMT_SMEM_BYTES (4 * (QT_FLOATS + PT_FLOATS + 2 * KT_FLOATS + 2 * V_FLOATS))

namespace {

// One MUFU.EX2 per weight (exp2_ftz, common.cuh): exp2f's denormal path cost three more instructions a
// weight. A weight below 2^-126 flushes to 0, which moves no row sum (its largest weight is 1); on the first
// tile alpha = ex2(-inf) = 0 all the same. Measured on an H200: t29 -0.6%, t10 -2%, same errors.
__device__ __forceinline__ float fa2_exp2(float x) { return exp2_ftz(x); }

__device__ __forceinline__ void copy4(float* dst, const float* src, bool valid) {
#if __CUDA_ARCH__ >= 800
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 4 : 0)
                 : "memory");
#else
    *dst = valid ? __ldg(src) : 0.0f;
#endif
}

__device__ __forceinline__ void copy16(float* dst, const float* src, bool valid) {
#if __CUDA_ARCH__ >= 800
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
#else
    *reinterpret_cast<float4*>(dst) =
        valid ? __ldg(reinterpret_cast<const float4*>(src)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#endif
}

__device__ __forceinline__ void copy_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void copy_wait_all() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

// K/V tile starting at key col0 into stage buffers: Kt[k][key] (transposed, 4-byte copies: a warp
// copies 8 consecutive dims of 4 keys, so global reads fill whole 32-byte sectors and the shared
// writes hit 32 different banks) and V[key][k] (16-byte copies). With kChecked, keys past N become
// zeros (the last tile); otherwise every address is a per-thread base plus a compile-time offset.
template <bool kChecked>
__device__ __forceinline__ void load_kv(float* kt, float* vs, const float* __restrict__ K,
                                        const float* __restrict__ V, int col0, int N) {
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    // K: a thread copies dim k of keys c0, c0 + STEP, ... (for each of its KPW dim groups).
    constexpr int KG = D / 8;                                 // groups of 8 dims
    constexpr int KPW = KG > WARPS ? KG / WARPS : 1;          // dim groups per warp
    constexpr int STEP = 4 * (WARPS > KG ? WARPS / KG : 1);   // key step between a thread's copies
#pragma unroll
    for (int kk = 0; kk < KPW; ++kk) {
        const int group = kk * WARPS + warp;
        const int k = (group % KG) * 8 + (lane & 7);
        const int c0 = (group / KG) * 4 + (lane >> 3);
        const float* src = K + (size_t)(col0 + c0) * D + k;
        float* dst = kt + k * KS + c0;
#pragma unroll 4
        for (int i = 0; i < BC / STEP; ++i) {
            const bool valid = !kChecked || col0 + c0 + i * STEP < N;
            copy4(dst, valid ? src : K, valid);
            src += STEP * D;
            dst += STEP;
        }
    }
    // V: 16-byte copies, consecutive threads on consecutive 16-byte chunks.
    constexpr int ROWS_PER_PASS = THREADS / (D / 4);
    {
        const int c0 = tid / (D / 4);
        const int k = (tid % (D / 4)) * 4;
        const float* src = V + (size_t)(col0 + c0) * D + k;
        float* dst = vs + c0 * VS + k;
#pragma unroll 4
        for (int i = 0; i < BC / ROWS_PER_PASS; ++i) {
            const bool valid = !kChecked || col0 + c0 + i * ROWS_PER_PASS < N;
            copy16(dst, valid ? src : V, valid);
            src += ROWS_PER_PASS * D;
            dst += ROWS_PER_PASS * VS;
        }
    }
}

__device__ __forceinline__ void load_tile(float* kt, float* vs, const float* __restrict__ K,
                                          const float* __restrict__ V, int col0, int N) {
    if (col0 + BC <= N)
        load_kv<false>(kt, vs, K, V, col0, N);
    else
        load_kv<true>(kt, vs, K, V, col0, N);
}

__device__ __forceinline__ void zero_tile(float (&s)[TM][TN]) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) s[i][j] = 0.0f;
}

__device__ __forceinline__ void add_tile(float (&s)[TM][TN], const float (&s2)[TM][TN]) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) s[i][j] += s2[i][j];
}

// s += Q[rows, k0:k1] K[keys, k0:k1]^T; with kTwo, odd dims go to s2.
template <int k0, int k1, bool kTwo>
__device__ __forceinline__ void accumulate_s(float (&s)[TM][TN], float (&s2)[TM][TN], const float* qt,
                                             const float* kt, int arow, int bcol) {
#pragma unroll UNROLL
    for (int k = k0; k < k1; ++k) {
        float a[TM], bk[TN];
#pragma unroll
        for (int g = 0; g < TM / 4; ++g) {
            const float4 v = *reinterpret_cast<const float4*>(qt + k * QS + arow + g * 16);
            a[g * 4 + 0] = v.x; a[g * 4 + 1] = v.y; a[g * 4 + 2] = v.z; a[g * 4 + 3] = v.w;
        }
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            const float4 v = *reinterpret_cast<const float4*>(kt + k * KS + bcol + g * 32);
            bk[g * 4 + 0] = v.x; bk[g * 4 + 1] = v.y; bk[g * 4 + 2] = v.z; bk[g * 4 + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                if (kTwo && (k & 1))
                    s2[i][j] = fmaf(a[i], bk[j], s2[i][j]);
                else
                    s[i][j] = fmaf(a[i], bk[j], s[i][j]);
            }
    }
}

// The lane's TM x TN tile into Pt[key][row] (one 16-byte store per 4 rows and key), and back.
__device__ __forceinline__ void store_pt(float* pt, const float (&s)[TM][TN], int arow, int bcol) {
#pragma unroll
    for (int j = 0; j < TN; ++j) {
        const int c = (j / 4) * 32 + bcol + (j % 4);
#pragma unroll
        for (int g = 0; g < TM / 4; ++g) {
            *reinterpret_cast<float4*>(pt + c * QS + arow + g * 16) =
                make_float4(s[g * 4 + 0][j], s[g * 4 + 1][j], s[g * 4 + 2][j], s[g * 4 + 3][j]);
        }
    }
}

__device__ __forceinline__ void add_pt(float (&s)[TM][TN], const float* pt, int arow, int bcol) {
#pragma unroll
    for (int j = 0; j < TN; ++j) {
        const int c = (j / 4) * 32 + bcol + (j % 4);
#pragma unroll
        for (int g = 0; g < TM / 4; ++g) {
            const float4 v = *reinterpret_cast<const float4*>(pt + c * QS + arow + g * 16);
            s[g * 4 + 0][j] += v.x;
            s[g * 4 + 1][j] += v.y;
            s[g * 4 + 2][j] += v.z;
            s[g * 4 + 3][j] += v.w;
        }
    }
}

// Online softmax on the lane's S tile, in place (S becomes P): agree on the row max across the 8
// lanes of a row (3 shuffles), rescale l and O, exponentiate. With kMask, keys >= N get -inf first.
template <bool kMask>
__device__ __forceinline__ void online_softmax(float (&s)[TM][TN], float (&m)[TM], float (&l)[TM],
                                               float (&o)[TM][TD], int col0, int N, int bcol,
                                               float scale_log2) {
    if (kMask) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = col0 + (j / 4) * 32 + bcol + (j % 4);
            if (c >= N) {
#pragma unroll
                for (int i = 0; i < TM; ++i) s[i][j] = ATTN_NEG_INF;
            }
        }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        float mx = s[i][0];
#pragma unroll
        for (int j = 1; j < TN; ++j) mx = fmaxf(mx, s[i][j]);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
        // Every tile holds at least one key < N, so mx is finite and so is m_new.
        const float m_new = fmaxf(m[i], mx * scale_log2);
        const float alpha = fa2_exp2(m[i] - m_new);  // 0 on the first tile (m = -inf)
        m[i] = m_new;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const float p = fa2_exp2(fmaf(s[i][j], scale_log2, -m_new));
            s[i][j] = p;
            sum += p;
        }
        l[i] = fmaf(l[i], alpha, sum);
#pragma unroll
        for (int j = 0; j < TD; ++j) o[i][j] *= alpha;
    }
}

}  // namespace

// grid (cdiv(N, BR), B), block THREADS, dynamic shared memory FA2SIMT_SMEM_BYTES.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
    flash_fa2simt(const float* __restrict__ qkv, float* __restrict__ out, int N, float scale_log2) {
    extern __shared__ float4 smem_f4[];
    float* const smem = reinterpret_cast<float*>(smem_f4);
    float* const qt = smem;                          // [D][QS]     Q tile, transposed
    float* const pt = qt + QT_FLOATS;                // [BC][QS]    P tile, transposed (warp-private columns)
    float* const kt0 = pt + PT_FLOATS;               // [2][D][KS]  K tiles, transposed
    float* const vs0 = kt0 + 2 * KT_FLOATS;          // [2][BC][VS] V tiles

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int tr = lane & 3;       // row group of the lane
    const int tc = lane >> 2;      // key / column group of the lane
    const int b = blockIdx.y;
    const int row0 = blockIdx.x * BR;

    const float* const Q = qkv + qkv_item_offset(b, N, D);
    const float* const K = Q + (size_t)N * D;
    const float* const V = K + (size_t)N * D;
    float* const O = out + out_item_offset(b, N, D);

    const int tiles = (N + BC - 1) / BC;
    load_tile(kt0, vs0, K, V, 0, N);
    copy_commit();

    // Q tile, transposed into Qt[k][row] (rows past N are zeros). Each warp reads and writes only
    // its own rows, so this needs no block barrier of its own.
    {
        constexpr int Q_CHUNKS_PER_WARP = WARP_ROWS * D / 4;
#pragma unroll 4
        for (int it = 0; it < Q_CHUNKS_PER_WARP / 32; ++it) {
            const int chunk = it * 32 + lane;
            const int r = warp * WARP_ROWS + chunk % WARP_ROWS;
            const int k = (chunk / WARP_ROWS) * 4;
            const int row = row0 + r;
            float4 q4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (row < N) q4 = __ldg(reinterpret_cast<const float4*>(Q + (size_t)row * D + k));
            qt[(k + 0) * QS + r] = q4.x;
            qt[(k + 1) * QS + r] = q4.y;
            qt[(k + 2) * QS + r] = q4.z;
            qt[(k + 3) * QS + r] = q4.w;
        }
    }

    const int arow = warp * WARP_ROWS + tr * 4;  // first Qt/Pt column of the lane's rows (+16 per group)
    const int bcol = tc * 4;                     // first key / output column of the lane (+32 per group)

    float o[TM][TD];
    float m[TM];   // running row max, times scale_log2
    float l[TM];   // this lane's part of the running row sum
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        m[i] = ATTN_NEG_INF;
        l[i] = 0.0f;
#pragma unroll
        for (int j = 0; j < TD; ++j) o[i][j] = 0.0f;
    }

    for (int t = 0; t < tiles; ++t) {
        copy_wait_all();
        __syncthreads();  // tile t visible to all; every warp is done with tile t - 1
        if (t + 1 < tiles) {
            load_tile(kt0 + ((t + 1) & 1) * KT_FLOATS, vs0 + ((t + 1) & 1) * V_FLOATS, K, V, (t + 1) * BC, N);
            copy_commit();
        }
        const float* const kt = kt0 + (t & 1) * KT_FLOATS;
        const float* const vs = vs0 + (t & 1) * V_FLOATS;

        // S = Q K^T on the lane's TM x TN micro-tile.
        float s[TM][TN];
        if constexpr (SPLIT_S == 1) {
            float s2[TM][TN];
            zero_tile(s);
            zero_tile(s2);
            accumulate_s<0, D, true>(s, s2, qt, kt, arow, bcol);
            add_tile(s, s2);
        } else if constexpr (SPLIT_S == 2) {
            zero_tile(s);
            accumulate_s<0, D / 2, false>(s, s, qt, kt, arow, bcol);
            store_pt(pt, s, arow, bcol);  // the lane's own Pt slots: only this lane reads them back
            zero_tile(s);
            accumulate_s<D / 2, D, false>(s, s, qt, kt, arow, bcol);
            add_pt(s, pt, arow, bcol);
        } else {
            zero_tile(s);
            accumulate_s<0, D, false>(s, s, qt, kt, arow, bcol);
        }

        // Online softmax; only the last tile, when N % BC != 0, runs the masking copy (a separate
        // instantiation, so the full tiles carry no per-element selects).
        const int col0 = t * BC;
        if (col0 + BC > N)
            online_softmax<true>(s, m, l, o, col0, N, bcol, scale_log2);
        else
            online_softmax<false>(s, m, l, o, col0, N, bcol, scale_log2);

        // P into the warp's columns of Pt[key][row]: one 16-byte store per 4 rows and key.
        store_pt(pt, s, arow, bcol);
        __syncwarp();

        // O += P V on the lane's TM x TD micro-tile.
#pragma unroll UNROLL
        for (int k = 0; k < BC; ++k) {
            float a[TM], vv[TD];
#pragma unroll
            for (int g = 0; g < TM / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(pt + k * QS + arow + g * 16);
                a[g * 4 + 0] = v.x; a[g * 4 + 1] = v.y; a[g * 4 + 2] = v.z; a[g * 4 + 3] = v.w;
            }
#pragma unroll
            for (int g = 0; g < TD / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(vs + k * VS + bcol + g * 32);
                vv[g * 4 + 0] = v.x; vv[g * 4 + 1] = v.y; vv[g * 4 + 2] = v.z; vv[g * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TD; ++j) o[i][j] = fmaf(a[i], vv[j], o[i][j]);
        }
        // Pt is rewritten only after the next tile's block barrier, which all lanes pass after this loop.
    }

    // Row sums across the 8 lanes of a row, then O / l for rows < N.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        float sum = l[i];
        sum += __shfl_xor_sync(0xffffffffu, sum, 4);
        sum += __shfl_xor_sync(0xffffffffu, sum, 8);
        sum += __shfl_xor_sync(0xffffffffu, sum, 16);
        const float inv = 1.0f / sum;
        const int row = row0 + warp * WARP_ROWS + (i / 4) * 16 + tr * 4 + (i % 4);
        if (row < N) {
            float* const orow = O + (size_t)row * D + bcol;
#pragma unroll
            for (int g = 0; g < TD / 4; ++g) {
                *reinterpret_cast<float4*>(orow + g * 32) =
                    make_float4(o[i][g * 4 + 0] * inv, o[i][g * 4 + 1] * inv, o[i][g * 4 + 2] * inv,
                                o[i][g * 4 + 3] * inv);
            }
        }
    }
}
