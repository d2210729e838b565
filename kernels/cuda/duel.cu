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
// Slots. The device keeps the rows held in K slots, in no particular
// order, and the batch in slots K..K+B-1 (batch row b in slot K+b); the
// slot state kept (3K+B ints, see "kept" below) maps slots to positions.
// Between updates it keeps (see duel/memory/cudaduel/memory.go):
//   grid  (K+Bcap) x Z floats: the rows on duel/memory's similarity grid,
//         floor(2048*x + 1/2) (duel_grid), by slot;
//   sim   (K+Bcap) x W int32 (W = K + Bcap): the grid dots of every pair
//         of slots, sim[r*W + c] = grid(r).grid(c): its K x K block is
//         carried (sgemm_f32's product at Load, made integers in place by
//         duel_int_block), and an update adds the batch's rows and columns
//         with one launch (duel_dots over grid rows: exact, see below);
//   score K doubles: the carried scores, by slot;
//   kept  rank[K] (the position of each slot), slot[K] (the slot of each
//         position), then an update's src[K] and moves[B] (below).
// duel_dots also adds up each batch row's dots with the rows before it,
// and one block runs the B sequential steps (duel_select_*, "the packed
// selection" below): per step it reads row J of sim and the incoming row
// (contiguous), keeps the K+B scores as exact integers in shared memory
// (duel_select_shared) or, when they do not fit, in global scratch
// (duel_select_global), and finds the next victim as the maximum of one
// uint64 per candidate: a warp maximum, one barrier, a maximum of the
// warps' partials. It ends by giving each kept batch row the slot of an
// evicted row (the j-th batch row kept takes the j-th slot freed, in
// slot order: moves[j] = that slot, src[slot] = K+b, src = the slot
// itself for the other slots) and by renumbering the positions (the rows
// held, in position order, then the batch rows kept). duel_move then
// copies the moved rows' grid rows, sim rows and sim columns into their
// slots: the K x K block is never compacted.
//
// Exactness (duel/memory's "similarity grid"): every component of a unit
// row is rounded to an integer of magnitude at most 2048, so by
// Cauchy-Schwarz every partial sum of a dot product is an integer below
// (2048*|x| + sqrt(Z)/2)^2 < 2^24 (cudaduel checks the rows' norms and
// Z): float FMA accumulation is exact in any order, and the dots are exact
// integers, stored as int32 (sim is exactly symmetric; the selections read
// them without a conversion). Every q is
// 1/2 + d*2^-23 and every score, a double, is an exact sum of such
// multiples of 2^-23: K/2 + S*2^-23 with S an integer, |S| < K*2^24,
// which the packed selection keeps as an integer (converted exactly from
// and to the doubles at its start and end). Scores therefore do not
// depend on the order of the sums, and the decisions are exactly those of
// the CPU reference, ties included.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#include "duel.cuh"
#include "tile.cuh"

// g[e] = floor(2048*x[e] + 1/2) for e < n, in place allowed (the similarity grid, as exact floats)
extern "C" __global__ void duel_grid(const float* x, long long n, float* g) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += step)
        g[e] = (float)floor((double)x[e] * 2048.0 + 0.5);
}

// score[j] = K/2 + 2^-23 * sum_{k<K} sim[j*W + k] for j < K, one warp per row
extern "C" __global__ void duel_scores(const int* sim, long long W, int K, double* score) {
    const int lane = threadIdx.x & 31;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long j = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; j < K; j += warps) {
        const int* row = sim + j * W;
        long long s = 0;
        for (int k = lane; k < K; k += 32) s += row[k];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
        if (lane == 0) score[j] = 0.5 * (double)K + (double)s * QUNIT;
    }
}

// p[r*W + c] = (int)f for r < rows, c < cols, where f is the float whose bits p[r*W + c] holds (sgemm_f32's exact dots made int32 in place)
extern "C" __global__ void duel_int_block(int* p, long long W, int rows, int cols) {
    const long long n = (long long)rows * cols, step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += step) {
        int* q = p + (e / cols) * W + e % cols;
        *q = (int)__int_as_float(*q);
    }
}

// sim rows and columns and grid rows of the slots moves[j] >= 0 (kept + 3K) from the batch slots src[slot] (kept + 2K)
extern "C" __global__ void duel_move(int* sim, long long W, float* grid, int Z, int K, int B, const int* kept) {
    // Reads come from the batch's rows (slots >= K) and writes go to
    // slots < K only: the blocks need no order. Row s takes row src[s] of
    // the batch at the columns' sources; column s, in the rows t that
    // stay, takes column src[s] of row t, which is the value just read:
    // sim is exactly symmetric (integer dots), so sim[t][b] = sim[b][t],
    // and the column's only scattered accesses are its writes; the rows
    // that move get column s from their own row.
    const int* src = kept + 2 * K;
    const int* moves = kept + 3 * K;
    const int step = gridDim.x * blockDim.x;
    for (int j = blockIdx.y; j < B; j += gridDim.y) {
        const int s = moves[j];
        if (s < 0) break;  // the moves are a prefix of moves[]
        const long long b = src[s];
        const int* from = sim + b * W;
        int* to = sim + (long long)s * W;
        for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < K; t += step) {
            const int st = src[t];
            const int v = from[st];
            to[t] = v;
            if (st == t) sim[(long long)t * W + s] = v;
        }
        for (int z = blockIdx.x * blockDim.x + threadIdx.x; z < Z; z += step)
            grid[(long long)s * Z + z] = grid[b * Z + z];
    }
}

// duel_gather is duel_move's alternative (cudaduel's MoveGather): the
// next layout's K x K block gathered whole from sim into a second matrix
// out, row s from row src[s] at columns src[t], so that its writes are
// whole rows (no column scattered into every row, whose partial sectors
// DRAM must merge when sim exceeds L2) at the price of reading and
// writing the whole block; the grid rows of the slots that move are
// copied in place as duel_move does. out's rows and columns from K on are
// left as they are (the next duel_dots writes those it reads). Same
// values as duel_move's block, bit for bit (cudaduel's tests compare
// them).

// out[s*W + t] = sim[src[s]*W + src[t]] for s, t < K (src: kept + 2K), and grid row s = grid row src[s] where they differ
extern "C" __global__ void duel_gather(const int* sim, int* out, long long W, float* grid, int Z, int K, const int* kept) {
    const int* src = kept + 2 * K;
    const int step = gridDim.x * blockDim.x;
    for (int s = blockIdx.y; s < K; s += gridDim.y) {
        const long long from = src[s];
        const int* row = sim + from * W;
        int* to = out + (long long)s * W;
        for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < K; t += step) to[t] = row[src[t]];
        if (from != s)
            for (int z = blockIdx.x * blockDim.x + threadIdx.x; z < Z; z += step) grid[(long long)s * Z + z] = grid[from * Z + z];
    }
}

// ---- The packed selection (duel_select_shared, duel_select_global) ----
//
// Every score is K/2 + S*2^-23 with S the sum of the K dots d of the row
// with the rows held (an exact integer, |d| < 2^24: |S| < K*2^24), kept as
// the unsigned integer U = S + OFF with OFF = (K+2B)*2^24 (room for B
// steps of |dI - dJ| < 2^25 from any carried S with |S| < K*2^24, the
// bound cudaduel checks on carried scores): 1 <= U < 2*OFF. A candidate
// is one uint64 whose maximum is the victim (duel/memory's evictsBefore):
//   bit 63        1 (a candidate; 0 is none, and marks a slot evicted)
//   bit 62        1 when not protected
//   bits 62..P    U (P = posBits, the bits of K+B-1)
//   bits P-1..0   posMask - position (the lower position wins a tie)
// which fits when 2*OFF <= 2^(62-P), that is when K+B <= 2^18 (cudaduel's
// packedFits; it refuses larger memories, whose sim would take 256 GB).
// Comparing U compares the exact scores, so the decisions are those of
// the CPU reference, ties included. The slot's key itself is its state:
// a step adds (dI - dJ) << P to it (arithmetic modulo 2^64 leaves the
// other fields alone whenever the final U is in range), and the victim's
// position is in its low bits (its slot: slot[position], or the position
// itself for a batch row).
//
// The incoming row's score is taken out of the reduction: for batch row i,
// with J_0..J_i the slots of the victims so far (all below K+i, distinct),
// the slots held besides J_i when it arrives are [0, K+i) minus J_0..J_i,
// so S(K+i) = P_i + d(i,i) - sum_{s<=i} d(i, J_s) with P_i = sum_{c<K+i}
// d(i, c) (duel_dots, before the steps). Its key starts at OFF + P_i;
// the pass over row J_s of every step s <= i subtracts d(J_s, K+i) from it
// (sim is symmetric: the dots are exact), and at step i the row gets the
// update of every row held, + d(i, K+i) - d(J_i, K+i): its score is final
// and it competes in the same reduction as the rows held.
#define PSTEP 5                // slots per thread whose dots the packed pass loads at once (64 registers: no more)

// The selection kernels reduce with warp intrinsics in their helpers: the
// markers duel_select_shared_warps and duel_select_global_warps give them
// launchers that insist on whole warps.
//
// selectPacked is duel_select_shared and duel_select_global: the B steps
// with the keys U (K+B, see above) in shared or global memory and the
// slot of each position in slotTab (shared, copied from kept, or kept's
// own table). Slot c always belongs to thread c % blockDim.x, so U needs
// no barrier during the steps; a step is the pass over the thread's slots
// (rows J and K+i of sim), a warp maximum, one barrier and a maximum of
// the partials. evicted gets the victims' positions; kept's src, moves,
// rank and slot and scoreOut (by slot) get the next layout (see the
// header).
__device__ __forceinline__ void selectPacked(const int* sim, long long W, int K, int B, int flags,
                                             const double* scoreIn, const long long* P, unsigned long long* U,
                                             int* slotTab, int* evicted, int* kept, double* scoreOut) {
    __shared__ unsigned long long parts[2][32];
    const int protect = flags & SELECT_PROTECT;
    const int* const rank = kept;
    int* const slot = kept + K;
    const int tid = threadIdx.x, nt = blockDim.x, N = K + B;
    const PackedGeom geom = packedGeom(K, B);
    const int posBits = geom.posBits;
    const unsigned long long posMask = geom.posMask, off = geom.off;
    unsigned long long best = packKeys(K, B, protect, geom, scoreIn, P, rank, U);
    if (slotTab != slot)
        for (int p = tid; p < K; p += nt) slotTab[p] = slot[p];
    // The victim of the first row: the rows held only, none protected (the
    // barrier also publishes slotTab).
    unsigned long long v = blockMax(best, parts[1]);
    // pre: the first chunk of the incoming row's dots (c <= K+i), loaded a
    // step ahead.
    int pre[PSTEP];
#pragma unroll
    for (int u = 0; u < PSTEP; u++) {
        const int c = tid + u * nt;
        pre[u] = c <= K ? sim[(long long)K * W + c] : 0;
    }

#pragma unroll 1
    for (int i = 0; i < B; i++) {
        const int r = (int)(posMask - (v & posMask));  // the victim's position
        const int J = r < K ? slotTab[r] : r;           // its slot
        const int top = K + i;                          // the incoming row's slot
        const int* del = sim + (long long)J * W;        // d(J, .)
        const int* ins = sim + (long long)top * W;      // d(i, .)
        if (tid == 0) evicted[i] = r;
        best = 0;
        // Slots held (c < top, U != 0) other than J: += d(i,c) - d(J,c),
        // candidates; J: evicted; the incoming row (c == top): the same,
        // a candidate (protected in Protected mode); the batch rows still
        // to come (c > top): -= d(J,c). Loads first, PSTEP at a time, so
        // that those of row J (from DRAM when sim exceeds the L2) overlap.
#pragma unroll 1
        for (int c0 = tid; c0 < N; c0 += PSTEP * nt) {
            int dJ[PSTEP], dI[PSTEP];
#pragma unroll
            for (int u = 0; u < PSTEP; u++) {
                const int c = c0 + u * nt;
                dJ[u] = c < N ? del[c] : 0;
                dI[u] = c0 == tid ? pre[u] : c <= top ? ins[c] : 0;
            }
#pragma unroll
            for (int u = 0; u < PSTEP; u++) {
                const int c = c0 + u * nt;
                if (c >= N) break;
                unsigned long long x = U[c];
                const int dj = dJ[u];
                if (c > top) {
                    U[c] = x - ((unsigned long long)(long long)dj << posBits);
                    continue;
                }
                if (x == 0) continue;  // evicted (never the incoming row: its key has bit 63)
                if (c == J) {
                    U[c] = 0;
                    continue;
                }
                x += (unsigned long long)(long long)(dI[u] - dj) << posBits;
                U[c] = x;
                best = x > best ? x : best;
            }
        }
        if (i + 1 == B) break;  // no next row: no victim to find
        // The next incoming row's first chunk, in flight during the
        // reduction.
#pragma unroll
        for (int u = 0; u < PSTEP; u++) {
            const int c = tid + u * nt;
            pre[u] = c <= top + 1 ? ins[W + c] : 0;
        }
        v = blockMax(best, parts[i & 1]);
        if (flags & SELECT_PREFETCH) prefetchRunnersUp(v, parts[i & 1], sim, W, N, K, posMask, slotTab);
    }

    // The next layout (every slot's key is final: compactPacked's first
    // barrier publishes them to every thread).
    compactPacked(U, K, B, posBits, off, kept, scoreOut);
}

// duel_dots: the batch's dots in one launch. Block (x, y) computes the 64
// x 64 tile of batch rows i = 64y.. and slots c = 64x.. (c < K+B) from
// the grid rows (16-deep panels in shared memory, a 4 x 4 sub-tile a
// thread: tile.cuh's tileFMA, as sgemm_f32; float FMAs, exact: every
// partial sum is an integer below 2^24), and writes it three ways: row
// K+i of sim (coalesced along c); for c < K, column K+i of row c, the
// tile transposed through shared memory so that the writes run along i
// (the K x B block: sim is exactly symmetric); and each row's dots with
// the slots before it (c < K+i) added to P[i] with one 64-bit atomic a
// row and block (integers: the order of the additions cannot change the
// sum; P is zeroed before the launch).
#define DOT_TILE 64   // tile.cuh's tile
#define DOT_DEPTH 16  // and panel depth

// sim[(K+i)*W + c] = sim[c*W + K+i] (c < K) = grid(K+i).grid(c) for i < B, c < K+B; P[i] += the sum over c < K+i (P zeroed before); 64 x 64 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256) duel_dots(const float* grid, int Z, int K, int B, int* sim, long long W, long long* P) {
    __shared__ float As[DOT_DEPTH][DOT_TILE + 1];
    __shared__ float Bs[DOT_DEPTH][DOT_TILE + 1];
    __shared__ float T[DOT_TILE][DOT_TILE + 1];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int i0 = blockIdx.y * DOT_TILE, c0 = blockIdx.x * DOT_TILE, N = K + B;
    const float* a = grid + (long long)(K + i0) * Z;  // the tile's batch rows
    const float* b = grid + (long long)c0 * Z;        // its slots' rows
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.f;
    for (int k0 = 0; k0 < Z; k0 += DOT_DEPTH) {
#pragma unroll
        for (int l = 0; l < 4; l++) {  // 64 rows x 16 values of each panel, k fastest
            const int e = tid + 256 * l, kk = e & 15, r = e >> 4, gk = k0 + kk;
            As[kk][r] = i0 + r < B && gk < Z ? a[(long long)r * Z + gk] : 0.f;
            Bs[kk][r] = c0 + r < N && gk < Z ? b[(long long)r * Z + gk] : 0.f;
        }
        __syncthreads();
        tileFMA(As, Bs, ty, tx, acc);
        __syncthreads();
    }
    long long part[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int gi = i0 + ty + 16 * i;
        part[i] = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int gc = c0 + tx + 16 * j;
            if (gi >= B || gc >= N) continue;
            sim[(long long)(K + gi) * W + gc] = (int)acc[i][j];
            if (gc < K + gi) part[i] += (long long)acc[i][j];
        }
    }
    // The 16 threads of a row (tx) are one half of a warp: the sum of
    // their parts reaches the half's first lane.
#pragma unroll
    for (int i = 0; i < 4; i++) {
        long long s = part[i];
        for (int o = 8; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
        const int gi = i0 + ty + 16 * i;
        if (tx == 0 && gi < B && s != 0) atomicAdd((unsigned long long*)(P + gi), (unsigned long long)s);
    }
    if (c0 >= K) return;  // the block's slots are all batch rows: no column of the K x B block
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) T[tx + 16 * j][ty + 16 * i] = acc[i][j];
    __syncthreads();
#pragma unroll 4
    for (int l = 0; l < 16; l++) {  // row c0 + cc of sim, columns K + i0 + ii: 64 consecutive ints a row
        const int e = tid + 256 * l, ii = e & 63, cc = e >> 6;
        const int gi = i0 + ii, gc = c0 + cc;
        if (gc < K && gi < B) sim[(long long)gc * W + K + gi] = (int)T[cc][ii];
    }
}

// evicted, kept, scoreOut = the B DUEL steps on sim (packed keys, slots) from scores scoreIn and batch sums P (flags: SELECT_PROTECT, SELECT_PREFETCH), in 8(K+B) + 4K bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(1024, 1) duel_select_shared(
    const int* sim, long long W, int K, int B, int flags, const double* scoreIn, const long long* P,
    int* evicted, int* kept, double* scoreOut) {
    DYNAMIC_SHARED(unsigned long long, dyn);
    selectPacked(sim, W, K, B, flags, scoreIn, P, dyn, (int*)(dyn + K + B), evicted, kept, scoreOut);
}

// evicted, kept, scoreOut = the B DUEL steps on sim (packed keys, slots) from scores scoreIn and batch sums P (flags: SELECT_PROTECT, SELECT_PREFETCH), U (K+B values) in global scratch
extern "C" __global__ void __launch_bounds__(1024, 1) duel_select_global(
    const int* sim, long long W, int K, int B, int flags, const double* scoreIn, const long long* P,
    unsigned long long* U, int* evicted, int* kept, double* scoreOut) {
    selectPacked(sim, W, K, B, flags, scoreIn, P, U, kept + K, evicted, kept, scoreOut);
}
