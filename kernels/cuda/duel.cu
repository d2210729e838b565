// duel.cu: the DUEL update (the paper's Appendix D, duel/memory's
// duelReference) with the memory resident on the device (cuda.DUELMemory).
//
// Positions 0..K-1 are the rows held (oldest first), K+b is batch row b.
// With q(x, y) = (1 + x.y)/2 and the score of a row the sum of its q with
// every row held, itself included, each batch row i in turn
//   (a) picks the victim J: not protected first, then the highest score,
//       then the lowest position;
//   (b) deletes J: score -= q(J, .) over the rows held, J leaves;
//   (c) inserts i: score += q(i, .) over the rows held; score(i) = the sum
//       of its q with the rows held, itself included; i is protected until
//       the batch ends when protect != 0 (duel/memory's Protected).
//
// The device keeps, between updates (see cuda/duel.go):
//   grid  (K+Bcap) x Z floats: the rows on duel/memory's similarity grid,
//         floor(2048*x + 1/2) (duel_grid), rows 0..K-1 the memory, then
//         the batch;
//   sim   (K+Bcap) x W floats (W = K + Bcap): the grid dots of every pair
//         of positions, sim[r*W + c] = grid(r).grid(c): its K x K block is
//         carried, and an update adds the batch's rows and columns with
//         two products (sgemm_f32 over grid rows: exact, see below);
//   score K doubles: the carried scores of the rows held.
// One block then runs the B sequential steps (duel_select_*), reading per
// step row J of sim (contiguous) and keeping the K+B scores and flags in
// shared memory (duel_select_shared) or, when they do not fit, in global
// scratch (duel_select_global). duel_permute and duel_gather_rows then
// move the kept rows' block and grid rows to positions 0..K-1 for the next
// update.
//
// Exactness (duel/memory's "similarity grid"): every component of a unit
// row is rounded to an integer of magnitude at most 2048, so by
// Cauchy-Schwarz every partial sum of a dot product is an integer below
// (2048*|x| + sqrt(Z)/2)^2 < 2^24 (cuda/duel.go checks the rows' norms and
// Z): float FMA accumulation is exact in any order, and the dots are exact
// integers stored exactly as floats. Every q is 1/2 + d*2^-23 and every
// score, a double, is an exact sum of such multiples of 2^-23. Scores
// therefore do not depend on the order of the sums, and the decisions are
// exactly those of the CPU reference, ties included.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#define SEL 1   // flags: held
#define PROT 2  // flags: protected (entered during this batch, Protected mode)
#define QUNIT 0x1p-23
#define STEP 4  // positions per thread whose dots duel_select_* loads at once

#ifndef DYNAMIC_SHARED
// DYNAMIC_SHARED declares the block's dynamic shared memory (the CPU
// emulator defines its own).
#define DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#endif

// g[e] = floor(2048*x[e] + 1/2) for e < n, in place allowed (the similarity grid, as exact floats)
extern "C" __global__ void duel_grid(const float* x, long long n, float* g) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += step)
        g[e] = (float)floor((double)x[e] * 2048.0 + 0.5);
}

// score[j] = K/2 + 2^-23 * sum_{k<K} sim[j*W + k] for j < K, one warp per row
extern "C" __global__ void duel_scores(const float* sim, long long W, int K, double* score) {
    const int lane = threadIdx.x & 31;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long j = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; j < K; j += warps) {
        const float* row = sim + j * W;
        long long s = 0;
        for (int k = lane; k < K; k += 32) s += (long long)row[k];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
        if (lane == 0) score[j] = 0.5 * (double)K + (double)s * QUNIT;
    }
}

// dst[p*ldd + q] = src[kept[p]*lds + kept[q]] for p, q < K (the kept rows' block)
extern "C" __global__ void duel_permute(const float* src, long long lds, const int* kept, int K, float* dst, long long ldd) {
    for (long long p = blockIdx.y; p < K; p += gridDim.y) {
        const float* s = src + (long long)kept[p] * lds;
        float* d = dst + p * ldd;
        for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < K; q += (long long)gridDim.x * blockDim.x)
            d[q] = s[kept[q]];
    }
}

// dst[p*Z + z] = src[kept[p]*Z + z] for p < K, z < Z (the kept rows' grid rows)
extern "C" __global__ void duel_gather_rows(const float* src, const int* kept, int K, int Z, float* dst) {
    const long long n = (long long)K * Z, step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += step) {
        const long long p = e / Z, z = e - p * Z;
        dst[e] = src[(long long)kept[p] * Z + z];
    }
}

// A step's reduction: the first victim among a thread's candidates and
// the sum t of the incoming row's dots with the rows held. key is the
// candidate's position plus PROTBIT when it is protected, or NONE.
#define PROTBIT 0x40000000  // above every position (K+B <= 2^28)
#define NONE -1
struct Red {
    double score;
    long long t;
    int key;
};

// before reports whether candidate (as, ak) is evicted before b
// (duel/memory's evictsBefore: not protected, then the higher score, then
// the lower position).
__device__ __forceinline__ bool before(double as, int ak, const Red& b) {
    if (ak < 0) return false;
    if (b.key < 0) return true;
    if ((ak ^ b.key) & PROTBIT) return b.key & PROTBIT;
    if (as != b.score) return as > b.score;
    return ak < b.key;
}

__device__ __forceinline__ void merge(Red& r, double score, long long t, int key) {
    if (before(score, key, r)) r.score = score, r.key = key;
    r.t += t;
}

// blockRed returns, in every thread, the block's reduction of r: warp
// shuffles, then the warps' partials in part[0..31], reduced by warp 0 into
// part[32]. Two barriers: callers alternate between two part arrays, so
// that a step's writes never meet the previous step's reads of the same
// array (the other array's barriers lie between them). (One barrier, with
// every warp reducing the partials, measured no faster on an H100.)
__device__ __forceinline__ Red blockRed(Red r, Red* part) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll 1
    for (int s = 16; s > 0; s >>= 1)
        merge(r, __shfl_down_sync(0xffffffffu, r.score, s), __shfl_down_sync(0xffffffffu, r.t, s),
              __shfl_down_sync(0xffffffffu, r.key, s));
    if (lane == 0) part[warp] = r;
    __syncthreads();
    if (warp == 0) {
        if (lane < nwarps) {
            r = part[lane];
        } else {
            r.key = NONE, r.score = 0, r.t = 0;
        }
#pragma unroll 1
        for (int s = 16; s > 0; s >>= 1)
            merge(r, __shfl_down_sync(0xffffffffu, r.score, s), __shfl_down_sync(0xffffffffu, r.t, s),
                  __shfl_down_sync(0xffffffffu, r.key, s));
        if (lane == 0) part[32] = r;
    }
    __syncthreads();
    return part[32];
}

// selectBody is duel_select_shared and duel_select_global: the B steps,
// with score (K+B doubles) and flags (K+B bytes) in shared or global
// memory. Position c is always handled by thread c % blockDim.x (the
// loops below all start at threadIdx.x and step by blockDim.x), so a
// row's score and flags are only ever read and written by one thread and
// need no barrier between steps; the reductions carry the rest.
__device__ __forceinline__ void selectBody(const float* sim, long long W, int K, int B, int protect,
                                           const double* scoreIn, double* score, unsigned char* flags,
                                           int* evicted, int* kept, double* scoreOut) {
    __shared__ Red parts[2][33];
    const int tid = threadIdx.x, nt = blockDim.x;
    Red r;
    r.key = NONE, r.score = 0, r.t = 0;
    for (int c = tid; c < K + B; c += nt) {
        flags[c] = c < K ? SEL : 0;
        if (c < K) {
            const double s = scoreIn[c];
            score[c] = s;
            if (before(s, c, r)) r.score = s, r.key = c;
        }
    }
    // (a) for the first row: the rows held only, none protected yet.
    Red v = blockRed(r, parts[1]);

#pragma unroll 1
    for (int i = 0; i < B; i++) {
        const int J = v.key & ~PROTBIT;
        const float* del = sim + (long long)J * W;        // d(J, .)
        const float* ins = sim + (long long)(K + i) * W;  // d(i, .)
        if (tid == 0) evicted[i] = J;
        // (b) and (c) fused: every row held other than J loses q(J, c) and
        // gains q(i, c); J leaves. t accumulates d(i, c) over the rows
        // held; the candidates for (a) of the next row are the rows held
        // after the update, the new row apart.
        r.key = NONE, r.score = 0, r.t = 0;
        // The thread's positions are taken STEP at a time, their dots
        // loaded first, so that the loads of row J (a random row: from
        // DRAM when sim exceeds the L2 cache) overlap.
#pragma unroll 1
        for (int c0 = tid; c0 < K + i; c0 += STEP * nt) {
            float dJ[STEP], dI[STEP];
#pragma unroll
            for (int u = 0; u < STEP; u++) {
                const int c = c0 + u * nt;
                dJ[u] = c < K + i ? del[c] : 0.f;
                dI[u] = c < K + i ? ins[c] : 0.f;
            }
#pragma unroll
            for (int u = 0; u < STEP; u++) {
                const int c = c0 + u * nt;
                if (c >= K + i) break;
                const unsigned char f = flags[c];
                if (!(f & SEL)) continue;
                if (c == J) {
                    flags[c] = 0;
                    continue;
                }
                double s = score[c] - (0.5 + (double)dJ[u] * QUNIT);
                s = s + (0.5 + (double)dI[u] * QUNIT);
                score[c] = s;
                r.t += (long long)dI[u];
                const int key = (f & PROT) ? c | PROTBIT : c;
                if (before(s, key, r)) r.score = s, r.key = key;
            }
        }
        v = blockRed(r, parts[i & 1]);
        // Insert i: held = K-1 rows other than J were held (the memory is
        // full before every step).
        const int c = K + i;
        const double sNew = (0.5 * (double)(K - 1) + (double)v.t * QUNIT) + (0.5 + (double)ins[c] * QUNIT);
        if (c % nt == tid) {
            score[c] = sNew;
            flags[c] = SEL | (protect ? PROT : 0);
        }
        // (a) for the next row: the new row against the rows held.
        const int key = protect ? c | PROTBIT : c;
        if (before(sNew, key, v)) v.score = sNew, v.key = key;
    }

    // kept: the positions held, in order, compacted chunk by chunk with
    // warp ballots, with their scores.
    __shared__ int wcount[32];
    __shared__ int base;
    if (tid == 0) base = 0;
    __syncthreads();
    const int lane = tid & 31, warp = tid >> 5, nwarps = nt >> 5;
    for (int c0 = 0; c0 < K + B; c0 += nt) {
        const int c = c0 + tid;
        const bool on = c < K + B && (flags[c] & SEL);
        const unsigned mask = __ballot_sync(0xffffffffu, on);
        if (lane == 0) wcount[warp] = __popc(mask);
        __syncthreads();
        int off = base;
        for (int k = 0; k < warp; k++) off += wcount[k];
        if (on) {
            off += __popc(mask & ((1u << lane) - 1u));
            kept[off] = c;
            scoreOut[off] = score[c];
        }
        __syncthreads();
        if (tid == 0)
            for (int k = 0; k < nwarps; k++) base += wcount[k];
        __syncthreads();
    }
}

// evicted, kept, scoreOut = the B DUEL steps on sim with scores scoreIn, score and flags in (K+B)*9 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(1024, 1) duel_select_shared(
    const float* sim, long long W, int K, int B, int protect, const double* scoreIn,
    int* evicted, int* kept, double* scoreOut) {
    DYNAMIC_SHARED(double, dyn);
    selectBody(sim, W, K, B, protect, scoreIn, dyn, (unsigned char*)(dyn + K + B), evicted, kept, scoreOut);
}

// evicted, kept, scoreOut = the B DUEL steps on sim with scores scoreIn, score (K+B doubles) and flags (K+B bytes) in global scratch
extern "C" __global__ void __launch_bounds__(1024, 1) duel_select_global(
    const float* sim, long long W, int K, int B, int protect, const double* scoreIn,
    double* score, unsigned char* flags, int* evicted, int* kept, double* scoreOut) {
    selectBody(sim, W, K, B, protect, scoreIn, score, flags, evicted, kept, scoreOut);
}
