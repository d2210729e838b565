// duel.cuh: what duel.cu's packed selection (duel_select_shared,
// duel_select_global), duel_cluster.cu's (duel_select_cluster) and
// duel_rounds.cu's (duel_select_rounds) share: the key fields, the warp
// and block maxima, the starting keys, the block compaction and the next
// layout that ends every selection (see "The packed selection" in
// duel.cu).
#pragma once

#define QUNIT 0x1p-23

// SELECT_PROTECT and SELECT_PREFETCH are the bits of the selection
// kernels' flags: the batch rows are protected (memory.Protected), and
// each step of the one-block kernels ends by prefetching the runners-up's
// rows (duel.cu's prefetchRunnersUp).
#define SELECT_PROTECT 1
#define SELECT_PREFETCH 2
// SELECT_STATS makes duel_lean.cu's kernels write thread 0's clock64
// cycles in each part of the update into their stats (LSTAT_*).
#define SELECT_STATS 4

#ifndef DYNAMIC_SHARED
// DYNAMIC_SHARED declares the block's dynamic shared memory (the CPU
// emulator defines its own).
#define DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#endif

#define KEY_VALID (1ull << 63)
#define KEY_FREE (1ull << 62)  // not protected

#if !defined(DUEL_REDUX) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define DUEL_REDUX 1
#endif

// warpMax returns, in every lane, the maximum of k over the warp: with
// sm_80's __reduce_max_sync on the high then the low halves, else five
// butterfly shuffles.
__device__ __forceinline__ unsigned long long warpMax(unsigned long long k) {
#ifdef DUEL_REDUX
    const unsigned hi = __reduce_max_sync(0xffffffffu, (unsigned)(k >> 32));
    const unsigned lo = __reduce_max_sync(0xffffffffu, (unsigned)(k >> 32) == hi ? (unsigned)k : 0u);
    return (unsigned long long)hi << 32 | lo;
#else
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long x = __shfl_xor_sync(0xffffffffu, k, o);
        k = x > k ? x : k;
    }
    return k;
#endif
}

// blockMax returns, in every thread, the maximum of k over the block: a
// warp maximum, the warps' partials in part[0..31], one barrier, then
// every warp reduces the partials itself. Callers alternate between two
// part arrays: a fast warp may write its partial of step s+1 while a slow
// one still reads those of step s (another array), and it writes those of
// step s+2 only after the barrier of step s+1, which the slow warp reaches
// after its reads of step s.
__device__ __forceinline__ unsigned long long blockMax(unsigned long long k, unsigned long long* part) {
    const int lane = threadIdx.x & 31;
    k = warpMax(k);
    if (lane == 0) part[threadIdx.x >> 5] = k;
    __syncthreads();
    return warpMax(lane < (int)(blockDim.x >> 5) ? part[lane] : 0ull);
}

// prefetchL2 asks for the 128-byte line at global p in L2
// (prefetch.global.L2): a hint, no result; the emulator ignores it.
#ifdef __CUDA_ARCH__
__device__ __forceinline__ void prefetchL2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
#else
inline void prefetchL2(const void*) {}
#endif

// PREFETCH_ROWS is how many runners-up's rows of sim a step's end asks L2
// for (SELECT_PREFETCH): on clustered streams the next step's victim is
// among the top 4 in 97-99.6% of the steps (Protected; in Compete ~87%,
// the rest being the row just inserted, loaded a step ahead anyway:
// duel/memory's BenchmarkVictimRank).
#define PREFETCH_ROWS 3

// prefetchRunnersUp asks L2 for the rows of sim (n ints each, slots by
// slotTab below K) of the PREFETCH_ROWS largest of the warp maxima part
// below v (the victim just chosen from them): the likely victims of the
// step after next, whose rows would otherwise come from DRAM when sim
// exceeds L2. Every thread takes part: the same reductions over the
// partials in every warp (their reads covered by blockMax's alternation),
// then thread t prefetches line t of each row. The runner-up sharing its
// warp with a larger key is missed (about 1 in 32).
__device__ __forceinline__ void prefetchRunnersUp(unsigned long long v, const unsigned long long* part, const int* sim, long long W,
                                                  int n, int K, unsigned long long posMask, const int* slotTab) {
    const int lane = threadIdx.x & 31;
    const unsigned long long p = lane < (int)(blockDim.x >> 5) ? part[lane] : 0ull;
    unsigned long long cut = v;
#pragma unroll 1
    for (int r = 0; r < PREFETCH_ROWS; r++) {
        const unsigned long long q = warpMax(p < cut ? p : 0ull);
        if (q == 0) return;  // fewer candidates
        cut = q;
        const int pos = (int)(posMask - (q & posMask));
        const char* row = reinterpret_cast<const char*>(sim + (long long)(pos < K ? slotTab[pos] : pos) * W);
        for (int l = threadIdx.x; l * 32 < n; l += blockDim.x) prefetchL2(row + 128LL * l);
    }
}

// PackedGeom is what every packed selection derives from K and B:
// posBits, the bits of the largest position K+B-1 (the keys' position
// field), its mask, and OFF = (K+2B)*2^24, the bias of the integer
// scores (see "The packed selection" in duel.cu).
struct PackedGeom {
    int posBits;
    unsigned long long posMask, off;
};

__device__ __forceinline__ PackedGeom packedGeom(int K, int B) {
    PackedGeom g;
    g.posBits = 0;
    while ((1 << g.posBits) < K + B) g.posBits++;
    g.posMask = (1ull << g.posBits) - 1;
    g.off = (unsigned long long)(K + 2LL * B) << 24;
    return g;
}

// packKey is the starting key of slot c (see "The packed selection" in
// duel.cu): a row held (c < K) from its score scoreIn[c] and rank
// (position) rank[c], never protected; a batch row from its batch sum
// P[c - K], protected when protect is set.
__device__ __forceinline__ unsigned long long packKey(int c, int K, int protect, const PackedGeom& g, const double* scoreIn,
                                                      const long long* P, const int* rank) {
    if (c < K) {
        const unsigned long long u = g.off + (unsigned long long)(long long)((scoreIn[c] - 0.5 * (double)K) * 0x1p23);
        return (u << g.posBits) | KEY_VALID | KEY_FREE | (g.posMask - rank[c]);
    }
    return ((g.off + (unsigned long long)P[c - K]) << g.posBits) | (protect ? KEY_VALID : KEY_VALID | KEY_FREE) | (g.posMask - c);
}

// packKeys writes the starting keys of the K+B slots into U (packKey) and
// returns the largest of this thread's keys of the rows held (slots tid,
// tid + blockDim.x, ...).
__device__ __forceinline__ unsigned long long packKeys(int K, int B, int protect, const PackedGeom& g, const double* scoreIn,
                                                       const long long* P, const int* rank, unsigned long long* U) {
    unsigned long long best = 0;
    for (int c = threadIdx.x; c < K + B; c += blockDim.x) {
        const unsigned long long x = packKey(c, K, protect, g, scoreIn, P, rank);
        if (c < K) best = x > best ? x : best;
        U[c] = x;
    }
    return best;
}

// chunkOffset is one chunk of a block's stream compaction: it returns,
// for a thread with on set, the number of threads with on set before it
// in this chunk plus *base, and advances *base (shared) by the chunk's
// count. Three barriers: every thread of the block must call it.
__device__ __forceinline__ int chunkOffset(bool on, int* wcount, int* base) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const unsigned mask = __ballot_sync(0xffffffffu, on);
    if (lane == 0) wcount[warp] = __popc(mask);
    __syncthreads();
    int o = *base;
    for (int k = 0; k < warp; k++) o += wcount[k];
    o += __popc(mask & ((1u << lane) - 1u));
    __syncthreads();
    if (threadIdx.x == 0)
        for (int k = 0; k < nwarps; k++) *base += wcount[k];
    __syncthreads();
    return o;
}

// compactPacked ends a packed selection, in one block, from the final keys
// U of the K+B slots (0: evicted; the block's first barrier below
// publishes them): the next layout by three block compactions. moves[j]
// is the slot K+b of the j-th batch row kept, then the j-th slot freed
// takes it (src; moves[j] = that slot); scoreOut gets the scores by slot;
// the positions are renumbered (the rows held that stay, in position
// order, then the batch rows kept) in kept's rank and slot tables.
__device__ __forceinline__ void compactPacked(const unsigned long long* U, int K, int B, int posBits,
                                              unsigned long long off, int* kept, double* scoreOut) {
    __shared__ int wcount[32];
    __shared__ int base;
    int* const rank = kept;
    int* const slot = kept + K;
    int* const src = kept + 2 * K;
    int* const moves = kept + 3 * K;
    const int tid = threadIdx.x, nt = blockDim.x, N = K + B;
    if (tid == 0) base = 0;
    __syncthreads();
    // moves[j] = the slot K+b of the j-th batch row kept.
    for (int c0 = K; c0 < N; c0 += nt) {
        const int c = c0 + tid;
        const bool on = c < N && U[c] != 0;
        const int o = chunkOffset(on, wcount, &base);
        if (on) moves[o] = c;
    }
    const int M = base;
    __syncthreads();
    if (tid == 0) base = 0;
    __syncthreads();
    // The j-th slot freed takes it: src, then moves[j] = that slot; the
    // scores by slot.
    for (int t0 = 0; t0 < K; t0 += nt) {
        const int t = t0 + tid;
        const unsigned long long x = t < K ? U[t] : 1ull;
        const int o = chunkOffset(x == 0, wcount, &base);
        if (t < K) {
            int from = t;
            if (x == 0) {
                from = moves[o];
                moves[o] = t;
            }
            src[t] = from;
            const unsigned long long u = (U[from] << 2) >> (2 + posBits);
            scoreOut[t] = 0.5 * (double)K + (double)(long long)(u - off) * QUNIT;
        }
    }
    if (tid == 0) base = 0;
    __syncthreads();
    // Positions: the rows held that stay, in position order (slot is
    // compacted in place: a chunk's reads precede its writes, which go
    // no further than the chunk), then the batch rows kept.
    for (int p0 = 0; p0 < K; p0 += nt) {
        const int p = p0 + tid;
        const int s = p < K ? slot[p] : 0;
        const bool on = p < K && U[s] != 0;
        const int o = chunkOffset(on, wcount, &base);
        if (on) slot[o] = s, rank[s] = o;
    }
    for (int j = tid; j < B; j += nt) {
        if (j < M) {
            const int s = moves[j];
            slot[K - M + j] = s, rank[s] = K - M + j;
        } else {
            moves[j] = -1;
        }
    }
}
