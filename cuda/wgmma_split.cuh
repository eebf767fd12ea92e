// The key split of wgmma3x and wgmma16s: the partial results of a split pass and their combination.
// Included inside each kernel's file after its tile constants: it needs kHeadDim, kConsumerThreads and
// kTileKeys, and ATTN_NEG_INF (common.cuh). Named barrier 5 is its own (1, 2: Q; 3, 4: wgmma3x's ping-pong).
#pragma once

// ---- key split: partial results and their combination ---------------------------------------------
// A block of a split pass (gridDim.z > 1) holds its rows' unnormalised O, running max m (log2 units) and
// row sum l over its own key range. Each consumer thread writes its values as one record column
// (value v of thread c at v * kConsumerThreads + c: coalesced), then counts its block in the rows'
// counter (0 between passes: the last block resets it). The block that counts last reads every split's record, in split
// order (so the sum does not depend on which block came last), rescales each to the common max, and
// goes on to write the rows; the others are done.
constexpr int kRecordValues = kHeadDim / 2 + 4;  // o, m_lo, m_hi, l_lo, l_hi
constexpr int kRecordFloats = kRecordValues * kConsumerThreads;
constexpr int kSplitBarrier = 5;  // named barrier of the consumer threads (1, 2: Q; 3, 4: wgmma3x's ping-pong)

// The parts the key range is split into: gridDim.z, but never more than there are K/V tiles (blocks of a
// larger grid z have nothing to do and leave at once; the host never asks for them).
__device__ __forceinline__ int key_parts(int N) { return min(static_cast<int>(gridDim.z), (N + kTileKeys - 1) / kTileKeys); }

__device__ __forceinline__ bool combine_splits(float (&o)[kHeadDim / 2], float& m_lo, float& m_hi, float& l_lo, float& l_hi,
                                               float* __restrict__ partials, float* __restrict__ counters, int N,
                                               int unit) {
    __shared__ unsigned arrived_before;
    // The block's part and the thread's index, read afresh (asm volatile): values the compiler kept
    // from the kernel's start would stay live through the main loop, whose registers are all spent
    // (measured on the H200: t22 8% slower with them kept, though it runs no split).
    unsigned ctaid_z, ctid;
    asm volatile("mov.u32 %0, %%ctaid.z;\n" : "=r"(ctaid_z));
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(ctid));
    const int splits = key_parts(N);
    const size_t rows = static_cast<size_t>(unit);
    float* const records = partials + rows * splits * kRecordFloats;
    float* const mine = records + static_cast<size_t>(ctaid_z) * kRecordFloats;
#pragma unroll
    for (int v = 0; v < kHeadDim / 2; ++v) mine[v * kConsumerThreads + ctid] = o[v];
    mine[(kHeadDim / 2 + 0) * kConsumerThreads + ctid] = m_lo;
    mine[(kHeadDim / 2 + 1) * kConsumerThreads + ctid] = m_hi;
    mine[(kHeadDim / 2 + 2) * kConsumerThreads + ctid] = l_lo;
    mine[(kHeadDim / 2 + 3) * kConsumerThreads + ctid] = l_hi;
    __threadfence();  // this block's record is visible device-wide before it is counted
    asm volatile("bar.sync %0, %1;\n" ::"n"(kSplitBarrier), "n"(kConsumerThreads) : "memory");
    if (ctid == 0) arrived_before = atomicAdd(reinterpret_cast<unsigned*>(counters) + rows, 1u);
    asm volatile("bar.sync %0, %1;\n" ::"n"(kSplitBarrier), "n"(kConsumerThreads) : "memory");
    if (arrived_before != static_cast<unsigned>(splits - 1)) return false;
    // The last block: every part has counted, so the counter goes back to 0 for the next pass (the
    // host zeroes the workspace once, when it allocates it).
    if (ctid == 0) reinterpret_cast<unsigned*>(counters)[rows] = 0u;
    __threadfence();  // the other records, counted before, are read after this
    auto at = [&](int z, int v) { return __ldcg(records + static_cast<size_t>(z) * kRecordFloats + v * kConsumerThreads + ctid); };
    float top_lo = ATTN_NEG_INF, top_hi = ATTN_NEG_INF;
    for (int z = 0; z < splits; ++z) {
        top_lo = fmaxf(top_lo, at(z, kHeadDim / 2 + 0));
        top_hi = fmaxf(top_hi, at(z, kHeadDim / 2 + 1));
    }
    const float shift_lo = top_lo == ATTN_NEG_INF ? 0.0f : top_lo;  // as in softmax_tile: no -inf - -inf
    const float shift_hi = top_hi == ATTN_NEG_INF ? 0.0f : top_hi;
#pragma unroll
    for (int v = 0; v < kHeadDim / 2; ++v) o[v] = 0.0f;
    l_lo = l_hi = 0.0f;
    for (int z = 0; z < splits; ++z) {
        const float w_lo = exp2f(at(z, kHeadDim / 2 + 0) - shift_lo);
        const float w_hi = exp2f(at(z, kHeadDim / 2 + 1) - shift_hi);
        l_lo = fmaf(at(z, kHeadDim / 2 + 2), w_lo, l_lo);
        l_hi = fmaf(at(z, kHeadDim / 2 + 3), w_hi, l_hi);
#pragma unroll
        for (int n = 0; n < kHeadDim / 8; ++n) {
            o[4 * n + 0] = fmaf(at(z, 4 * n + 0), w_lo, o[4 * n + 0]);
            o[4 * n + 1] = fmaf(at(z, 4 * n + 1), w_lo, o[4 * n + 1]);
            o[4 * n + 2] = fmaf(at(z, 4 * n + 2), w_hi, o[4 * n + 2]);
            o[4 * n + 3] = fmaf(at(z, 4 * n + 3), w_hi, o[4 * n + 3]);
        }
    }
    m_lo = top_lo;
    m_hi = top_hi;
    return true;
}
