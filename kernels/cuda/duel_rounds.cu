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

#include "rounds.cuh"

// selectRounds is duel_select_rounds (see the top of the file).
__device__ __forceinline__ void selectRounds(const int* sim, long long W, int K, int B, int flags, int cap,
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
    packKeys(K, B, protect, geom, scoreIn, P, rank, U);
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
        const unsigned long long thr = roundsThreshold(
            0, top0, [&](int c) { return U[c]; }, cap, margin, parts, &cnt, &st[RSTAT_PROBES]);
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
        roundsGather(r, sim, W, cap, mc, steps, top0, compete);
        if (compete)
            for (int s = tid; s < steps; s += nt) r.ckey[cap + s] = U[top0 + s], r.cslot[cap + s] = top0 + s, r.cact[cap + s] = 0;
        __syncthreads();
        lap(RSTAT_GATHER);
        // 3. The replay.
        const int rep = roundsRun(r, cap, mc, steps, compete, posBits, &nrep);
        lap(RSTAT_REPLAY);
        if (tid == 0) st[RSTAT_REPLAYED] += rep;
        // 4. The check, ROUND_GROUP steps at a time.
        int done = rep;
        for (int s0 = 0; s0 < rep; s0 += ROUND_GROUP) {
            const int s1 = s0 + ROUND_GROUP < rep ? s0 + ROUND_GROUP : rep;
            if (tid == 0) viol = rep;
            __syncthreads();
            int first = rep;
            for (int c = tid; c < N; c += nt) U[c] = roundsCheck(r, sim, W, top0, c, s0, s1, rep, posBits, U[c], first);
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
                        const long long dj = (long long)sim[(long long)r.vslot[s] * W + c];
                        if (c > top) {
                            x += (unsigned long long)dj << posBits;
                        } else if (c == r.vslot[s]) {
                            x = r.vkey[s];
                        } else if (x != 0) {
                            const long long di = (long long)sim[(long long)top * W + c];
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
    const int* sim, long long W, int K, int B, int flags, int cap, const double* scoreIn, const long long* P,
    int* evicted, int* kept, double* scoreOut, long long* stats) {
    DYNAMIC_SHARED(unsigned long long, dyn);
    selectRounds(sim, W, K, B, flags, cap, scoreIn, P, dyn, (int*)(dyn + K + B), evicted, kept, scoreOut, stats);
}
