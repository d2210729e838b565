// duel.cu: the DUEL update (the paper's Appendix D, duel/memory's
// duelReference) with the memory resident on the device (cudaduel.Memory).
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
// The device keeps, between updates (see duel/memory/cudaduel/memory.go):
//   grid  (K+Bcap) x Z floats: the rows on duel/memory's similarity grid,
//         floor(2048*x + 1/2) (duel_grid), rows 0..K-1 the memory, then
//         the batch;
//   sim   (K+Bcap) x W floats (W = K + Bcap): the grid dots of every pair
//         of positions, sim[r*W + c] = grid(r).grid(c): its K x K block is
//         carried, and an update adds the batch's rows and columns with
//         two products (sgemm_f32 over grid rows: exact, see below);
//   score K doubles: the carried scores of the rows held.
// duel_batch_sums then adds up each batch row's dots with the positions
// before it, and one block runs the B sequential steps (duel_select_*,
// "the packed selection" below): per step it reads row J of sim and the
// incoming row (contiguous), keeps the K+B scores as exact integers in
// shared memory (duel_select_shared) or, when they do not fit, in global
// scratch (duel_select_global), and finds the next victim as the maximum
// of one uint64 per candidate: a warp maximum, one barrier, a maximum of
// the warps' partials. duel_select_wide is the former selection (double
// scores, a reduction of (score, dot sum, position) triples, global
// scratch), for memories too large for the packed keys. duel_permute and
// duel_gather_rows then move the kept rows' block and grid rows to
// positions 0..K-1 for the next update.
//
// Exactness (duel/memory's "similarity grid"): every component of a unit
// row is rounded to an integer of magnitude at most 2048, so by
// Cauchy-Schwarz every partial sum of a dot product is an integer below
// (2048*|x| + sqrt(Z)/2)^2 < 2^24 (cudaduel checks the rows' norms and
// Z): float FMA accumulation is exact in any order, and the dots are exact
// integers stored exactly as floats. Every q is 1/2 + d*2^-23 and every
// score, a double, is an exact sum of such multiples of 2^-23: K/2 +
// S*2^-23 with S an integer, |S| < K*2^24, which the packed selection
// keeps as an integer (converted exactly from and to the doubles at its
// start and end). Scores therefore do not depend on the order of the sums,
// and the decisions are exactly those of the CPU reference, ties included.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#define SEL 1   // flags: held
#define PROT 2  // flags: protected (entered during this batch, Protected mode)
#define QUNIT 0x1p-23
#define STEP 4  // positions per thread whose dots duel_select_wide loads at once

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

// selectBody is duel_select_wide: the B steps, with score (K+B doubles)
// and flags (K+B bytes) in global memory (it ran in shared memory too
// before the packed selection). Position c is always handled by thread c % blockDim.x (the
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

// evicted, kept, scoreOut = the B DUEL steps on sim with scores scoreIn (wide keys), score (K+B doubles) and flags (K+B bytes) in global scratch
extern "C" __global__ void __launch_bounds__(1024, 1) duel_select_wide(
    const float* sim, long long W, int K, int B, int protect, const double* scoreIn,
    double* score, unsigned char* flags, int* evicted, int* kept, double* scoreOut) {
    selectBody(sim, W, K, B, protect, scoreIn, score, flags, evicted, kept, scoreOut);
}

// ---- The packed selection (duel_select_shared, duel_select_global) ----
//
// Every score is K/2 + S*2^-23 with S the sum of the K dots d of the row
// with the rows held (an exact integer, |d| < 2^24: |S| < K*2^24), so a
// score is kept as the unsigned integer U = S + OFF with OFF = (K+2B)*2^24
// (room for B steps of |dI - dJ| < 2^25 from any carried S with
// |S| < K*2^24, the bound cudaduel checks on carried scores): 1 <= U <
// 2*OFF, and U = 0 marks a row evicted. A candidate is one uint64 whose
// maximum is the victim (duel/memory's evictsBefore):
//   bit 63        1 (a candidate; 0 is none)
//   bit 62        1 when not protected
//   bits 62..P    U (P = posBits, the bits of K+B-1)
//   bits P-1..0   posMask - position (the lower position wins a tie)
// which fits when 2*OFF <= 2^(62-P) (cudaduel's packedFits; duel_select_wide
// runs otherwise). Comparing U compares the exact scores, so the
// decisions are those of the wide keys and the CPU reference, ties
// included.
//
// The incoming row's score is taken out of the reduction: for batch row i,
// with J_0..J_i the victims of the steps so far (all below K+i, distinct),
// the rows held besides J_i when it arrives are [0, K+i) minus J_0..J_i,
// so S(K+i) = P_i + d(i,i) - sum_{s<=i} d(i, J_s) with P_i = sum_{c<K+i}
// d(i, c) (duel_batch_sums, before the steps). U[K+i] starts at OFF + P_i;
// the pass over row J_s of every step s <= i subtracts d(J_s, K+i) from it
// (sim is symmetric: the dots are exact), and at step i the row gets the
// update of every row held, + d(i, K+i) - d(J_i, K+i): its score is final
// and it competes in the same reduction as the rows held.
#define KEY_VALID (1ull << 63)
#define KEY_FREE (1ull << 62)  // not protected
#define PSTEP 5                // positions per thread whose dots the packed pass loads at once (64 registers: no more)

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

// The selection kernels reduce with warp intrinsics in their helpers: the
// markers duel_select_shared_warps, duel_select_global_warps and
// duel_select_wide_warps give them launchers that insist on whole warps.
//
// selectPacked is duel_select_shared and duel_select_global: the B steps
// with U (K+B values, see above) in shared or global memory. Position c
// always belongs to thread c % blockDim.x, so U needs no barrier; a step
// is the pass over the thread's positions (rows J and K+i of sim), a
// warp maximum, one barrier and a maximum of the partials.
__device__ __forceinline__ void selectPacked(const float* sim, long long W, int K, int B, int protect,
                                             const double* scoreIn, const long long* P, unsigned long long* U,
                                             int* evicted, int* kept, double* scoreOut) {
    __shared__ unsigned long long parts[2][32];
    const int tid = threadIdx.x, nt = blockDim.x, N = K + B;
    int posBits = 0;
    while ((1 << posBits) < N) posBits++;
    const unsigned long long posMask = (1ull << posBits) - 1;
    const unsigned long long off = (unsigned long long)(K + 2LL * B) << 24;
    const unsigned long long batchFlags = protect ? KEY_VALID : KEY_VALID | KEY_FREE;
    unsigned long long best = 0;
    for (int c = tid; c < N; c += nt) {
        unsigned long long u;
        if (c < K) {
            u = off + (unsigned long long)(long long)((scoreIn[c] - 0.5 * (double)K) * 0x1p23);
            const unsigned long long key = (u << posBits) | KEY_VALID | KEY_FREE | (posMask - c);
            best = key > best ? key : best;
        } else {
            u = off + (unsigned long long)P[c - K];
        }
        U[c] = u;
    }
    // The victim of the first row: the rows held only, none protected.
    unsigned long long v = blockMax(best, parts[1]);
    // pre: the first chunk of the incoming row's dots (c <= K+i), loaded a
    // step ahead.
    float pre[PSTEP];
#pragma unroll
    for (int u = 0; u < PSTEP; u++) {
        const int c = tid + u * nt;
        pre[u] = c <= K ? sim[(long long)K * W + c] : 0.f;
    }

#pragma unroll 1
    for (int i = 0; i < B; i++) {
        const int J = (int)(posMask - (v & posMask));
        const int top = K + i;  // the incoming row's position
        const float* del = sim + (long long)J * W;    // d(J, .)
        const float* ins = sim + (long long)top * W;  // d(i, .)
        if (tid == 0) evicted[i] = J;
        best = 0;
        // Rows held (c < top, U != 0) other than J: += d(i,c) - d(J,c),
        // candidates; J: evicted; the incoming row (c == top): the same,
        // a candidate (protected in Protected mode); the batch rows still
        // to come (c > top): -= d(J,c). Loads first, PSTEP at a time, so
        // that those of row J (from DRAM when sim exceeds the L2) overlap.
#pragma unroll 1
        for (int c0 = tid; c0 < N; c0 += PSTEP * nt) {
            float dJ[PSTEP], dI[PSTEP];
#pragma unroll
            for (int u = 0; u < PSTEP; u++) {
                const int c = c0 + u * nt;
                dJ[u] = c < N ? del[c] : 0.f;
                dI[u] = c0 == tid ? pre[u] : c <= top ? ins[c] : 0.f;
            }
#pragma unroll
            for (int u = 0; u < PSTEP; u++) {
                const int c = c0 + u * nt;
                if (c >= N) break;
                unsigned long long x = U[c];
                const int dj = (int)dJ[u];
                if (c > top) {
                    U[c] = x - (unsigned long long)(long long)dj;
                    continue;
                }
                if (x == 0) continue;  // evicted (never the incoming row: its U >= 1)
                if (c == J) {
                    U[c] = 0;
                    continue;
                }
                x += (unsigned long long)(long long)((int)dI[u] - dj);
                U[c] = x;
                const unsigned long long key = (x << posBits) | (c < K ? KEY_VALID | KEY_FREE : batchFlags) | (posMask - c);
                best = key > best ? key : best;
            }
        }
        if (i + 1 == B) break;  // no next row: no victim to find
        // The next incoming row's first chunk, in flight during the
        // reduction.
#pragma unroll
        for (int u = 0; u < PSTEP; u++) {
            const int c = tid + u * nt;
            pre[u] = c <= top + 1 ? ins[W + c] : 0.f;
        }
        v = blockMax(best, parts[i & 1]);
    }

    // kept: the positions held, in order, compacted chunk by chunk with
    // warp ballots, with their scores.
    __shared__ int wcount[32];
    __shared__ int base;
    if (tid == 0) base = 0;
    __syncthreads();
    const int lane = tid & 31, warp = tid >> 5, nwarps = nt >> 5;
    for (int c0 = 0; c0 < N; c0 += nt) {
        const int c = c0 + tid;
        const unsigned long long x = c < N ? U[c] : 0ull;
        const unsigned mask = __ballot_sync(0xffffffffu, x != 0);
        if (lane == 0) wcount[warp] = __popc(mask);
        __syncthreads();
        int o = base;
        for (int k = 0; k < warp; k++) o += wcount[k];
        if (x != 0) {
            o += __popc(mask & ((1u << lane) - 1u));
            kept[o] = c;
            scoreOut[o] = 0.5 * (double)K + (double)(long long)(x - off) * QUNIT;
        }
        __syncthreads();
        if (tid == 0)
            for (int k = 0; k < nwarps; k++) base += wcount[k];
        __syncthreads();
    }
}

// P[i] = sum_{c<K+i} sim[(K+i)*W + c] for i < B (the batch rows' dots with the positions before them), one warp per row
extern "C" __global__ void duel_batch_sums(const float* sim, long long W, int K, int B, long long* P) {
    const int lane = threadIdx.x & 31;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < B; i += warps) {
        const float* row = sim + (K + i) * W;
        long long s = 0;
        for (long long c = lane; c < K + i; c += 32) s += (long long)row[c];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
        if (lane == 0) P[i] = s;
    }
}

// evicted, kept, scoreOut = the B DUEL steps on sim (packed keys) from scores scoreIn and batch sums P, U in (K+B)*8 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(1024, 1) duel_select_shared(
    const float* sim, long long W, int K, int B, int protect, const double* scoreIn, const long long* P,
    int* evicted, int* kept, double* scoreOut) {
    DYNAMIC_SHARED(unsigned long long, dyn);
    selectPacked(sim, W, K, B, protect, scoreIn, P, dyn, evicted, kept, scoreOut);
}

// evicted, kept, scoreOut = the B DUEL steps on sim (packed keys) from scores scoreIn and batch sums P, U (K+B values) in global scratch
extern "C" __global__ void __launch_bounds__(1024, 1) duel_select_global(
    const float* sim, long long W, int K, int B, int protect, const double* scoreIn, const long long* P,
    unsigned long long* U, int* evicted, int* kept, double* scoreOut) {
    selectPacked(sim, W, K, B, protect, scoreIn, P, U, evicted, kept, scoreOut);
}
