// duel_lean.cu: the B sequential DUEL steps of an update (duel.cu's
// packed selection: the same keys, decisions, slots and scores) in one
// block whose keys live in registers, a step being as few instructions
// as the arithmetic allows.
//
// Where duel_select_shared's 2 us a step go (K 4096, B 256, 1024
// threads; its sm_90 SASS, before sim held int32): each slot's step is a
// 64-bit load and store of its key in shared memory (70 KB a step, 544
// cycles of the SM's 128 bytes a clock), two float-to-integer
// conversions (F2I, 16 a clock per SM: 544 cycles), and a step loop of
// 500 instructions with branches (the loads' guards, the four cases of a
// slot): 32 warps of several hundred instructions are over 2000 issue
// cycles per scheduler, so the step is bound by the instructions issued,
// not by row J's DRAM read alone.
//
// Here slot c = tid + u*NT (u < C = ceil((K+B)/NT)) belongs to thread
// tid, and its key is register x[u]; NT and C are compile-time (one copy
// of the steps for each C up to the kernel's most), so that a slot's
// address is the thread's row pointer plus an immediate. Every slot takes
// the same update each step,
//   x += (d(i, c) - d(J, c)) << P   (one mad.wide.s32)
// with no case: a batch row not yet arrived starts from its dots with the
// K rows held alone, OFF + P_b - Q_b with Q_b = sum_{b' < b} d(b', b)
// (duel_dots' P_b also counts the batch rows before it, which the steps
// s < b now add as d(s, b)), so that when it arrives its key is
// duel_select_shared's (OFF + P_b + d(b, b) - the victims' dots). The
// candidates are told by bit 63 (KEY_VALID): a batch row has it clear
// until the step it arrives, when its owner sets it; the victim's owner
// sets its key to DEAD (2^62), and a later step's drift, below B*2^25
// << P < 2^62 in either direction (packedFits), cannot reach bit 63. A
// slot past K+B starts DEAD and reads whatever lies past the row: zeros
// or integer dots (cudaduel zeroes sim when it allocates it, with a tail
// of leanTail ints past its last row), so no slot needs a guard.
//
// Row J's dots of the thread's slots go through shared memory: C
// cp.async, then one wait. With register loads ptxas schedules each
// load's first use right after it, and the warp waits for DRAM once a
// slot or two instead of once a step. The staging takes the keys' space
// in shared memory, unused during the steps.
//
// At the end the keys go to shared memory (0 for the slots evicted) and
// compactPacked (duel.cuh) writes the next layout: evicted, the slot
// state and the scores are duel_select_shared's bit for bit (the CPU
// emulator's tests compare them).
//
// Dynamic shared memory (cudaduel's leanShared): max(8(K+B), 4*C*NT)
// bytes for the keys (the batch rows' Q before the steps, the staging
// during them, the final keys after), then the slot of each position (4K
// bytes).
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md). Compiled from sm_80
// on (cp.async); older GPUs run duel.cu's one-block kernels.
// gen: min-arch 80

#include "duel.cuh"
#include "tc.cuh"

#define LEAN_DEAD (1ull << 62)  // an evicted slot's key: below every candidate however the steps move it

// With SELECT_STATS, thread 0's clock64 cycles, at stats[LSTAT_*]: where
// a step's time goes (the GPU benchmarks report them; the emulator's
// clock64 counts its calls).
#define LSTAT_PROLOGUE 0  // the slot table, Q, the starting keys, the first block maximum, the first incoming row
#define LSTAT_WAIT 1      // a step's row J: its cp.async issued and waited for (and the prefetch)
#define LSTAT_UPDATE 2    // a step's keys updated, the next incoming row's loads issued, the thread's maximum
#define LSTAT_REDUCE 3    // a step's block maximum (its barrier: the slowest warp)
#define LSTAT_TOTAL 4     // the whole kernel, the compaction included
#define LSTAT_STEPS 5     // steps taken
#define LSTAT_N 8

// leanClock is the low 32 bits of clock64: a step's parts, and their sums
// over an update (below 2^32 cycles), in one register each.
__device__ __forceinline__ unsigned leanClock() { return (unsigned)clock64(); }

// leanStartKey returns slot c's starting key (c < K+B): a row held as
// packKey makes it; batch row b = c - K from its dots with the rows held
// alone, P[b] - Q (Q: its dots with the batch rows before it), bit 63
// clear until it arrives.
__device__ __forceinline__ unsigned long long leanStartKey(int c, int K, int protect, const PackedGeom& g, const double* scoreIn,
                                                           const long long* P, const int* rank, long long Q) {
    if (c < K) return packKey(c, K, protect, g, scoreIn, P, rank);
    const unsigned long long u = g.off + (unsigned long long)(P[c - K] - Q);
    return (u << g.posBits) | (protect ? 0ull : KEY_FREE) | (g.posMask - c);
}

// madWide returns a*b + c with the 32-bit product widened (one
// IMAD.WIDE: the compiler makes a 64-bit multiply of the C expression).
__device__ __forceinline__ long long madWide(int a, int b, long long c) {
#ifdef __CUDA_ARCH__
    long long d;
    asm("mad.wide.s32 %0, %1, %2, %3;" : "=l"(d) : "r"(a), "r"(b), "l"(c));
    return d;
#else
    return (long long)a * b + c;
#endif
}

// leanBatchQ writes Q_b = sum_{b' < b} d(b', b) into Q[b] (shared
// memory) for b < B, read down column K+b of the batch's rows (sim is
// symmetric): a column takes max(1, blockDim/B) threads, each summing
// every such row with LEAN_Q_LOADS loads in flight, the parts meeting by
// a 64-bit atomic in Q; a warp reads consecutive columns of a row. (A
// warp a row, as before, waited for L2 once a 32-column chunk: about 30
// us an update at B 256.) Every thread of the block calls it (two
// barriers: Q zeroed, then complete).
#define LEAN_Q_LOADS 8
__device__ __forceinline__ void leanBatchQ(const int* sim, long long W, int K, int B, long long* Q) {
    const int tid = threadIdx.x, nt = blockDim.x;
    const int parts = B >= nt ? 1 : nt / B;
    for (int b = tid; b < B; b += nt) Q[b] = 0;
    __syncthreads();
    for (int t = tid; t < B * parts; t += nt) {
        const int b = t % B, p = t / B;
        const int* col = sim + (long long)K * W + K + b;  // d(b', b) at col[b' * W]
        long long s = 0;
        int r = p;
        for (; r + (LEAN_Q_LOADS - 1) * parts < b; r += LEAN_Q_LOADS * parts) {
            int v[LEAN_Q_LOADS];
#pragma unroll
            for (int u = 0; u < LEAN_Q_LOADS; u++) v[u] = col[(long long)(r + u * parts) * W];
#pragma unroll
            for (int u = 0; u < LEAN_Q_LOADS; u++) s += v[u];
        }
        for (; r < b; r += parts) s += col[(long long)r * W];
        if (s != 0) atomicAdd((unsigned long long*)(Q + b), (unsigned long long)s);
    }
    __syncthreads();
}

// leanSet sets x[w] = (x[w] & keep) | set, w < S known only at run
// time: a switch over constant indices, so that x stays in registers (a
// loop "if (u == w)" becomes a store to x[w] in local memory).
template <int S>
__device__ __forceinline__ void leanSet(unsigned long long (&x)[S], int w, unsigned long long keep, unsigned long long set) {
    static_assert(S <= 16, "leanSet's switch has 16 cases");
    switch (w) {
#define LEAN_CASE(n) \
    case n:          \
        if (n < S) x[n < S ? n : 0] = (x[n < S ? n : 0] & keep) | set; \
        break;
        LEAN_CASE(0) LEAN_CASE(1) LEAN_CASE(2) LEAN_CASE(3) LEAN_CASE(4) LEAN_CASE(5) LEAN_CASE(6) LEAN_CASE(7)
        LEAN_CASE(8) LEAN_CASE(9) LEAN_CASE(10) LEAN_CASE(11) LEAN_CASE(12) LEAN_CASE(13) LEAN_CASE(14) LEAN_CASE(15)
#undef LEAN_CASE
    }
}

// LeanArgs are the selection's parameters (duel_select_shared's) and its
// shared memory: U (K+B keys: the batch rows' Q before the steps, the
// final keys after), slotTab (K ints: the slot of each position).
struct LeanArgs {
    const int* sim;
    long long W;
    int K, B, flags;
    const double* scoreIn;
    const long long* P;
    unsigned long long* U;
    int* slotTab;
    int* evicted;
    int* kept;
    double* scoreOut;
    long long* stats;
};

// leanSteps is duel_select_lean* for C = ceil((K+B)/NT) slots a thread:
// thread tid's keys in x[0..C-1] (slots tid + u*NT). A slot past K+B
// starts DEAD, and its loads read whatever lies there: zeros or integer
// dots (cudaduel zeroes sim when it allocates it, with a tail of leanTail
// ints past its last row), which move it as they move a dead slot.
template <int NT, int C>
__device__ __forceinline__ void leanSteps(const LeanArgs& a, unsigned long long (*parts)[32]) {
    const int K = a.K, B = a.B, N = K + B, tid = threadIdx.x;
    const long long W = a.W;
    const int protect = a.flags & SELECT_PROTECT;
    const PackedGeom geom = packedGeom(K, B);
    const unsigned long long posMask = geom.posMask;
    const int scale = 1 << geom.posBits;  // x += delta * scale is the packed selection's delta << P
    const int W4 = (int)(W * 4);           // a row's bytes (W <= 2^18: leanFits)
    const char* const base = (const char*)(a.sim + tid);
    int* const LJ = (int*)a.U + tid;   // this thread's staging of row J: LJ[u*NT], over U during the steps
    // Warp 0 times the parts (a branch the other warps skip whole), lane
    // 0 writes them.
    const bool timed = (a.flags & SELECT_STATS) && tid < 32;
    unsigned t0 = 0, wait = 0, update = 0, reduce = 0, s0 = 0, s1 = 0, s2 = 0;
    if (timed) t0 = leanClock();

    long long* const Q = (long long*)(a.U + K);  // the batch rows' keys' slots, free until the end
    for (int p = tid; p < K; p += NT) a.slotTab[p] = a.kept[K + p];
    leanBatchQ(a.sim, W, K, B, Q);  // its barriers publish slotTab and Q

    unsigned long long x[C];
    unsigned long long best = 0;
#pragma unroll
    for (int u = 0; u < C; u++) {
        const int c = tid + u * NT;
        x[u] = c < N ? leanStartKey(c, K, protect, geom, a.scoreIn, a.P, a.kept, c < K ? 0 : Q[c - K]) : LEAN_DEAD;
        best = x[u] > best ? x[u] : best;  // the rows held have bit 63, the others not
    }
    // The victim of the first row (its barrier also keeps Q's reads
    // before the final keys' writes, and publishes slotTab).
    unsigned long long v = blockMax(best, parts[1]);

    const int* rowI = a.sim + (long long)K * W + tid;  // d(i, .) of the incoming row, loaded a step ahead
    int dI[C];
#pragma unroll
    for (int u = 0; u < C; u++) dI[u] = rowI[u * NT];
    if (timed && tid == 0) a.stats[LSTAT_PROLOGUE] = leanClock() - t0;

#pragma unroll 1
    for (int i = 0; i < B; i++) {
        if (timed) s0 = leanClock();
        const int r = (int)(posMask - (v & posMask));  // the victim's position
        const int J = r < K ? a.slotTab[r] : r;         // its slot
        const int top = K + i;                          // the incoming row's slot
        if (tid == 0) a.evicted[i] = r;
        // Row J's dots for this thread's slots, through shared memory: C
        // cp.async then one wait, so that all C are in flight at once
        // (ptxas schedules a register load's first use right after it,
        // paying DRAM's latency once per slot or two).
        const int* rowJ = (const int*)(base + (long long)J * W4);
#pragma unroll
        for (int u = 0; u < C; u++) cp_async4_if(LJ + u * NT, rowJ + u * NT, true);
        cp_async_commit();
        // With SELECT_PREFETCH, the runners-up's rows (the likely victims
        // of the next step) asked of L2 while row J's are on their way.
        if (a.flags & SELECT_PREFETCH) prefetchRunnersUp(v, parts[(i + 1) & 1], a.sim, W, N, K, posMask, a.slotTab);
        cp_async_wait<0>();
        if (timed) s1 = leanClock();
        int dJ[C];
#pragma unroll
        for (int u = 0; u < C; u++) dJ[u] = LJ[u * NT];
#pragma unroll
        for (int u = 0; u < C; u++) x[u] = (unsigned long long)madWide(dI[u] - dJ[u], scale, (long long)x[u]);
        // The victim leaves; the incoming row becomes a candidate.
        if ((J & (NT - 1)) == tid) leanSet<C>(x, J / NT, 0ull, LEAN_DEAD);
        if ((top & (NT - 1)) == tid) leanSet<C>(x, top / NT, ~0ull, KEY_VALID);
        if (i + 1 == B) {  // no next row: no victim to find
            if (timed) wait += s1 - s0, update += leanClock() - s1;
            break;
        }
        rowI += W;
#pragma unroll
        for (int u = 0; u < C; u++) dI[u] = rowI[u * NT];
        best = x[0];
#pragma unroll
        for (int u = 1; u < C; u++) best = x[u] > best ? x[u] : best;
        if (timed) s2 = leanClock();
        v = blockMax(best, parts[i & 1]);
        if (timed) wait += s1 - s0, update += s2 - s1, reduce += leanClock() - s2;
    }
    if (timed && tid == 0) {
        a.stats[LSTAT_WAIT] = wait, a.stats[LSTAT_UPDATE] = update, a.stats[LSTAT_REDUCE] = reduce;
        a.stats[LSTAT_STEPS] = B;
    }

    // The final keys (0: evicted), once every thread is done with LJ,
    // which they overwrite.
    __syncthreads();
#pragma unroll
    for (int u = 0; u < C; u++) {
        const int c = tid + u * NT;
        if (c < N) a.U[c] = x[u] >> 63 ? x[u] : 0ull;
    }
}

// LeanDispatch runs leanSteps<NT, c> for the block's slot count c (1 ..
// C): one copy of the steps per count, so that a thread does exactly
// ceil((K+B)/NT) slots' work a step.
template <int NT, int C>
struct LeanDispatch {
    static __device__ __forceinline__ void run(int c, const LeanArgs& a, unsigned long long (*parts)[32]) {
        if (c == C)
            leanSteps<NT, C>(a, parts);
        else
            LeanDispatch<NT, C - 1>::run(c, a, parts);
    }
};

template <int NT>
struct LeanDispatch<NT, 0> {
    static __device__ __forceinline__ void run(int, const LeanArgs&, unsigned long long (*)[32]) {}
};

// selectLean is duel_select_lean*: K+B at most NT*CMAX (cudaduel's
// leanFits; 0 slots a thread, K+B = 0, runs nothing).
template <int NT, int CMAX>
__device__ __forceinline__ void selectLean(const int* sim, long long W, int K, int B, int flags, const double* scoreIn,
                                           const long long* P, unsigned long long* dyn, int* evicted, int* kept,
                                           double* scoreOut, long long* stats) {
    __shared__ unsigned long long parts[2][32];
    const long long tk = clock64();
    // The slot table after the keys or the staging, whichever is larger
    // (cudaduel's leanShared).
    const int N = K + B, stage = 4 * NT * ((N + NT - 1) / NT);
    int* const slotTab = (int*)((char*)dyn + (8 * N > stage ? 8 * N : stage));
    const LeanArgs a{sim, W, K, B, flags, scoreIn, P, dyn, slotTab, evicted, kept, scoreOut, stats};
    LeanDispatch<NT, CMAX>::run((N + NT - 1) / NT, a, parts);
    // The next layout (compactPacked's first barrier publishes the final
    // keys).
    const PackedGeom geom = packedGeom(K, B);
    compactPacked(dyn, K, B, geom.posBits, geom.off, kept, scoreOut);
    if ((flags & SELECT_STATS) && threadIdx.x == 0) stats[LSTAT_TOTAL] = clock64() - tk;
}

// evicted, kept, scoreOut = the B DUEL steps on sim (keys in registers, 128 threads, K+B <= 2048) from scores scoreIn and batch sums P (flags: SELECT_PROTECT, SELECT_PREFETCH, SELECT_STATS: thread 0's cycles into stats), in cudaduel's leanShared bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(128, 1) duel_select_lean128(
    const int* sim, long long W, int K, int B, int flags, const double* scoreIn, const long long* P,
    int* evicted, int* kept, double* scoreOut, long long* stats) {
    DYNAMIC_SHARED(unsigned long long, dyn);
    selectLean<128, 16>(sim, W, K, B, flags, scoreIn, P, dyn, evicted, kept, scoreOut, stats);
}

// evicted, kept, scoreOut = the B DUEL steps on sim (keys in registers, 512 threads, K+B <= 8192) from scores scoreIn and batch sums P (flags: SELECT_PROTECT, SELECT_PREFETCH, SELECT_STATS: thread 0's cycles into stats), in cudaduel's leanShared bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(512, 1) duel_select_lean512(
    const int* sim, long long W, int K, int B, int flags, const double* scoreIn, const long long* P,
    int* evicted, int* kept, double* scoreOut, long long* stats) {
    DYNAMIC_SHARED(unsigned long long, dyn);
    selectLean<512, 16>(sim, W, K, B, flags, scoreIn, P, dyn, evicted, kept, scoreOut, stats);
}

// evicted, kept, scoreOut = the B DUEL steps on sim (keys in registers, 1024 threads, K+B <= 6144) from scores scoreIn and batch sums P (flags: SELECT_PROTECT, SELECT_PREFETCH, SELECT_STATS: thread 0's cycles into stats), in cudaduel's leanShared bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(1024, 1) duel_select_lean1024(
    const int* sim, long long W, int K, int B, int flags, const double* scoreIn, const long long* P,
    int* evicted, int* kept, double* scoreOut, long long* stats) {
    DYNAMIC_SHARED(unsigned long long, dyn);
    selectLean<1024, 6>(sim, W, K, B, flags, scoreIn, P, dyn, evicted, kept, scoreOut, stats);
}
