// qreg_report -- report 004 §4.2.10 "Use Register on Qi to Extend bc", written the report's way, to
// measure attnbench's `qreg` against. Not a variant: its launch facts are in attnbench.toml here.
// The design, from the report's text and fragments (§4.2.5 to §4.2.10):
//   - grid (B, N/br), one block of br = 128 threads per (batch item, Q tile), thread tx owns row tx;
//   - separate q, k, v arrays read as float4; qkv_offset = bx * N * vec_d;
//   - the Q row in registers (float4 qi[...]); K and V tiles in shared memory, loaded coalesced
//     (§4.2.7: consecutive threads on consecutive float4s, `step = br / vec_d` rows per pass);
//   - S in shared memory at sij[y*br + tx] (§4.2.9); bc = 64 for d = 32, 32 for d = 64 (§4.2.10);
//   - m and l in registers (§4.2.8), rescale factors once per tile with __expf and __fdividef (§4.2.6);
//   - O normalised in global memory after every tile, with float4 loads and stores;
//   - built with --use_fast_math (attnbench.toml).
// Kept from the report: the running max starts at 0.0f and each tile's max at FLT_MIN (§4.2.8/§4.2.9).
// Softmax is shift-invariant, so these change nothing while exp neither overflows nor underflows to 0,
// which holds for the course's value range ([-3, 3]: scaled scores within 9*sqrt(d) = 72).
// Changed for attnbench: d is a compile-time HEAD_DIM (so qi, declared float4 qi[16] in the report,
// stays in registers: indexed by a loop with a run-time bound it would live in local memory), and O is
// zeroed in the kernel (the runner hands over an undefined buffer; the report's host zeroed it).
// Restrictions, as in the report: d in {32, 64}; N a multiple of br = 128 (so of bc too). attnbench.toml
// declares both, so other shapes are refused rather than computed wrongly.
#include <cfloat>

#ifndef HEAD_DIM
#error "compile with -DHEAD_DIM=32 or -DHEAD_DIM=64"
#endif

#define BR 128
#define BC (HEAD_DIM == 64 ? 32 : 64)
#define VEC_D (HEAD_DIM / 4)

extern "C" __global__ void qreg_report(const float4* q, const float4* k, const float4* v, float* o, int N,
                                       float softmax_scale) {
    extern __shared__ float4 sram[];
    const int tx = threadIdx.x, bx = blockIdx.x, by = blockIdx.y;
    const int vec_d = VEC_D, br = BR, bc = BC;
    const int tc = N / bc;
    const size_t qkv_offset = (size_t)bx * N * vec_d;
    const int tile_size_r = br * vec_d;
    const int tile_size_c = bc * vec_d;
    float4* kj = sram;
    float4* vj = &sram[tile_size_c];
    float* sij = (float*)&sram[tile_size_c * 2];
    float4* o4 = reinterpret_cast<float4*>(o);

    float4 qi[VEC_D];  // Store qi in registers instead of shared memory
    const int i = by;
    for (int x = 0; x < vec_d; ++x) {
        qi[x] = q[qkv_offset + (tile_size_r * i) + (tx * vec_d) + x];
        o4[qkv_offset + (tile_size_r * i) + (tx * vec_d) + x] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }

    const int step = br / vec_d;
    float mi_old = 0.0f;
    float li_old = 0.0f;
    for (int j = 0; j < tc; ++j) {
        // Load K, V with memory coalescing
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
                float4 q4 = qi[x];
                float4 k4 = kj[(y * vec_d) + x];
                sum += q4.x * k4.x + q4.y * k4.y + q4.z * k4.z + q4.w * k4.w;
            }
            sum *= softmax_scale;
            sij[(y * br) + tx] = sum;
            mij = fmaxf(mij, sum);
        }
        // MinusMaxAndExp(pij) && RowSum(lij)
        float lij = 0.0f;
        for (int y = 0; y < bc; ++y) {
            sij[(y * br) + tx] = __expf(sij[(y * br) + tx] - mij);
            lij += sij[(y * br) + tx];
        }
        // UpdateMiLi
        float mi_new = fmaxf(mi_old, mij);
        float exp_old = __expf(mi_old - mi_new);
        float exp_new = __expf(mij - mi_new);
        float li_new = (exp_old * li_old) + (exp_new * lij);
        float scale = __fdividef(1.0f, li_new);
        float old_scale = li_old * exp_old * scale;
        float exp_scale = exp_new * scale;
        // UpdateOi
        for (int x = 0; x < vec_d; ++x) {
            float4 pv = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            for (int y = 0; y < bc; ++y) {
                float s = sij[(y * br) + tx];
                float4 v4 = vj[y * vec_d + x];
                pv.x += s * v4.x;
                pv.y += s * v4.y;
                pv.z += s * v4.z;
                pv.w += s * v4.w;
            }
            const size_t base_idx = qkv_offset + (tile_size_r * i) + (tx * vec_d) + x;
            float4 o_old = o4[base_idx];
            o4[base_idx] = make_float4(old_scale * o_old.x + exp_scale * pv.x, old_scale * o_old.y + exp_scale * pv.y,
                                       old_scale * o_old.z + exp_scale * pv.z, old_scale * o_old.w + exp_scale * pv.w);
        }
        // Update mi, li for next tile of K, V
        mi_old = mi_new;
        li_old = li_new;
        __syncthreads();
    }
}
