// rounds.cuh: what the selections in certified rounds share
// (duel_rounds.cu's one block, duel_rounds8.cu's cluster): the round's
// state in shared memory, the candidates' threshold, the gather of the
// dots, the replay in one warp, the statistics. See duel_rounds.cu.
#pragma once

#include "duel.cuh"

#define ROUND_STEPS 64   // steps a round replays at most
#define ROUND_GROUP 6    // steps the check pass applies between two block minima (8 spills on sm_80 at 64 registers)
#define ROUND_PROBES 12  // margin doublings a round at most
#define ROUND_BISECT 4   // margin bisections a round at most

// roundsState is the round's part of the dynamic shared memory (after
// the keys and the slot table), laid out by roundsLayout.
struct roundsState {
    unsigned long long* ckey;  // cap + ROUND_STEPS: the candidates' keys (then the incoming rows')
    int* cslot;                // their slots
    int* cact;                 // 1 while present in the replay
    unsigned long long* vkey;  // ROUND_STEPS: each replayed step's victim key
    int* vslot;                // and slot
    int* dcc;                  // cap x cap: d(cand a, cand b)
    int* dic;                  // ROUND_STEPS x cap: d(incoming s, cand b)
    int* dii;                  // ROUND_STEPS x ROUND_STEPS: d(incoming s, incoming s') (Compete)
};

__device__ __forceinline__ roundsState roundsLayout(unsigned long long* base, int cap) {
    roundsState r;
    const int n = cap + ROUND_STEPS;
    r.ckey = base;
    r.vkey = r.ckey + n;
    int* q = reinterpret_cast<int*>(r.vkey + ROUND_STEPS);
    r.cslot = q;
    r.cact = r.cslot + n;
    r.vslot = r.cact + n;
    r.dcc = r.vslot + ROUND_STEPS;
    r.dic = r.dcc + cap * cap;
    r.dii = r.dic + ROUND_STEPS * cap;
    return r;
}

// roundsDot is d(x, y) for candidate indices x, y of the replay: below
// cap the round's candidates, cap + s the round's incoming row s.
__device__ __forceinline__ int roundsDot(const roundsState& r, int cap, int x, int y) {
    if (x < cap && y < cap) return r.dcc[x * cap + y];
    if (x >= cap && y >= cap) return r.dii[(x - cap) * ROUND_STEPS + (y - cap)];
    if (x >= cap) return r.dic[(x - cap) * cap + y];
    return r.dic[(y - cap) * cap + x];
}

// blockSum returns, in every thread, the sum of v over the block (two
// barriers; cnt is a shared counter).
__device__ __forceinline__ int blockSum(int v, int* cnt) {
    if (threadIdx.x == 0) *cnt = 0;
    __syncthreads();
    if (v) atomicAdd(cnt, v);
    __syncthreads();
    const int s = *cnt;
    __syncthreads();
    return s;
}

// ROUND_SLOTS is the number of candidate indices a lane of the replay
// holds: lane + 32j for j < ROUND_SLOTS covers the 128 candidates and the
// ROUND_STEPS incoming rows.
#define ROUND_SLOTS ((128 + ROUND_STEPS) / 32)

// roundsReplay runs, in warp 0, up to steps replayed steps from step t0 on
// the candidates (mc of them; in Compete mode, incoming rows cap..cap +
// steps - 1 join as they enter) and returns how many it could run (it
// stops where no candidate is left). Each lane keeps the keys of its
// candidate indices (lane + 32j) in registers, with a bit each for
// "a candidate" and "present"; only the dots come from shared memory.
__device__ __forceinline__ int roundsReplay(const roundsState& r, int cap, int mc, int steps, bool compete, int posBits) {
    const int lane = threadIdx.x & 31;
    unsigned long long key[ROUND_SLOTS];
    unsigned has = 0, act = 0;  // bit j: index lane + 32j is a candidate / is present
#pragma unroll
    for (int j = 0; j < ROUND_SLOTS; j++) {
        const int a = lane + 32 * j;
        const bool ok = a < mc || (compete && a >= cap && a < cap + steps);
        key[j] = ok ? r.ckey[a] : 0;
        has |= (unsigned)ok << j;
        act |= (unsigned)(ok && r.cact[a]) << j;
    }
    for (int s = 0; s < steps; s++) {
        unsigned long long best = 0;
        int at = -1;
#pragma unroll
        for (int j = 0; j < ROUND_SLOTS; j++)
            if ((act >> j & 1) && key[j] > best) best = key[j], at = lane + 32 * j;
        const unsigned long long v = warpMax(best);
        if (v == 0) return s;  // no candidate left: the replay cannot go on
        const unsigned own = __ballot_sync(0xffffffffu, best == v && at >= 0);
        const int J = __shfl_sync(0xffffffffu, at, __ffs(own) - 1);
        if (lane == 0) r.vkey[s] = v, r.vslot[s] = r.cslot[J];
        const int in = cap + s;  // the incoming row's candidate index (Compete)
#pragma unroll
        for (int j = 0; j < ROUND_SLOTS; j++) {
            const int a = lane + 32 * j;
            if (!(has >> j & 1)) continue;
            if (a == J) {
                key[j] = 0, act &= ~(1u << j);
            } else if (a > in) {  // still to enter: -= d(J, a)
                key[j] -= (unsigned long long)(long long)roundsDot(r, cap, J, a) << posBits;
            } else if (a == in || (act >> j & 1)) {  // present, or entering: += d(i, a) - d(J, a)
                const long long dd = (long long)(compete ? roundsDot(r, cap, in, a) : r.dic[s * cap + a]) - roundsDot(r, cap, J, a);
                key[j] += (unsigned long long)dd << posBits;
                act |= 1u << j;
            }
        }
    }
    return steps;
}

// ROUND_GATHER is the loads a thread of the gather has in flight at once.
#define ROUND_GATHER 8

// gatherDots stores sim[at(e)] with put(e, v) for e < n, the
// block's threads taking e = tid, tid + nt, ...: ROUND_GATHER loads
// issued before their stores, so that a thread waits for the memory once
// a batch rather than once a dot (the dots are scattered over sim, most
// from DRAM).
template <class At, class Put>
__device__ __forceinline__ void gatherDots(const int* sim, int n, At at, Put put) {
    const int tid = threadIdx.x, nt = blockDim.x;
    for (int e0 = tid; e0 < n; e0 += ROUND_GATHER * nt) {
        int v[ROUND_GATHER];
#pragma unroll
        for (int u = 0; u < ROUND_GATHER; u++) {
            const int e = e0 + u * nt;
            v[u] = e < n ? sim[at(e)] : 0;
        }
#pragma unroll
        for (int u = 0; u < ROUND_GATHER; u++) {
            const int e = e0 + u * nt;
            if (e < n) put(e, v[u]);
        }
    }
}

// roundsGather gathers a round's dots into r (every thread of the block;
// a barrier after it publishes them): among the mc candidates (dcc), of
// the steps incoming rows (slots top0 ..) with them (dic) and, in Compete
// mode, among the incoming rows (dii).
__device__ __forceinline__ void roundsGather(const roundsState& r, const int* sim, long long W, int cap, int mc, int steps, int top0,
                                             bool compete) {
    gatherDots(
        sim, mc * mc, [&](int e) { return (long long)r.cslot[e / mc] * W + r.cslot[e % mc]; },
        [&](int e, int v) { r.dcc[e / mc * cap + e % mc] = v; });
    gatherDots(
        sim, steps * mc, [&](int e) { return (long long)(top0 + e / mc) * W + r.cslot[e % mc]; },
        [&](int e, int v) { r.dic[e / mc * cap + e % mc] = v; });
    if (compete)
        gatherDots(
            sim, steps * steps, [&](int e) { return (long long)(top0 + e / steps) * W + top0 + e % steps; },
            [&](int e, int v) { r.dii[e / steps * ROUND_STEPS + e % steps] = v; });
}

// roundsRun is the replay of a round by warp 0 (roundsReplay), its length
// in *nrep and returned to every thread of the block (a barrier).
__device__ __forceinline__ int roundsRun(const roundsState& r, int cap, int mc, int steps, bool compete, int posBits, int* nrep) {
    if (threadIdx.x < 32) {
        const int n = roundsReplay(r, cap, mc, steps, compete, posBits);
        if (threadIdx.x == 0) *nrep = n;
    }
    __syncthreads();
    return *nrep;
}

// Round statistics (duel_select_rounds' stats, thread 0's clock64 between
// the barriers that end each phase, summed over the update's rounds).
#define RSTAT_ROUNDS 0      // rounds taken
#define RSTAT_REPLAYED 1    // steps replayed (accepted or not)
#define RSTAT_PROBES 2      // candidate counts tried (margin probes)
#define RSTAT_CANDIDATES 3  // cycles: the largest key, the margin, the candidates' list
#define RSTAT_GATHER 4      // cycles: the dots into shared memory
#define RSTAT_REPLAY 5      // cycles: warp 0's replay
#define RSTAT_CHECK 6       // cycles: the check pass and the undo
#define RSTAT_TOTAL 7       // cycles: the whole kernel, packing and compaction included
#define RSTAT_N 8

// roundsLoad loads the dots of slot c that steps s0 .. s1 - 1 (at most
// ROUND_GROUP) of a round from step t0 need, all issued before any is
// used: dJ[u] = d(victim of step s0 + u, c) and dI[u] = d(its incoming
// row top0 + s0 + u, c) where c is present then (c <= that row), 0 where
// not needed.
__device__ __forceinline__ void roundsLoad(const int* sim, long long W, const int* vslot, int top0, int c, int s0, int s1,
                                           int (&dJ)[ROUND_GROUP], int (&dI)[ROUND_GROUP]) {
#pragma unroll
    for (int u = 0; u < ROUND_GROUP; u++) {
        const int s = s0 + u;
        dJ[u] = s < s1 ? sim[(long long)vslot[s] * W + c] : 0;
        dI[u] = s < s1 && c <= top0 + s ? sim[(long long)(top0 + s) * W + c] : 0;
    }
}

// roundsStep is slot c's key x after a step whose incoming row is the
// slot top and whose victim is the slot vs, selectPacked's arithmetic on
// the dots dJ = d(vs, c) and dI = d(top, c): a row still to enter (c >
// top) loses dJ; the victim's key becomes 0 (evicted, as an evicted
// slot's stays); a present slot's gains dI - dJ.
__device__ __forceinline__ unsigned long long roundsStep(unsigned long long x, int c, int top, int vs, int dJ, int dI, int posBits) {
    if (c > top) return x - ((unsigned long long)(long long)dJ << posBits);
    if (x == 0 || c == vs) return 0;
    return x + ((unsigned long long)(long long)(dI - dJ) << posBits);
}

// roundsCheck applies steps s0 .. s1 - 1 (at most ROUND_GROUP) of the
// round's record r (from step t0, slot top0 = K + t0) to slot c's key x
// and returns it, lowering first to s + 1 where step s + 1 (of rep)
// fails at c: c, present, other than the step's replayed victim, holds a
// larger key than that victim's.
__device__ __forceinline__ unsigned long long roundsCheck(const roundsState& r, const int* sim, long long W, int top0, int c, int s0,
                                                          int s1, int rep, int posBits, unsigned long long x, int& first) {
    int dJ[ROUND_GROUP], dI[ROUND_GROUP];
    roundsLoad(sim, W, r.vslot, top0, c, s0, s1, dJ, dI);
#pragma unroll
    for (int u = 0; u < ROUND_GROUP; u++) {
        const int s = s0 + u;
        if (s >= s1) break;
        const int top = top0 + s;
        x = roundsStep(x, c, top, r.vslot[s], dJ[u], dI[u], posBits);
        if (s + 1 < rep && c <= top && x > r.vkey[s + 1] && c != r.vslot[s + 1] && s + 1 < first) first = s + 1;
    }
    return x;
}

// roundsThreshold returns the candidates' threshold of a round among the
// slots lo + tid, lo + tid + nt, ... below hi (key(c): their keys, 0 when
// absent): the keys at least the largest minus the margin, at most cap of
// them (the margin halves while more pass, doubles, up to ROUND_PROBES
// times, while fewer than half of cap do, then is bisected up to
// ROUND_BISECT times toward cap; it carries over to the next round); 0
// when no slot has a key. Thread 0 counts the probes in *probes. Every
// thread of the block calls it (blockMax, blockSum: barriers).
template <class Key>
__device__ __forceinline__ unsigned long long roundsThreshold(int lo, int hi, Key key, int cap, unsigned long long& margin,
                                                              unsigned long long* parts, int* cnt, long long* probes) {
    const int tid = threadIdx.x, nt = blockDim.x;
    unsigned long long best = 0;
    for (int c = lo + tid; c < hi; c += nt) best = key(c) > best ? key(c) : best;
    const unsigned long long big = blockMax(best, parts);
    if (big == 0) return 0;
    auto count = [&](unsigned long long m) {
        const unsigned long long thr = big - m;
        int k = 0;
        for (int c = lo + tid; c < hi; c += nt) k += key(c) >= thr;
        if (tid == 0) ++*probes;
        return blockSum(k, cnt);
    };
    int have = count(margin);
    for (int probe = 0; have > cap && probe < 64; probe++) margin >>= 1, have = count(margin);
    unsigned long long over = 0;  // a margin known to take more than cap (0: none yet)
    for (int probe = 0; probe < ROUND_PROBES && have < cap / 2 && margin < (1ull << 61); probe++) {
        const int more = count(margin << 1);
        if (more > cap) {
            over = margin << 1;
            break;
        }
        margin <<= 1, have = more;
    }
    // Between a margin that fits and one that does not, bisect a few
    // times: the closer to cap, the longer the rounds.
    for (int probe = 0; probe < ROUND_BISECT && over > margin + 1 && have < cap - cap / 8; probe++) {
        const unsigned long long mid = margin + (over - margin) / 2;
        const int n = count(mid);
        if (n > cap)
            over = mid;
        else
            margin = mid, have = n;
    }
    return big - margin;
}

