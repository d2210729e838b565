// duel_rounds.cu: the B sequential DUEL steps of an update (duel.cu's
// packed selection: the same keys, decisions, slots and scores) in rounds
// of up to ROUND_STEPS steps, each round reading the rows of sim it needs
// all at once instead of one victim's row a step.
//
// Most steps are decided among a few rows: the victim is the highest key,
// and a step moves every key by d(i, c) - d(J, c). A round, at step t0:
//
//  1. Candidates: the present slots (held, or inserted before step t0)
//     whose key is at least the largest minus a margin, at most cap of
//     them (the margin halves while more pass, doubles, up to a few times,
//     while fewer than half of cap do, then is bisected up to 4 times
//     toward cap; it carries over to the next round). The largest key is a candidate, every other slot is below
//     every candidate.
//  2. Gather: the dots among the candidates (cap x cap), of the round's
//     incoming rows with them (ROUND_STEPS x cap) and, in Compete mode,
//     among the incoming rows (ROUND_STEPS^2), as integers in shared memory,
//     and the incoming rows' keys (their batch sums less the evictions so
//     far).
//  3. Replay: warp 0 runs the round's steps on the candidates alone (in
//     Compete mode the incoming rows join them as they enter), their keys
//     in registers (six a lane), with selectPacked's key arithmetic:
//     victim = the largest active key, the others += (d(i, c) - d(J, c))
//     << P, the rows still to enter -= d(J, c) << P. It records each
//     step's victim slot and key.
//  4. Check: every thread passes over its slots, ROUND_GROUP steps at a
//     time (their victims' and incoming rows' dots loaded together),
//     applying the steps to the keys in shared memory exactly as
//     selectPacked does, and finds the first step s + 1 at which a
//     present slot other than the replayed victim holds a larger key than
//     the replayed victim's: that step's true victim is not a candidate.
//     A block minimum after each group; at a failure the group's steps
//     from it on are undone (the victim's key restored from the record)
//     and the round ends there. Step t0 itself always stands (its victim
//     is the largest key, a candidate).
//
// The keys after an accepted step are those selectPacked computes (the
// same integer updates), so evicted, the slot state and the scores are
// bit for bit duel_select_shared's (the CPU emulator's tests compare
// them). On clustered streams (duel/memory's BenchmarkCertifiedRounds)
// an update of 256 steps takes about 5 rounds of up to 64 steps with cap
// 128; each round reads about 2 x (steps + 6) rows of sim, independent
// loads, where selectPacked waits for one row of DRAM a step.
//
// Dynamic shared memory (roundsShared in cudaduel): the keys U (8(K+B)
// bytes), the slot of each position (4K), then the round's state: the
// candidates' keys and slots and active flags (cap + ROUND_STEPS of
// each), the steps' victim keys and slots, and the dots: int
// cap*cap + ROUND_STEPS*cap + ROUND_STEPS^2.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md). Compiled from sm_80
// on (the check pass's loads need more registers than sm_60's ptxas
// allots without spilling; older GPUs run duel.cu's one-block kernels).
// gen: min-arch 80

#include "duel.cuh"

#ifndef SELECT_PROTECT
#define SELECT_PROTECT 1  // duel.cu's flag: batch rows protected until the batch ends
#endif

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

// gatherDots stores (int)sim[at(e)] with put(e, v) for e < n, the
// block's threads taking e = tid, tid + nt, ...: ROUND_GATHER loads
// issued before their stores, so that a thread waits for the memory once
// a batch rather than once a dot (the dots are scattered over sim, most
// from DRAM).
template <class At, class Put>
__device__ __forceinline__ void gatherDots(const float* sim, int n, At at, Put put) {
    const int tid = threadIdx.x, nt = blockDim.x;
    for (int e0 = tid; e0 < n; e0 += ROUND_GATHER * nt) {
        float v[ROUND_GATHER];
#pragma unroll
        for (int u = 0; u < ROUND_GATHER; u++) {
            const int e = e0 + u * nt;
            v[u] = e < n ? sim[at(e)] : 0.f;
        }
#pragma unroll
        for (int u = 0; u < ROUND_GATHER; u++) {
            const int e = e0 + u * nt;
            if (e < n) put(e, (int)v[u]);
        }
    }
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

// selectRounds is duel_select_rounds (see the top of the file).
__device__ __forceinline__ void selectRounds(const float* sim, long long W, int K, int B, int flags, int cap,
                                             const double* scoreIn, const long long* P, unsigned long long* U,
                                             int* slotTab, int* evicted, int* kept, double* scoreOut, long long* stats) {
    __shared__ unsigned long long parts[32];
    __shared__ int cnt, viol, nrep;
    const int protect = flags & SELECT_PROTECT;
    const bool compete = !protect;
    const int* const rank = kept;
    int* const slot = kept + K;
    const int tid = threadIdx.x, nt = blockDim.x, N = K + B;
    __shared__ long long st[RSTAT_N + 2];  // the statistics, then thread 0's clock at the start and the last lap
    if (tid == 0) {
        for (int i = 0; i < RSTAT_N; i++) st[i] = 0;
        st[RSTAT_N] = st[RSTAT_N + 1] = clock64();
    }
    // lap adds the cycles since the last lap to statistic i (thread 0).
    auto lap = [&](int i) {
        if (tid == 0) {
            const long long now = clock64();
            st[i] += now - st[RSTAT_N + 1];
            st[RSTAT_N + 1] = now;
        }
    };
    const PackedGeom geom = packedGeom(K, B);
    const int posBits = geom.posBits;
    const unsigned long long posMask = geom.posMask, off = geom.off;
    packKeys(K, B, protect, posBits, off, scoreIn, P, rank, U);
    for (int p = tid; p < K; p += nt) slotTab[p] = slot[p];
    const roundsState r = roundsLayout(reinterpret_cast<unsigned long long*>(slotTab + K + (K & 1)), cap);
    unsigned long long margin = 1ull << (posBits + 20);
    __syncthreads();
    lap(RSTAT_TOTAL);  // the packing: counted in the total only

    int nround = 0;
    for (int t0 = 0; t0 < B; nround++) {
        const int top0 = K + t0;  // slots below it are present (unless evicted)
        const int steps = B - t0 < ROUND_STEPS ? B - t0 : ROUND_STEPS;
        // 1. The candidates: keys >= the largest minus the margin.
        unsigned long long best = 0;
        for (int c = tid; c < top0; c += nt) best = U[c] > best ? U[c] : best;
        const unsigned long long big = blockMax(best, parts);
        auto count = [&](unsigned long long m) {
            const unsigned long long thr = big - m;
            int k = 0;
            for (int c = tid; c < top0; c += nt) k += U[c] >= thr;
            if (tid == 0) st[RSTAT_PROBES]++;
            return blockSum(k, &cnt);
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
        const unsigned long long thr = big - margin;
        if (tid == 0) cnt = 0;
        __syncthreads();
        for (int c = tid; c < top0; c += nt)
            if (U[c] >= thr) {
                const int a = atomicAdd(&cnt, 1);
                r.cslot[a] = c, r.ckey[a] = U[c], r.cact[a] = 1;
            }
        __syncthreads();
        const int mc = cnt;
        lap(RSTAT_CANDIDATES);
        // 2. The dots among the candidates and with the incoming rows.
        gatherDots(
            sim, mc * mc, [&](int e) { return (long long)r.cslot[e / mc] * W + r.cslot[e % mc]; },
            [&](int e, int v) { r.dcc[e / mc * cap + e % mc] = v; });
        gatherDots(
            sim, steps * mc, [&](int e) { return (long long)(top0 + e / mc) * W + r.cslot[e % mc]; },
            [&](int e, int v) { r.dic[e / mc * cap + e % mc] = v; });
        if (compete) {
            gatherDots(
                sim, steps * steps, [&](int e) { return (long long)(top0 + e / steps) * W + top0 + e % steps; },
                [&](int e, int v) { r.dii[e / steps * ROUND_STEPS + e % steps] = v; });
            for (int s = tid; s < steps; s += nt) r.ckey[cap + s] = U[top0 + s], r.cslot[cap + s] = top0 + s, r.cact[cap + s] = 0;
        }
        __syncthreads();
        lap(RSTAT_GATHER);
        // 3. The replay.
        if (tid < 32) {
            const int n = roundsReplay(r, cap, mc, steps, compete, posBits);
            if (tid == 0) nrep = n;
        }
        __syncthreads();
        lap(RSTAT_REPLAY);
        const int rep = nrep;
        if (tid == 0) st[RSTAT_REPLAYED] += rep;
        // 4. The check, ROUND_GROUP steps at a time.
        int done = rep;
        for (int s0 = 0; s0 < rep; s0 += ROUND_GROUP) {
            const int s1 = s0 + ROUND_GROUP < rep ? s0 + ROUND_GROUP : rep;
            if (tid == 0) viol = rep;
            __syncthreads();
            int first = rep;
            for (int c = tid; c < N; c += nt) {
                float dJ[ROUND_GROUP], dI[ROUND_GROUP];
#pragma unroll
                for (int u = 0; u < ROUND_GROUP; u++) {
                    const int s = s0 + u;
                    dJ[u] = s < s1 ? sim[(long long)r.vslot[s] * W + c] : 0.f;
                    dI[u] = s < s1 && c <= top0 + s ? sim[(long long)(top0 + s) * W + c] : 0.f;
                }
                unsigned long long x = U[c];
#pragma unroll
                for (int u = 0; u < ROUND_GROUP; u++) {
                    const int s = s0 + u;
                    if (s >= s1) break;
                    const int top = top0 + s;
                    if (c > top) {
                        x -= (unsigned long long)(long long)(int)dJ[u] << posBits;
                    } else if (x != 0) {
                        if (c == r.vslot[s])
                            x = 0;
                        else
                            x += (unsigned long long)(long long)((int)dI[u] - (int)dJ[u]) << posBits;
                    }
                    // Step s + 1's victim: no present slot but the replayed
                    // one may hold a larger key.
                    if (s + 1 < rep && c <= top && x > r.vkey[s + 1] && c != r.vslot[s + 1] && s + 1 < first) first = s + 1;
                }
                U[c] = x;
            }
            if (first < rep) atomicMin(&viol, first);
            __syncthreads();
            const int v = viol;
            __syncthreads();  // every thread has read viol before the next group resets it
            if (v < s1) {
                // Undo steps s1 - 1 down to v (their rows are in the caches).
                for (int c = tid; c < N; c += nt) {
                    unsigned long long x = U[c];
                    for (int s = s1 - 1; s >= v; s--) {
                        const int top = top0 + s;
                        const long long dj = (long long)(int)sim[(long long)r.vslot[s] * W + c];
                        if (c > top) {
                            x += (unsigned long long)dj << posBits;
                        } else if (c == r.vslot[s]) {
                            x = r.vkey[s];
                        } else if (x != 0) {
                            const long long di = (long long)(int)sim[(long long)top * W + c];
                            x -= (unsigned long long)(di - dj) << posBits;
                        }
                    }
                    U[c] = x;
                }
                done = v;
                __syncthreads();
                break;
            }
            if (v < rep) {  // step s1 (the next group's first) fails: steps up to s1 - 1 stand
                done = v;
                break;
            }
        }
        for (int s = tid; s < done; s += nt) evicted[t0 + s] = (int)(posMask - (r.vkey[s] & posMask));
        t0 += done;
        __syncthreads();  // the next round's candidates overwrite this one's state
        lap(RSTAT_CHECK);
    }

    compactPacked(U, K, B, posBits, off, kept, scoreOut);
    if (tid == 0) {
        st[RSTAT_ROUNDS] = nround;
        st[RSTAT_TOTAL] = clock64() - st[RSTAT_N];
        for (int i = 0; i < RSTAT_N; i++) stats[i] = st[i];
    }
}

// The selection reduces with warp intrinsics in its helpers: the marker
// duel_select_rounds_warps gives it a launcher that insists on whole warps.
//
// evicted, kept, scoreOut = the B DUEL steps in certified rounds of up to 64 (candidates: at most cap, flags: SELECT_PROTECT), duel_select_shared's results; stats[0..7] = the rounds taken, steps replayed, margin probes, cycles per phase (RSTAT_*); keys and round state in dynamic shared memory
extern "C" __global__ void __launch_bounds__(1024, 1) duel_select_rounds(
    const float* sim, long long W, int K, int B, int flags, int cap, const double* scoreIn, const long long* P,
    int* evicted, int* kept, double* scoreOut, long long* stats) {
    DYNAMIC_SHARED(unsigned long long, dyn);
    selectRounds(sim, W, K, B, flags, cap, scoreIn, P, dyn, (int*)(dyn + K + B), evicted, kept, scoreOut, stats);
}
