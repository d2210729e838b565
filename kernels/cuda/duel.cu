// duel.cu: one DUEL update (the paper's Appendix D, duel/memory's
// duelReference) in one launch of one block.
//
// Positions 0..K-1 are the rows held (mem, K x Z, oldest first), K+b is
// batch row b (batch, B x Z). With q(x, y) = (1 + x.y)/2 and the score of a
// row the sum of its q with every row held, itself included, each batch row
// i in turn
//   (a) picks the victim J: not protected first, then the highest score,
//       then the lowest position;
//   (b) deletes J: score -= q(J, .) over the rows held, J leaves;
//   (c) inserts i: score += q(i, .) over the rows held; score(i) = the sum
//       of its q with the rows held, itself included; i is protected until
//       the batch ends when protect != 0 (duel/memory's Protected).
// Outputs: evicted[i] = J for every batch row, kept[0..K-1] = the positions
// left, in order (rows held, then the batch rows that entered), and the
// final scores of the kept rows (score[0..K-1], to carry to the next
// update with haveScores = 1).
//
// Exactness (duel/memory's "similarity grid"): every component is rounded
// to the integer floor(2048*x + 1/2), so dot products are exact integers below
// 2^24 (int arithmetic here), every q is 1/2 + d*2^-23 and every score, a
// double, is an exact sum of such multiples of 2^-23. Scores therefore do
// not depend on the order of the sums, and the decisions are exactly those
// of the CPU reference, ties included.
//
// Scratch (global memory, owned by the caller): grid (K+B)*Z ints, dots
// B*(K+B) ints, score K+B doubles (its first K entries are the carried
// scores when haveScores != 0), flags K+B bytes. blockDim.x must be a
// multiple of 32 (<= 1024).
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#define SEL 1   // flags: held
#define PROT 2  // flags: protected (entered during this batch, Protected mode)
#define QUNIT 0x1p-23

// A candidate victim: invalid when pos < 0.
struct Victim {
    double score;
    int pos;
    int prot;
};

// before reports whether a is evicted before b (duel/memory's evictsBefore).
__device__ __forceinline__ bool before(const Victim& a, const Victim& b) {
    if (a.pos < 0) return false;
    if (b.pos < 0) return true;
    if (a.prot != b.prot) return b.prot;
    if (a.score != b.score) return a.score > b.score;
    return a.pos < b.pos;
}

__device__ __forceinline__ Victim shflVictim(const Victim& v, int s) {
    Victim o;
    o.score = __shfl_down_sync(0xffffffffu, v.score, s);
    o.pos = __shfl_down_sync(0xffffffffu, v.pos, s);
    o.prot = __shfl_down_sync(0xffffffffu, v.prot, s);
    return o;
}

// blockVictim returns, in every thread, the first victim of the block's
// candidates v (warp shuffles, then shared memory between warps).
__device__ Victim blockVictim(Victim v, Victim* part) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int s = 16; s > 0; s >>= 1) {
        Victim o = shflVictim(v, s);
        if (before(o, v)) v = o;
    }
    __syncthreads();
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = part[lane < nwarps ? lane : 0];
        for (int s = 16; s > 0; s >>= 1) {
            Victim o = shflVictim(v, s);
            if (before(o, v)) v = o;
        }
        if (lane == 0) part[32] = v;
    }
    __syncthreads();
    return part[32];
}

// blockSum returns, in every thread, the sum of the block's x.
__device__ long long blockSum(long long x, long long* part) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int s = 16; s > 0; s >>= 1) x += __shfl_down_sync(0xffffffffu, x, s);
    __syncthreads();
    if (lane == 0) part[warp] = x;
    __syncthreads();
    if (warp == 0) {
        x = lane < nwarps ? part[lane] : 0;
        for (int s = 16; s > 0; s >>= 1) x += __shfl_down_sync(0xffffffffu, x, s);
        if (lane == 0) part[32] = x;
    }
    __syncthreads();
    return part[32];
}

// dot returns the exact grid dot product of rows r and c.
__device__ __forceinline__ int dot(const int* grid, int Z, long long r, long long c) {
    const int* x = grid + r * Z;
    const int* y = grid + c * Z;
    int d = 0;
    for (int z = 0; z < Z; z++) d += x[z] * y[z];
    return d;
}

// evicted[i], kept[], score[] = one DUEL update of mem (K x Z) by batch (B x Z)
extern "C" __global__ void __launch_bounds__(1024) duel_update(
    const float* mem, const float* batch, int K, int B, int Z, int protect, int haveScores,
    int* grid, int* dots, double* score, unsigned char* flags, int* evicted, int* kept) {
    __shared__ Victim vpart[33];
    __shared__ long long spart[33];
    const int tid = threadIdx.x, nt = blockDim.x;
    const long long w = (long long)K + B;

    // Grid rows: floor(2048*x + 1/2), exactly as duel/memory's toGrid.
    for (long long e = tid; e < w * Z; e += nt) {
        float x = e < (long long)K * Z ? mem[e] : batch[e - (long long)K * Z];
        grid[e] = (int)floor((double)x * 2048.0 + 0.5);
    }
    for (long long c = tid; c < w; c += nt) flags[c] = c < K ? SEL : 0;
    __syncthreads();

    // dots[i][c]: batch row i against every row held and every batch row.
    for (long long e = tid; e < B * w; e += nt) dots[e] = dot(grid, Z, K + e / w, e % w);

    // Initial scores: score[j] = sum over k < K of q(j, k), one warp per row.
    if (!haveScores) {
        const int lane = tid & 31;
        for (long long j = tid >> 5; j < K; j += nt >> 5) {
            long long s = 0;
            for (long long k = lane; k < K; k += 32) s += dot(grid, Z, j, k);
            for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
            if (lane == 0) score[j] = 0.5 * (double)K + (double)s * QUNIT;
        }
    }
    __syncthreads();

    // (a) for the first row: the rows held only, none protected yet.
    Victim v;
    v.pos = -1, v.prot = 0, v.score = 0;
    for (int c = tid; c < K; c += nt) {
        Victim o;
        o.score = score[c], o.pos = c, o.prot = 0;
        if (before(o, v)) v = o;
    }
    v = blockVictim(v, vpart);

    for (int i = 0; i < B; i++) {
        const int J = v.pos;
        const int* ins = dots + (long long)i * w;  // d(i, .)
        if (tid == 0) evicted[i] = J;
        // (b) and (c) fused: every row held other than J loses q(J, c) and
        // gains q(i, c); J leaves. t accumulates d(i, c) over the rows held.
        long long t = 0, held = 0;
        for (long long c = tid; c < w; c += nt) {
            if (!(flags[c] & SEL)) continue;
            if (c == J) {
                flags[c] = 0;
                continue;
            }
            int dJ;
            if (c >= K) dJ = dots[(c - K) * w + J];  // c entered earlier: row c-K of dots
            else if (J >= K) dJ = dots[(J - K) * w + c];
            else dJ = dot(grid, Z, J, c);
            double s = score[c] - (0.5 + (double)dJ * QUNIT);
            score[c] = s + (0.5 + (double)ins[c] * QUNIT);
            t += ins[c];
            held++;
        }
        t = blockSum(t, spart);
        held = blockSum(held, spart);
        if (tid == 0) {
            const long long c = K + i;
            score[c] = (0.5 * (double)held + (double)t * QUNIT) + (0.5 + (double)ins[c] * QUNIT);
            flags[c] = SEL | (protect ? PROT : 0);
        }
        __syncthreads();
        // (a) for the next row.
        v.pos = -1, v.prot = 0, v.score = 0;
        if (i + 1 < B) {
            for (long long c = tid; c < K + i + 1; c += nt) {
                unsigned char f = flags[c];
                if (!(f & SEL)) continue;
                Victim o;
                o.score = score[c], o.pos = (int)c, o.prot = (f & PROT) ? 1 : 0;
                if (before(o, v)) v = o;
            }
            v = blockVictim(v, vpart);
        }
    }

    // kept: the positions held, in order, compacted chunk by chunk with
    // warp ballots; their scores move to score[0..K-1] afterwards.
    __shared__ int wcount[32];
    __shared__ int base;
    if (tid == 0) base = 0;
    __syncthreads();
    const int lane = tid & 31, warp = tid >> 5, nwarps = nt >> 5;
    for (long long c0 = 0; c0 < w; c0 += nt) {
        const long long c = c0 + tid;
        const bool on = c < w && (flags[c] & SEL);
        const unsigned mask = __ballot_sync(0xffffffffu, on);
        if (lane == 0) wcount[warp] = __popc(mask);
        __syncthreads();
        int off = base;
        for (int k = 0; k < warp; k++) off += wcount[k];
        if (on) kept[off + __popc(mask & ((1u << lane) - 1u))] = (int)c;
        __syncthreads();
        if (tid == 0)
            for (int k = 0; k < nwarps; k++) base += wcount[k];
        __syncthreads();
    }
    // Scores of the kept rows, in kept order: staged through dots (no
    // longer needed) when it is large enough, else moved in place by one
    // thread (safe: kept is increasing and kept[p] >= p).
    __syncthreads();
    if ((long long)B * w >= 2LL * K) {
        double* tmp = (double*)dots;
        for (int p = tid; p < K; p += nt) tmp[p] = score[kept[p]];
        __syncthreads();
        for (int p = tid; p < K; p += nt) score[p] = tmp[p];
    } else if (tid == 0) {
        for (int p = 0; p < K; p++) score[p] = score[kept[p]];
    }
}
