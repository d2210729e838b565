// duel_cluster.cu: the DUEL selection (duel.cu's B sequential steps) on a
// thread-block cluster (sm_90), without reading the similarity rows of the
// victims: duel_select_cluster. Its decisions, evicted positions, kept
// tables and scores are bit for bit those of duel_select_shared (the same
// packed keys, the same final compaction: duel.cuh), hence of
// duel/memory's CPU reference.
//
// gen: min-arch 90
//
// Why. duel_select_shared's step reads row J of sim (the victim's slot):
// the carried K x K block (75 MB at K 4096) is far beyond the L2, so every
// step waits on DRAM. Here the dots of the victim with the slots, d(J, c),
// are recomputed from the grid rows instead, which the cluster keeps in
// shared memory: CLUSTER blocks, block q owning the slots [q*per,
// (q+1)*per) (per = ceil((K+B)/CLUSTER)) with their grid rows as int16
// (the grid's integers have |v| <= 2048) and their packed keys.
//
// A step, in every block: the victim's grid row, split into bytes h = v >> 6
// (in -32..32) and l = v & 63 (v = 64h + l), is already in the block's
// shared memory (cand, pushed before the cluster barrier, below); each
// thread takes a slot c of the block and forms d(J, c) = 64 sum c.h +
// sum c.l with __dp2a_lo/__dp2a_hi (int16 x int8 pairs, int32
// accumulation: exact, every partial sum is far below 2^31), reads d(i, c)
// from sim's row K+i (the batch's rows, written just before and read a
// step ahead, as duel.cu), and updates the slot's key exactly as
// selectPacked does. Then the maximum: a warp maximum, the warps'
// partials, one block barrier; every block pushes its maximum, the slot
// holding it and that slot's split grid row to every block of the cluster
// (st.shared::cluster); one cluster barrier; every thread reduces the
// CLUSTER partials it now holds locally, and the winner's row is the next
// victim's. Two sets of partials and rows alternate (a block pushes those
// of step s+2 only after the cluster barrier of step s+1, which no thread
// passes before it is done with those of step s). At the end every block
// writes its keys to global scratch U, a cluster barrier, and block 0 runs
// compactPacked on them.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#include "cluster.cuh"
#include "duel.cuh"

// CLUSTER is the cluster's size (blocks), compiled in: 8, the portable
// maximum. The launch is exactly one cluster: a grid of CLUSTER blocks.
#define CLUSTER 8


// splitWords returns the bytes h = v >> 6 (low word) and l = v & 63 (high
// word) of the four int16 grid values in the words w0 (values 0, 1) and w1
// (values 2, 3), value k in byte k of each.
__device__ __forceinline__ unsigned long long splitWords(unsigned w0, unsigned w1) {
    unsigned h = 0, l = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const unsigned w = k < 2 ? w0 : w1;
        const int v = (int)(short)(w >> (16 * (k & 1)));
        h |= ((unsigned)(v >> 6) & 0xffu) << (8 * k);
        l |= ((unsigned)v & 63u) << (8 * k);
    }
    return (unsigned long long)l << 32 | h;
}

// clusterMax returns, in every thread of the cluster, the maximum over the
// cluster of the threads' best keys (bs: the slot of best), and sets *J to
// its slot and *rowJ to that slot's split grid row (pushed into this
// block's cand[par]). Every thread of every block calls it.
__device__ __forceinline__ unsigned long long clusterMax(unsigned long long best, int bs, int par, unsigned rank, int lo,
                                                         int zw, int rs, unsigned long long* part, int* pslot,
                                                         unsigned long long* cpart, int* cslot, unsigned* cand,
                                                         const unsigned* rows, int* J, const unsigned** rowJ) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = blockDim.x >> 5;
    const unsigned long long m = warpMax(best);
    if (lane == 0) part[32 * par + warp] = m;
    if (m != 0 && best == m) pslot[32 * par + warp] = bs;  // keys are unique: one lane
    __syncthreads();
    const unsigned long long pk = lane < nw ? part[32 * par + lane] : 0ull;
    const unsigned long long bm = warpMax(pk);
    const unsigned who = __ballot_sync(0xffffffffu, bm != 0 && pk == bm);
    const int bslot = bm != 0 ? pslot[32 * par + __ffs(who) - 1] : lo;
    // The pushes: item e < CLUSTER is the key and slot for block e, the
    // others four values of the row for block e % CLUSTER.
    const unsigned* src = rows + (bslot - lo) * rs;
    const int items = bm != 0 ? CLUSTER * (1 + zw / 2) : CLUSTER;
    for (int e = tid; e < items; e += blockDim.x) {
        const unsigned q = e % CLUSTER;
        const int g = e / CLUSTER - 1;
        if (g < 0) {
            storeCluster64(&cpart[CLUSTER * par + rank], q, bm);
            storeCluster64((unsigned long long*)&cslot[2 * (CLUSTER * par + rank)], q, (unsigned long long)(unsigned)bslot);
        } else {
            storeCluster64((unsigned long long*)&cand[(CLUSTER * par + rank) * zw + 2 * g], q, splitWords(src[2 * g], src[2 * g + 1]));
        }
    }
    clusterSync();
    unsigned long long v = 0;
    int w = 0;
#pragma unroll
    for (int q = 0; q < CLUSTER; q++) {
        const unsigned long long k = cpart[CLUSTER * par + q];
        if (k > v) v = k, w = q;
    }
    *J = cslot[2 * (CLUSTER * par + w)];
    *rowJ = cand + (CLUSTER * par + w) * zw;
    return v;
}

// clusterLayout gives the offsets, in 8-byte words of the block's dynamic
// shared memory, of duel_select_cluster's arrays (per slots of Z values a
// block; cudaduel's clusterShared is the total, in bytes):
//   key    per keys (rounded up to an even count)
//   cpart  2 x CLUSTER block maxima (pushed by every block)
//   part   2 x 32 warp maxima
//   cslot  2 x CLUSTER slots of the block maxima (8 bytes each)
//   pslot  2 x 32 slots of the warp maxima (4 bytes each)
//   cand   2 x CLUSTER split grid rows (zw words each: zw = ceil(Z/8)*4)
//   rows   per grid rows as int16 pairs, rs = zw + 4 words apart (the
//          4 words of padding spread a warp's rows over the banks)

// evicted, kept, scoreOut = the B DUEL steps (packed keys, slots) on a cluster of 8 blocks: d(J, .) from the int16 grid rows in shared memory, d(i, .) from sim; U (K+B) global scratch
extern "C" __global__ void __launch_bounds__(1024, 1) __cluster_dims__(CLUSTER, 1, 1) duel_select_cluster(
    const int* sim, long long W, const float* grid, int Z, int K, int B, int protect, const double* scoreIn,
    const long long* P, unsigned long long* U, int* evicted, int* kept, double* scoreOut) {
    DYNAMIC_SHARED(unsigned long long, dyn);
    const int tid = threadIdx.x, nt = blockDim.x, N = K + B;
    const unsigned rank = clusterRank();
    const int per = (N + CLUSTER - 1) / CLUSTER;
    const int lo = (int)rank * per, hi = N < lo + per ? N : lo + per;  // this block's slots [lo, hi)
    const int zw = (Z + 7) / 8 * 4, rs = zw + 4;
    unsigned long long* const key = dyn;
    unsigned long long* const cpart = key + (per + 1) / 2 * 2;
    unsigned long long* const part = cpart + 2 * CLUSTER;
    int* const cslot = (int*)(part + 64);
    int* const pslot = cslot + 4 * CLUSTER;
    unsigned* const cand = (unsigned*)(pslot + 64);
    unsigned* const rows = cand + 2 * CLUSTER * zw;
    const int* const rankTab = kept;
    const PackedGeom geom = packedGeom(K, B);
    const int posBits = geom.posBits;
    const unsigned long long posMask = geom.posMask, off = geom.off;

    // The block's grid rows (exact integers as floats) as int16 pairs,
    // zero-padded to zw words; then the keys, as selectPacked's.
    for (int e = tid; e < (hi - lo) * zw; e += nt) {
        const int s = e / zw, w = e - s * zw, z = 2 * w;
        const float* g = grid + (long long)(lo + s) * Z;
        const int v0 = z < Z ? (int)g[z] : 0, v1 = z + 1 < Z ? (int)g[z + 1] : 0;
        rows[s * rs + w] = ((unsigned)v0 & 0xffffu) | (unsigned)v1 << 16;
    }
    unsigned long long best = 0;
    int bs = lo;
    for (int c = lo + tid; c < hi; c += nt) {
        const unsigned long long x = packKey(c, K, protect, geom, scoreIn, P, rankTab);
        if (c < K && x > best) best = x, bs = c;
        key[c - lo] = x;
    }
    // Every block runs before any pushes into its shared memory; the
    // barrier in clusterMax publishes the rows and keys.
    clusterSync();
    int J;
    const unsigned* rowJ;
    // The victim of the first row: the rows held only, none protected.
    unsigned long long v = clusterMax(best, bs, 1, rank, lo, zw, rs, part, pslot, cpart, cslot, cand, rows, &J, &rowJ);
    // pre: the incoming row's dot with the thread's first slot (its only
    // one when the block has a thread per slot), loaded a step ahead.
    int pre = lo + tid < hi && lo + tid <= K ? sim[(long long)K * W + lo + tid] : 0;

#pragma unroll 1
    for (int i = 0; i < B; i++) {
        const int r = (int)(posMask - (v & posMask));  // the victim's position
        const int top = K + i;                          // the incoming row's slot
        const int* ins = sim + (long long)top * W;      // d(i, .)
        if (rank == 0 && tid == 0) evicted[i] = r;
        best = 0;
        bs = lo;
        const uint4* const rj = (const uint4*)rowJ;
        // Slots held (c < top, key != 0) other than J: += d(i,c) - d(J,c),
        // candidates; J: evicted; the incoming row (c == top): the same, a
        // candidate (protected in Protected mode); the batch rows still to
        // come (c > top): -= d(J,c).
#pragma unroll 1
        for (int c = lo + tid; c < hi; c += nt) {
            unsigned long long x = key[c - lo];
            if (c <= top && x == 0) continue;  // evicted (never the incoming row: its key has bit 63): no dot
            if (c == J) {                      // the victim: no dot either
                key[c - lo] = 0;
                continue;
            }
            const uint4* const rc = (const uint4*)(rows + (c - lo) * rs);
            int ah = 0, al = 0;
#pragma unroll 4
            for (int q = 0; q < zw / 4; q++) {
                const uint4 a = rc[q], j = rj[q];
                ah = __dp2a_lo((int)a.x, (int)j.x, ah);
                ah = __dp2a_hi((int)a.y, (int)j.x, ah);
                al = __dp2a_lo((int)a.x, (int)j.y, al);
                al = __dp2a_hi((int)a.y, (int)j.y, al);
                ah = __dp2a_lo((int)a.z, (int)j.z, ah);
                ah = __dp2a_hi((int)a.w, (int)j.z, ah);
                al = __dp2a_lo((int)a.z, (int)j.w, al);
                al = __dp2a_hi((int)a.w, (int)j.w, al);
            }
            const int dj = 64 * ah + al;  // d(J, c), exact
            if (c > top) {
                key[c - lo] = x - ((unsigned long long)(long long)dj << posBits);
                continue;
            }
            const int di = c == lo + tid ? pre : ins[c];
            x += (unsigned long long)(long long)(di - dj) << posBits;
            key[c - lo] = x;
            if (x > best) best = x, bs = c;
        }
        if (i + 1 == B) break;  // no next row: no victim to find
        // The next incoming row's dots, in flight during the reduction.
        pre = lo + tid < hi && lo + tid <= top + 1 ? ins[W + lo + tid] : 0;
        v = clusterMax(best, bs, i & 1, rank, lo, zw, rs, part, pslot, cpart, cslot, cand, rows, &J, &rowJ);
    }

    // The final keys to U; block 0 compacts them once every block has
    // written its own (the cluster barrier orders the writes before its
    // reads; no block leaves while another may still push to it).
    for (int c = lo + tid; c < hi; c += nt) U[c] = key[c - lo];
    __threadfence();
    clusterSync();
    if (rank != 0) return;
    compactPacked(U, K, B, posBits, off, kept, scoreOut);
}
