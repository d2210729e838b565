// duel_rounds8.cu: duel_rounds.cu's certified rounds on a thread-block
// cluster of 8 blocks (sm_90), so that the passes over every slot run on
// 8 SMs instead of one: the same keys, decisions, slots and scores as
// duel_select_shared (and duel_select_rounds), bit for bit.
//
// Block q of the cluster owns the slots [q*per, (q+1)*per), per =
// ceil((K+B)/8), and keeps their keys in its shared memory. A round, at
// step t0:
//
//  1. Candidates, per block: its present slots within a margin of its
//     largest key, at most capq of them (roundsThreshold, each block its
//     own margin), pushed with their keys into block 0's list (and their
//     count), and, in Compete mode, the keys of the round's incoming rows
//     by the blocks that own them; cluster barrier. The largest key of
//     all is its block's largest, a candidate: step t0 always stands.
//  2. Block 0 compacts the list, gathers the dots among the candidates
//     and with the incoming rows, and replays up to ROUND_STEPS steps in
//     warp 0 (duel_rounds.cu's gatherDots and roundsReplay), then pushes
//     the record (each step's victim slot and key, and their number) into
//     every block; cluster barrier.
//  3. Check: every block applies the steps to a copy of each of its
//     slots' keys, as selectPacked does, and finds the first step s + 1 at
//     which a present slot other than the replayed victim holds a larger
//     key than the replayed victim's; its minimum is pushed into every
//     block; cluster barrier.
//  4. Every block applies the steps before the cluster's first failure
//     (all of them when none failed) to its keys; block 0 writes their
//     victims' positions to evicted.
//
// Three cluster barriers a round, each block's check reading its slots'
// dots with the replayed victims and incoming rows: 2 x steps rows of sim
// split over 8 SMs (duel_rounds.cu reads them all in one). At the end
// every block writes its keys to U (global scratch), a cluster barrier,
// and block 0 runs duel_select_shared's compaction (compactPacked).
//
// Dynamic shared memory (cudaduel's rounds8Shared), every block the same
// layout (rounds8Scratch): its keys (8 per bytes), the round's state for
// cap = 8 capq candidates (rounds.cuh's roundsLayout, used in block 0),
// then 2 x 8 + 4 ints: the blocks' candidate counts and check minima and
// the record's length (all three pushed), a counter, the block's check
// minimum and the replay's length; 32 warp maxima and the statistics
// (RSTAT_N + 2 int64s). Nothing is in static shared memory: the CPU
// emulator runs a cluster's blocks together, and a static __shared__
// there would be one variable for all of them.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md): sm_90 PTX only.
// gen: min-arch 90

#include "cluster.cuh"
#include "rounds.cuh"

#define CLUSTER 8  // the cluster's blocks (compiled in: the portable maximum)

// rounds8Scratch is the part of a block's dynamic shared memory after the
// round's state (see the top of the file).
struct rounds8Scratch {
    int* counts;               // CLUSTER: the blocks' candidates this round (pushed into block 0)
    int* firsts;               // CLUSTER: the blocks' first failing steps (pushed into every block)
    int* rep;                  // the record's length (pushed into every block)
    int* cnt;                  // a counter (roundsThreshold's, the candidates')
    int* firstMin;             // the block's first failing step
    int* nrep;                 // the replay's length (block 0)
    unsigned long long* part;  // 32 warp maxima (blockMax)
    long long* st;             // RSTAT_N statistics, then the clock at the start and at the last lap (block 0)
};

__device__ __forceinline__ rounds8Scratch rounds8Layout(const roundsState& r) {
    rounds8Scratch x;
    x.counts = r.dii + ROUND_STEPS * ROUND_STEPS;
    x.firsts = x.counts + CLUSTER;
    x.rep = x.firsts + CLUSTER;
    x.cnt = x.rep + 1;
    x.firstMin = x.cnt + 1;
    x.nrep = x.firstMin + 1;
    x.part = reinterpret_cast<unsigned long long*>(x.nrep + 1);  // 2 x CLUSTER + 4 ints: 8-byte aligned
    x.st = reinterpret_cast<long long*>(x.part + 32);
    return x;
}

// evicted, kept, scoreOut = the B DUEL steps in certified rounds on a cluster of 8 blocks (at most capq candidates a block, flags: SELECT_PROTECT), duel_select_shared's results; U (K+B) global scratch; stats as duel_select_rounds' (block 0's clock)
extern "C" __global__ void __launch_bounds__(1024, 1) __cluster_dims__(CLUSTER, 1, 1) duel_select_rounds8(
    const int* sim, long long W, int K, int B, int flags, int capq, const double* scoreIn, const long long* P,
    unsigned long long* U, int* evicted, int* kept, double* scoreOut, long long* stats) {
    DYNAMIC_SHARED(unsigned long long, dyn);
    const int tid = threadIdx.x, nt = blockDim.x, N = K + B;
    const unsigned rank = clusterRank();
    const int per = (N + CLUSTER - 1) / CLUSTER;
    const int lo = (int)rank * per, hi = N < lo + per ? N : lo + per;  // this block's slots [lo, hi)
    const int cap = CLUSTER * capq;
    const bool compete = !(flags & SELECT_PROTECT);
    unsigned long long* const key = dyn;  // key[c - lo]
    const roundsState r = roundsLayout(key + per, cap);
    const rounds8Scratch x8 = rounds8Layout(r);
    int* const counts = x8.counts;
    int* const firsts = x8.firsts;
    int* const repAt = x8.rep;
    int& cnt = *x8.cnt;
    int& firstMin = *x8.firstMin;
    int& nrep = *x8.nrep;
    unsigned long long* const parts = x8.part;
    long long* const st = x8.st;
    const PackedGeom geom = packedGeom(K, B);
    const int posBits = geom.posBits;
    const unsigned long long posMask = geom.posMask, off = geom.off;
    const bool lead = rank == 0 && tid == 0;
    if (lead) {
        for (int i = 0; i < RSTAT_N; i++) st[i] = 0;
        st[RSTAT_N] = st[RSTAT_N + 1] = clock64();
    }
    // lap adds block 0's cycles since the last lap to statistic i.
    auto lap = [&](int i) {
        if (lead) {
            const long long now = clock64();
            st[i] += now - st[RSTAT_N + 1];
            st[RSTAT_N + 1] = now;
        }
    };
    // The keys of the block's slots, as packKeys writes them.
    for (int c = lo + tid; c < hi; c += nt) key[c - lo] = packKey(c, K, !compete, geom, scoreIn, P, kept);
    unsigned long long margin = 1ull << (posBits + 20);
    __syncthreads();
    // Every block has started before any pushes into its shared memory.
    clusterSync();
    lap(RSTAT_TOTAL);  // the packing: counted in the total only

    int nround = 0;
    for (int t0 = 0; t0 < B; nround++) {
        const int top0 = K + t0;  // slots below it are present (unless evicted)
        const int steps = B - t0 < ROUND_STEPS ? B - t0 : ROUND_STEPS;
        // 1. The block's candidates, into block 0's list.
        const int phi = hi < top0 ? hi : top0;
        const unsigned long long thr = roundsThreshold(
            lo, phi, [&](int c) { return key[c - lo]; }, capq, margin, parts, &cnt, &st[RSTAT_PROBES]);
        if (tid == 0) cnt = 0;
        __syncthreads();
        for (int c = lo + tid; c < phi; c += nt) {
            const unsigned long long x = key[c - lo];
            if (thr != 0 && x >= thr) {
                const int e = (int)rank * capq + atomicAdd(&cnt, 1);
                storeCluster64(&r.ckey[e], 0, x);
                storeCluster32(&r.cslot[e], 0, c);
            }
        }
        if (compete)
            for (int s = tid; s < steps; s += nt)
                if (top0 + s >= lo && top0 + s < hi) {
                    storeCluster64(&r.ckey[cap + s], 0, key[top0 + s - lo]);
                    storeCluster32(&r.cslot[cap + s], 0, top0 + s);
                }
        __syncthreads();
        if (tid == 0) storeCluster32(&counts[rank], 0, cnt);
        clusterSync();
        // 2. Block 0: the list compacted, the dots, the replay, the record
        //    pushed into every block.
        if (rank == 0) {
            lap(RSTAT_CANDIDATES);
            int mc = 0, at = 0, q = tid / (capq > 0 ? capq : 1);
            for (int b = 0; b < CLUSTER; b++) {
                if (b < q) at += counts[b];
                mc += counts[b];
            }
            const bool on = tid < cap && tid - q * capq < counts[q < CLUSTER ? q : 0];
            unsigned long long ck = 0;
            int cs = 0;
            if (on) ck = r.ckey[tid], cs = r.cslot[tid];
            __syncthreads();
            if (on) r.ckey[at + tid - q * capq] = ck, r.cslot[at + tid - q * capq] = cs, r.cact[at + tid - q * capq] = 1;
            if (compete)
                for (int s = tid; s < steps; s += nt) r.cact[cap + s] = 0;
            __syncthreads();
            roundsGather(r, sim, W, cap, mc, steps, top0, compete);
            __syncthreads();
            lap(RSTAT_GATHER);
            const int rep = roundsRun(r, cap, mc, steps, compete, posBits, &nrep);
            lap(RSTAT_REPLAY);
            if (tid == 0) st[RSTAT_REPLAYED] += rep;
            for (int e = tid; e < (CLUSTER - 1) * rep; e += nt) {
                const unsigned b = 1 + e / rep;
                const int s = e % rep;
                storeCluster64(&r.vkey[s], b, r.vkey[s]);
                storeCluster32(&r.vslot[s], b, r.vslot[s]);
            }
            if (tid < CLUSTER) storeCluster32(repAt, tid, rep);
        }
        clusterSync();
        // 3. The check: the first failing step among the block's slots.
        const int rep = *repAt;
        if (tid == 0) firstMin = rep;
        __syncthreads();
        int first = rep;  // the thread's first failing step so far: later ones need no look
        for (int c = lo + tid; c < hi; c += nt) {
            unsigned long long x = key[c - lo];
            for (int s0 = 0; s0 + 1 < first; s0 += ROUND_GROUP)
                x = roundsCheck(r, sim, W, top0, c, s0, s0 + ROUND_GROUP < rep ? s0 + ROUND_GROUP : rep, rep, posBits, x, first);
        }
        if (first < rep) atomicMin(&firstMin, first);
        __syncthreads();
        if (tid < CLUSTER) storeCluster32(&firsts[rank], tid, firstMin);
        clusterSync();
        // 4. The steps before the cluster's first failure.
        int done = rep;
#pragma unroll
        for (int b = 0; b < CLUSTER; b++) done = firsts[b] < done ? firsts[b] : done;
        for (int c = lo + tid; c < hi; c += nt) {
            unsigned long long x = key[c - lo];
            for (int s0 = 0; s0 < done; s0 += ROUND_GROUP) {
                int dJ[ROUND_GROUP], dI[ROUND_GROUP];
                roundsLoad(sim, W, r.vslot, top0, c, s0, done, dJ, dI);
#pragma unroll
                for (int u = 0; u < ROUND_GROUP && s0 + u < done; u++)
                    x = roundsStep(x, c, top0 + s0 + u, r.vslot[s0 + u], dJ[u], dI[u], posBits);
            }
            key[c - lo] = x;
        }
        if (rank == 0)
            for (int s = tid; s < done; s += nt) evicted[t0 + s] = (int)(posMask - (r.vkey[s] & posMask));
        t0 += done;
        __syncthreads();  // the keys written before the next round's threshold reads them
        lap(RSTAT_CHECK);
    }

    // The final keys to U; block 0 compacts them once every block has
    // written its own (the cluster barrier orders the writes before its
    // reads; no block leaves while another may still push to it).
    for (int c = lo + tid; c < hi; c += nt) U[c] = key[c - lo];
    __threadfence();
    clusterSync();
    if (rank != 0) return;
    compactPacked(U, K, B, posBits, off, kept, scoreOut);
    if (tid == 0) {
        st[RSTAT_ROUNDS] = nround;
        st[RSTAT_TOTAL] = clock64() - st[RSTAT_N];
        for (int i = 0; i < RSTAT_N; i++) stats[i] = st[i];
    }
}
