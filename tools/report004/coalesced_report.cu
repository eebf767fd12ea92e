// coalesced_report -- report 004 §4.2.7 "Memory Coalescing", written the report's way, to
// measure attnbench's `coalesced` against. Not a variant: its launch facts are in attnbench.toml here.
// The design, from the report's text and fragments (§2.2 to §2.5, §4.2.3 to §4.2.7):
//   - grid (B, N/br), one block of br = 128 threads per (batch item, Q tile), thread tx owns row tx;
//   - separate q, k, v arrays read as float4; qkv_offset = bx * N * vec_d; o stays a float*;
//   - bc = 16 for d = 64 and 32 for d = 32 (§4.2.3), sram_size = (2*bc*d + br*d + bc*br) floats;
//   - Q tile, K and V tiles and S in shared memory, all row-major: qi[tx*vec_d + x], sij[tx*bc + y];
//   - the Q tile (once, before the K/V loop) and each K/V tile loaded by all br threads together,
//     consecutive threads on consecutive float4s, step = br / vec_d rows per pass (this step's change);
//   - m and l in global arrays, read and written once per tile;
//   - the rescale factors once per tile with __expf and __fdividef (§4.2.6); exp() for P and max() for
//     the row max as in §4.2.5;
//   - O updated in global memory with four scalar loads and stores per float4 (o[base_idx + 0..3]);
//   - built with --use_fast_math, as qreg_report is (attnbench.toml).
// Left out by the report, read the plainest way: the K/V load, QKDotAndScalar, MinusMaxAndExp, PV and
// the O update this step elides are §4.2.6's code; d, br, bc, tc, tr stay run-time values as the
// report passes them (bc is derived from d in the kernel, with the host's formula).
// Kept from the report: the running max starts at 0.0f (the value §4.2.8 gives its register) and each
// tile's max at FLT_MIN. Softmax is shift-invariant, so these change nothing while exp neither
// overflows nor underflows to 0, which holds for the course's value range (scaled scores within 72).
// Changed for attnbench: the kernel zeroes O and sets m = 0, l = 0 for its own row (the runner hands
// over undefined buffers; the report's host set them); offsets are size_t, as in qreg_report.
// Restrictions, as in the report: d in {32, 64}; N a multiple of br = 128 (so of bc too). attnbench.toml
// declares both, so other shapes are refused rather than computed wrongly.
#include <cfloat>

extern "C" __global__ void coalesced_report(const float4* q, const float4* k, const float4* v, const int N, const int d,
                                         const float softmax_scale, float* l, float* m, float* o) {
    const int tx = threadIdx.x, bx = blockIdx.x, by = blockIdx.y;
    const int br = 128, bc = (d == 64) ? 16 : 32;
    const int tc = N / bc;
    const int vec_d = d / 4;
    const size_t qkv_offset = (size_t)bx * N * vec_d;
    const size_t lm_offset = (size_t)bx * N;

    extern __shared__ float4 sram[];
    const int tile_size_r = br * vec_d;
    const int tile_size_c = bc * vec_d;
    float4* qi = sram;
    float4* kj = &sram[tile_size_r];
    float4* vj = &sram[tile_size_r + tile_size_c];
    float* sij = (float*)&sram[tile_size_r + tile_size_c * 2];

    const int i = by;
    m[lm_offset + (br * i) + tx] = 0.0f;
    l[lm_offset + (br * i) + tx] = 0.0f;
    for (int x = 0; x < d; ++x) o[(qkv_offset + (tile_size_r * i) + (tx * vec_d)) * 4 + x] = 0.0f;

    int step = br / vec_d;
    // Load Q with Memory Coalescing
    for (int x = 0; x < br; x += step) {
        qi[(x * vec_d) + tx] = q[qkv_offset + (tile_size_r * i) + (x * vec_d) + tx];
    }

    for (int j = 0; j < tc; ++j) {
        // Load K, V with Memory Coalescing
        for (int x = 0; x < bc; x += step) {
            kj[(x * vec_d) + tx] = k[qkv_offset + (tile_size_c * j) + (x * vec_d) + tx];
            vj[(x * vec_d) + tx] = v[qkv_offset + (tile_size_c * j) + (x * vec_d) + tx];
        }
        __syncthreads();

        // QKDotAndScalar(sij) && RowMax(mij)
        float mij = FLT_MIN;
        for (int y = 0; y < bc; ++y) {
            float sum = 0.0f;
            for (int x = 0; x < vec_d; ++x) {
                float4 q4 = qi[(tx * vec_d) + x];
                float4 k4 = kj[(y * vec_d) + x];
                sum += q4.x * k4.x + q4.y * k4.y + q4.z * k4.z + q4.w * k4.w;
            }
            sum *= softmax_scale;
            sij[(tx * bc) + y] = sum;
            mij = max(mij, sum);
        }
        // MinusMaxAndExp(pij) && RowSum(lij)
        float lij = 0.0f;
        for (int y = 0; y < bc; ++y) {
            sij[(bc * tx) + y] = exp(sij[(bc * tx) + y] - mij);
            lij += sij[(bc * tx) + y];
        }
        // UpdateMiLiOi: compute new m and l
        float mi_old = m[lm_offset + (br * i) + tx];
        float li_old = l[lm_offset + (br * i) + tx];

        float mi_new = fmaxf(mi_old, mij);
        // Move exp_old and exp_new out of loop
        float exp_old = __expf(mi_old - mi_new);
        float exp_new = __expf(mij - mi_new);
        float li_new = (exp_old * li_old) + (exp_new * lij);

        // Move scale, old_scale and exp_scale out of loop
        float scale = __fdividef(1.0f, li_new);
        float old_scale = li_old * exp_old * scale;
        float exp_scale = exp_new * scale;

        for (int x = 0; x < vec_d; ++x) {
            // Compute PV
            float4 pv = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            for (int y = 0; y < bc; ++y) {
                float s = sij[(tx * bc) + y];
                float4 v4 = vj[y * vec_d + x];
                pv.x += s * v4.x;
                pv.y += s * v4.y;
                pv.z += s * v4.z;
                pv.w += s * v4.w;
            }

            const size_t base_idx = (qkv_offset + (tile_size_r * i) + (tx * vec_d) + x) << 2;

            // Compute data and store to Oi
            o[base_idx] = old_scale * o[base_idx] + exp_scale * pv.x;
            o[base_idx + 1] = old_scale * o[base_idx + 1] + exp_scale * pv.y;
            o[base_idx + 2] = old_scale * o[base_idx + 2] + exp_scale * pv.z;
            o[base_idx + 3] = old_scale * o[base_idx + 3] + exp_scale * pv.w;
        }

        // Update m, l
        m[lm_offset + (br * i) + tx] = mi_new;
        l[lm_offset + (br * i) + tx] = li_new;
        __syncthreads();
    }
}
