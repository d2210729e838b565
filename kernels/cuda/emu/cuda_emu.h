// cuda_emu.h: runs CUDA kernel sources on the CPU, for machines without a
// GPU. A .cu file included after this header compiles with g++ -std=c++20;
// emu::launch runs a kernel block after block. The threads of a block are
// fibers (ucontext) on one OS thread, switched only where CUDA threads
// synchronise: __syncthreads is a barrier of the block, and the warp
// intrinsics (__shfl_down_sync, __ballot_sync) exchange values between the
// lanes of a warp through a barrier of the warp (so do the tensor-core
// mma_tf32_m16n8k8 and mma_bf16_m16n8k16, with PTX's fragment layouts and
// conversions: see gemm_tc.cu; so does ldmatrix_x4), and cp.async's
// copies land in shared memory only at the issuing thread's
// cp.async.wait_group. A barrier that can never
// complete (a __syncthreads reached by some threads only) aborts with a
// message. A kernel exported with a cluster shape (EMU_EXPORT_CLUSTER:
// sm_90's thread-block clusters, __cluster_dims__) runs the blocks of
// each cluster together, all their fibers in one scheduler: each block
// keeps its own barriers and its own dynamic shared memory, cluster_sync
// is a barrier of every thread of the cluster, and st_cluster_u64 (PTX's
// mapa + st.shared::cluster) stores into the same offset of another
// block's dynamic shared memory (static __shared__ variables are one per
// kernel, as for blocks run one after another: a cluster kernel keeps its
// per-block state in dynamic shared memory). sm_90's mbarriers and bulk
// copies (cp.async.bulk, multicast into a cluster's blocks) are
// bulk_emu.h's. A kernel exported with EMU_EXPORT_CONCURRENT runs groups
// of consecutive blocks together the same way, without a cluster (blocks
// that wait for each other through global memory). Outside clusters,
// after each release of a block-wide barrier one warp drawn
// pseudo-randomly stalls for a few rounds while the others run
// (warpStall), and a thread that polls a counter (poll_pause) yields to
// the others. This checks the kernels'
// index arithmetic, loops, barriers and reductions; it does not model
// timing, memory coalescing, or the floating-point contractions (FMA)
// nvcc may choose.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <math.h>
#include <setjmp.h>
#include <ucontext.h>
#include <algorithm>
#include <functional>
#include <map>
#include <type_traits>
#include <utility>
#include <vector>

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace emu {
// AsyncCopy is one cp.async of a thread not yet landed in shared memory:
// the bytes read from global memory when it was issued, and its group
// (the number of commits the thread had made then).
struct AsyncCopy {
    void* dst;
    unsigned char data[16];
    int bytes, group;
};

// MBar is an mbarrier object (sm_90's mbarrier.*, bulk_emu.h): the
// arrivals a phase expects, those the current phase still expects, the
// transaction bytes it still expects (negative while copies completed
// before their arrive.expect_tx), and the phases completed so far.
struct MBar {
    unsigned count = 0;
    int pending = 0;
    long long tx = 0;
    unsigned phase = 0;
};

// WgOp is one wgmma.mma_async of a thread in flight (see wgmmaIssue): the
// accumulators it updates, its descriptors and k, its group (the thread's
// wgmma commits when it was issued), whether it adds to the accumulators
// (scale-d 1) or ignores them (0), the accumulators it started from and
// the result formed from shared memory when it was issued.
struct WgOp {
    float* d;
    uint64_t da, db;
    int kdim, group;
    bool acc;
    int n;                    // columns of D: 256 or 128 (n/2 accumulators a thread)
    float in[128], out[128];
};

// Fiber is one emulated CUDA thread.
struct Fiber {
    ucontext_t ctx;  // used once, to start the fiber on its stack
    jmp_buf jb;      // where it resumes afterwards
    bool started = false;
    dim3 tid;
    int waiting = -1;  // barrier id it waits on: 0 block, 1+w warp w, then warpgroups (wgBarrier); -1 runnable
    bool done = false;
    std::vector<AsyncCopy> async;  // its cp.async not yet waited for, oldest first
    int commits = 0;               // its cp.async.commit_group so far
    std::vector<struct WgOp> wg;   // its wgmma not yet waited for, oldest first
    int wgCommits = 0;             // its wgmma.commit_group so far
    int wgWaitN = 0;               // the n of its wgmma.wait_group in progress
    unsigned mbarOff = 0;          // the mbarrier it waits on (waiting mbarWaiting), by shared offset,
    unsigned mbarParity = 0;       // and the parity of the phase it waits for
};

struct Block {
    dim3 idx;                      // blockIdx
    unsigned rank = 0;             // in its cluster
    std::vector<uint64_t> shared;  // its dynamic shared memory, then the canary
    std::vector<Fiber> fibers;
    std::vector<int> arrived;      // per barrier: fibers arrived
    std::vector<int> expected;     // per barrier: fibers that must arrive
    std::vector<uint64_t> slot;    // one exchange slot per thread
    std::vector<uint32_t> frag;    // mma operand fragments, 6 words per thread
    std::map<unsigned, MBar> mbars;  // its mbarriers by shared offset
    jmp_buf sched;
    unsigned cur = 0;
};
inline dim3 bIdx, bDim, gDim;
inline Block* blk;

// Dynamic shared memory (DYNAMIC_SHARED): sharedBytes per block, set by
// EMU_EXPORT from the launch (0 for direct emu::launch calls), filled with
// garbage before each block and followed by a canary checked after it.
inline unsigned sharedBytes = 0;
constexpr unsigned sharedCanary = 64;
inline void* dynamicShared() { return blk->shared.data(); }

// Clusters: clusterX blocks along x (1: none) run together, set by
// EMU_EXPORT_CLUSTER around a launch; cluster holds the running cluster's
// blocks, and clusterArrived counts the threads at its barrier
// (clusterBarrier, a waiting id of its own).
inline unsigned clusterX = 1;
// concurrentBlocks is the number of consecutive blocks a launch of a
// kernel exported with EMU_EXPORT_CONCURRENT runs together, all their
// fibers in one scheduler as a cluster's but without a cluster (their
// barriers, shared memory and warp stalls their own; static __shared__
// variables, one per kernel, shared: such a kernel keeps its per-block
// state in dynamic shared memory), so that blocks that wait for each
// other through global memory (flags.cuh) run as on a GPU, where several
// are resident at once; at most maxConcurrent.
inline unsigned concurrentBlocks = 1;
constexpr unsigned maxConcurrent = 8;
inline std::vector<Block>* cluster;
inline unsigned clusterArrived = 0;
constexpr int clusterBarrier = 1 << 30;
// After the n-th release of a cluster barrier, block n % (clusterX + 1)
// of the cluster (none for clusterX) stalls for clusterStallRounds rounds
// of the scheduler while other fibers can run (see launch).
inline unsigned clusterReleases = 0, clusterStalled = 0, clusterStallLeft = 0;
constexpr unsigned clusterStallRounds = 64;
// Outside clusters, after each release of a block-wide barrier
// (__syncthreads or a named bar.sync), one warp of the block drawn from a
// pseudo-random sequence (warpReleases: its state, from the launch's
// number in the process, the block's and $DUEL_EMU_SEED; or none, one
// draw in warps + 1) stalls for warpStallRounds rounds of the scheduler
// (warpStall: the rounds left of each warp's stall), so that the block's
// other warps run ahead of it: a write of the stalled warp that another
// warp reads without a barrier between them, or after a counter it was
// to be ordered before, shows.
inline uint64_t warpReleases = 0;
inline uint64_t launches = 0;  // launches so far in the process: each block's sequence starts from its own state

// stallSeed is $DUEL_EMU_SEED (0 when unset): another seed draws other
// warps to stall, for hunting races with several runs of the same tests.
inline uint64_t stallSeed() {
    static const uint64_t seed = [] {
        const char* v = std::getenv("DUEL_EMU_SEED");
        return v ? std::strtoull(v, nullptr, 10) : 0ull;
    }();
    return seed;
}
inline unsigned warpStall[32 * maxConcurrent];  // warp w of the group's block r at 32 r + w
constexpr unsigned warpStallRounds = 16;

// stack returns the reusable stack of fiber t (64 KiB, never freed).
inline char* stack(unsigned t) {
    static std::vector<char*> stacks;
    while (stacks.size() <= t) stacks.push_back((char*)std::malloc(64 << 10));
    return stacks[t];
}

inline Fiber& self() { return blk->fibers[blk->cur]; }

// wgBarrier is the barrier id of thread t's warpgroup (after the block's
// and the warps').
inline unsigned wgBarrier(unsigned t) { return 1 + (bDim.x * bDim.y * bDim.z + 31) / 32 + t / 128; }

// clusterWait arrives at the cluster's barrier and switches to the
// scheduler until every thread of the cluster has arrived.
inline void clusterWait() {
    unsigned n = 0;
    for (auto& b : *cluster) n += b.fibers.size();
    if (++clusterArrived == n) {
        clusterArrived = 0;
        clusterStalled = clusterReleases++ % (cluster->size() + 1);
        clusterStallLeft = clusterStallRounds;
        for (auto& b : *cluster)
            for (auto& f : b.fibers)
                if (f.waiting == clusterBarrier) f.waiting = -1;
        return;
    }
    self().waiting = clusterBarrier;
    if (!_setjmp(self().jb)) _longjmp(blk->sched, 1);
}

// namedBarriers is the number of barrier ids bar.sync may name (0 to 15:
// 0 is the block's, __syncthreads); barrier slot of id i > 0 follows the
// block's, the warps' and the warpgroups' (namedBarrier).
constexpr unsigned namedBarriers = 16;

// namedBarrier is the slot of bar.sync's barrier id in the block's
// arrived and expected counts.
inline unsigned namedBarrier(unsigned id) {
    const unsigned nw = (bDim.x * bDim.y * bDim.z + 31) / 32;
    return 1 + nw + nw / 4 + id - 1;
}

// pauses counts poll_pause calls since the launch began; a launch that
// polls more than maxPauses times aborts (a counter that never reaches
// what its readers wait for).
inline unsigned long long pauses = 0;
constexpr unsigned long long maxPauses = 1ull << 26;

// pause switches to the scheduler, the thread staying runnable: another
// thread of the block runs before it polls again.
inline void pause() {
    if (++pauses > maxPauses) {
        std::fprintf(stderr, "emu: block (%u,%u,%u) polled %llu times: a counter its threads wait for never reaches its value\n", bIdx.x, bIdx.y,
                     bIdx.z, pauses);
        std::exit(2);
    }
    if (!_setjmp(self().jb)) _longjmp(blk->sched, 1);
}

// wait arrives at barrier id and switches to the scheduler until the
// barrier completes.
inline void wait(int id) {
    Block& b = *blk;
    if (++b.arrived[id] == b.expected[id]) {
        b.arrived[id] = 0;
        for (auto& f : b.fibers)
            if (f.waiting == id) f.waiting = -1;
        if (!cluster && (id == 0 || id >= (int)namedBarrier(1))) {  // the block's or a named barrier
            const unsigned nw = (bDim.x * bDim.y * bDim.z + 31) / 32;
            warpReleases = warpReleases * 6364136223846793005ull + 1442695040888963407ull;  // Knuth's MMIX LCG
            if (const unsigned w = (unsigned)(warpReleases >> 33) % (nw + 1); w < nw) warpStall[32 * b.rank + w] = warpStallRounds;
        }
        return;  // the last to arrive goes on
    }
    self().waiting = id;
    if (!_setjmp(self().jb)) _longjmp(b.sched, 1);  // _setjmp/_longjmp: no signal-mask system calls
}
}  // namespace emu

#define threadIdx (emu::self().tid)
#define blockIdx (emu::bIdx)
#define blockDim (emu::bDim)
#define gridDim (emu::gDim)
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __cluster_dims__(...)
#define __shared__ static
// DYNAMIC_SHARED(T, name) is CUDA's extern __shared__ T name[]: the
// launch's dynamic shared memory (a .cu defines it as such when the
// emulator has not).
#define DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(emu::dynamicShared())

inline void __syncthreads() { emu::wait(0); }

// bar_named is bar.sync id, n (flags.cuh): a barrier of the n threads that
// use id; every use of an id in a block must name the same n, and id 0 is
// __syncthreads's.
inline void bar_named(unsigned id, unsigned n) {
    if (id == 0 || id >= emu::namedBarriers || n % 32 != 0 || n == 0 || n > emu::bDim.x * emu::bDim.y * emu::bDim.z) {
        std::fprintf(stderr, "emu: bar.sync %u, %u in a block of %u threads: expected an id from 1 to 15 and a multiple of 32 up to the block\n", id,
                     n, emu::bDim.x * emu::bDim.y * emu::bDim.z);
        std::exit(2);
    }
    const unsigned slot = emu::namedBarrier(id);
    int& want = emu::blk->expected[slot];
    if (want == 0) want = (int)n;
    if (want != (int)n) {
        std::fprintf(stderr, "emu: bar.sync %u with %u threads, earlier with %d in block (%u,%u,%u)\n", id, n, want, emu::bIdx.x, emu::bIdx.y, emu::bIdx.z);
        std::exit(2);
    }
    emu::wait((int)slot);
}

// ld_acquire_gpu is ld.acquire.gpu.s32 (flags.cuh): the emulator's threads
// see every write at once.
inline int ld_acquire_gpu(const int* p) { return *reinterpret_cast<const volatile int*>(p); }

// poll_pause is flags.cuh's pause between two polls: the thread yields to
// the block's others (emu::pause). The launch's pauses are counted there
// (a launch that polls too often aborts); polls, the device's count of
// one wait, is not used.
inline void poll_pause(unsigned& polls) {
    (void)polls;
    emu::pause();
}

inline double __longlong_as_double(long long v) {
    double d;
    std::memcpy(&d, &v, 8);
    return d;
}

inline float __int_as_float(int v) {
    float f;
    std::memcpy(&f, &v, 4);
    return f;
}

inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline void __threadfence() {}

// uint4 is CUDA's vector of four unsigned (16-byte aligned).
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};

// float4 is CUDA's vector of four floats (16-byte aligned), make_float4
// its constructor.
struct alignas(16) float4 {
    float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

// __dp2a_lo and __dp2a_hi are dp2a.lo.s32.s32 and dp2a.hi.s32.s32: c plus
// the two signed 16-bit halves of a times two signed bytes of b (bytes 0
// and 1, or 2 and 3), in wrapping 32-bit arithmetic.
inline int emuDp2a(int a, int b, int c, int sh) {
    const int64_t s = (int64_t)(int16_t)(a & 0xffff) * (int8_t)((b >> sh) & 0xff) + (int64_t)(int16_t)((unsigned)a >> 16) * (int8_t)((b >> (sh + 8)) & 0xff);
    return (int)(uint32_t)((int64_t)c + s);
}
inline int __dp2a_lo(int a, int b, int c) { return emuDp2a(a, b, c, 0); }
inline int __dp2a_hi(int a, int b, int c) { return emuDp2a(a, b, c, 16); }

// clusterRank is %cluster_ctarank, clusterSync barrier.cluster.arrive
// then wait (every thread of the cluster), and storeCluster64 stores v at
// p's offset in the dynamic shared memory of block rank of the cluster
// (mapa.shared::cluster + st.shared::cluster.u64), as duel_cluster.cu
// names them; outside a cluster launch they abort.
inline void emuNeedCluster(const char* what) {
    if (!emu::cluster) {
        std::fprintf(stderr, "emu: %s outside a cluster launch (EMU_EXPORT_CLUSTER)\n", what);
        std::exit(2);
    }
}
inline unsigned clusterRank() {
    emuNeedCluster("%cluster_ctarank");
    return emu::blk->rank;
}
inline void clusterSync() {
    emuNeedCluster("barrier.cluster");
    emu::clusterWait();
}
template <class T>
inline void emuStoreCluster(T* p, unsigned rank, T v, const char* what) {
    emuNeedCluster(what);
    const uintptr_t off = reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(emu::blk->shared.data());
    if (rank >= emu::cluster->size() || off % sizeof(T) != 0 || off + sizeof(T) > emu::sharedBytes) {
        std::fprintf(stderr, "emu: %s to block %u of %zu at offset %ld of %u bytes of dynamic shared memory\n", what, rank,
                     emu::cluster->size(), (long)off, emu::sharedBytes);
        std::exit(2);
    }
    std::memcpy(reinterpret_cast<char*>((*emu::cluster)[rank].shared.data()) + off, &v, sizeof(T));
}
inline void storeCluster64(unsigned long long* p, unsigned rank, unsigned long long v) {
    emuStoreCluster(p, rank, v, "st.shared::cluster.u64");
}
// storeCluster32 is storeCluster64 for an int (st.shared::cluster.u32).
inline void storeCluster32(int* p, unsigned rank, int v) { emuStoreCluster(p, rank, v, "st.shared::cluster.u32"); }

inline unsigned emuThread() { return emu::blk->cur; }

// emuShuffle is a warp shuffle: every lane deposits v, the warp meets,
// each lane reads the value of lane from(lane, width) (its own v when that
// is not a lane of the warp, width being the warp's lane count), and the
// warp meets again before the slots are reused.
template <class T, class F>
T emuShuffle(T v, F from) {
    static_assert(sizeof(T) <= 8, "shuffle of more than 8 bytes");
    const unsigned t = emuThread(), w = t / 32, lane = t % 32;
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    emu::blk->slot[t] = bits;
    emu::wait(1 + w);
    T out = v;
    const unsigned width = emu::blk->expected[1 + w], src = from(lane, width);
    if (src < width) std::memcpy(&out, &emu::blk->slot[32 * w + src], sizeof(T));
    emu::wait(1 + w);
    return out;
}

template <class T>
T __shfl_down_sync(unsigned, T v, int s) {
    return emuShuffle(v, [s](unsigned lane, unsigned) { return lane + (unsigned)s; });
}

// emuWarpFold is a warp collective: every lane deposits v, the warp meets,
// every lane folds the lanes' values in lane order (m = fold(m, lane,
// value) from m = 0), and the warp meets again before the slots are reused.
template <class F>
inline unsigned emuWarpFold(uint64_t v, F fold) {
    const unsigned t = emuThread(), w = t / 32;
    emu::blk->slot[t] = v;
    emu::wait(1 + w);
    unsigned m = 0;
    for (unsigned l = 0; l < (unsigned)emu::blk->expected[1 + w]; l++) m = fold(m, l, emu::blk->slot[32 * w + l]);
    emu::wait(1 + w);
    return m;
}

// __shfl_sync returns lane src's v in every lane of the warp.
template <class T>
T __shfl_sync(unsigned, T v, int src) {
    return emuShuffle(v, [src](unsigned, unsigned) { return (unsigned)(src & 31); });
}

// clock64 is the SM's cycle counter; the emulator has no cycles, so it
// counts its calls (increasing, as a kernel's deltas need).
inline long long clock64() {
    static long long calls = 0;
    return ++calls;
}

// __syncwarp is a barrier of the warp.
inline void __syncwarp(unsigned = 0xffffffffu) { emu::wait(1 + emuThread() / 32); }

// atomicAdd (on an int or an unsigned long long) and atomicMin (on an
// int): the emulator's threads switch only at barriers, so a plain
// read-modify-write is atomic; they return the old value.
inline int atomicAdd(int* p, int v) {
    const int o = *p;
    *p += v;
    return o;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    const unsigned long long o = *p;
    *p += v;
    return o;
}
inline int atomicMin(int* p, int v) {
    const int o = *p;
    *p = v < o ? v : o;
    return o;
}

inline unsigned __ballot_sync(unsigned, bool p) {
    return emuWarpFold(p, [](unsigned m, unsigned l, uint64_t x) { return x ? m | 1u << l : m; });
}

// __reduce_max_sync is sm_80's warp maximum (REDUX; duel.cu's warpMax uses
// it from sm_80 on when DUEL_REDUX is defined, and H100s run that path).
inline unsigned __reduce_max_sync(unsigned, unsigned v) {
    return emuWarpFold(v, [](unsigned m, unsigned, uint64_t x) { return m > x ? m : (unsigned)x; });
}

// Tensor-core operations (sm_80): the PTX conversions bit for bit and
// mma.sync as a warp collective with PTX's fragment layouts (see
// gemm_tc.cu). tf32_round is cvt.rna.tf32.f32: to 10 mantissa bits, to
// nearest, ties away from zero (add half an ULP of TF32 to the magnitude,
// then truncate), NaN stays NaN.
inline unsigned tf32_round(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffffffu;
    return (u + 0x1000u) & 0xffffe000u;
}

// bf16_round returns x rounded to bfloat16 (to nearest, ties to even) as
// its 16 bits; NaN stays NaN.
inline uint32_t bf16_round(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

// bf16x2_round is cvt.rn.bf16x2.f32: lo and hi rounded to bfloat16, lo in
// the lower 16 bits.
inline unsigned bf16x2_round(float lo, float hi) { return bf16_round(lo) | bf16_round(hi) << 16; }

namespace emu {
inline float bitsFloat(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// mma computes d = A*B + d for one 16 x 8 x kdim tile of the warp (kdim 8:
// TF32 operands, m16n8k8; kdim 16: pairs of bf16, m16n8k16): every lane
// deposits its fragments, the warp meets at a barrier, every lane reads
// the elements of A and B it needs from their owners' fragments by PTX's
// layout, and the warp meets again before the buffer is reused. The
// products are exact, their sum with d is formed in double and rounded to
// float once (the tensor core's order and internal rounding are not
// modelled: a hardware result may differ in the last bits).
inline void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2], int kdim) {
    const unsigned th = emuThread(), w = th / 32, lane = th % 32;
    if (blk->expected[1 + w] != 32) {
        std::fprintf(stderr, "emu: mma.sync in a warp of %d threads (needs all 32)\n", blk->expected[1 + w]);
        std::exit(2);
    }
    uint32_t* f = &blk->frag[6 * th];
    for (int i = 0; i < 4; i++) f[i] = a[i];
    f[4] = b[0], f[5] = b[1];
    wait(1 + w);
    const uint32_t* wf = &blk->frag[6 * 32 * w];
    // A(r, k) and B(k, n), by PTX's "Matrix Fragments for mma.m16n8k8"
    // (.tf32) and "for mma.m16n8k16 with floating point type" (.bf16),
    // with groupID = lane >> 2 and threadID_in_group = lane % 4.
    auto A = [&](int r, int k) -> double {
        if (kdim == 8) {  // a_i: row groupID (+8 for a1, a3), col threadID_in_group (+4 for a2, a3)
            const int owner = (r % 8) * 4 + k % 4, reg = (r >= 8) + 2 * (k >= 4);
            return bitsFloat(wf[6 * owner + reg] & 0xffffe000u);
        }
        // a0..a7 in four registers, two per register (lower index low):
        // row groupID for a0,a1,a4,a5 (+8 otherwise), col
        // threadID_in_group*2 + (i & 1) (+8 for i >= 4)
        const int owner = (r % 8) * 4 + (k % 8) / 2, reg = (r >= 8) + 2 * (k >= 8);
        return bitsFloat((wf[6 * owner + reg] >> (16 * (k & 1)) & 0xffffu) << 16);
    };
    auto B = [&](int k, int n) -> double {
        if (kdim == 8) {  // b0, b1: row threadID_in_group (+4 for b1), col groupID
            const int owner = n * 4 + k % 4, reg = 4 + (k >= 4);
            return bitsFloat(wf[6 * owner + reg] & 0xffffe000u);
        }
        // b0..b3, two per register: row threadID_in_group*2 + (i & 1)
        // (+8 for i >= 2), col groupID
        const int owner = n * 4 + (k % 8) / 2, reg = 4 + (k >= 8);
        return bitsFloat((wf[6 * owner + reg] >> (16 * (k & 1)) & 0xffffu) << 16);
    };
    float out[4];
    const int g = lane >> 2, t = lane & 3;
    for (int q = 0; q < 4; q++) {  // c_q: row groupID (+8 for q >= 2), col threadID_in_group*2 + (q & 1)
        const int r = g + 8 * (q >> 1), n = 2 * t + (q & 1);
        double s = d[q];
        for (int k = 0; k < kdim; k++) s += A(r, k) * B(k, n);
        out[q] = (float)s;
    }
    wait(1 + w);
    for (int q = 0; q < 4; q++) d[q] = out[q];
}
}  // namespace emu

// mma_tf32_m16n8k8 is mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// d, a, b, d on the emulator.
inline void mma_tf32_m16n8k8(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { emu::mma(d, a, b, 8); }

// mma_bf16_m16n8k16 is mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// d, a, b, d on the emulator.
inline void mma_bf16_m16n8k16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) { emu::mma(d, a, b, 16); }

// Asynchronous copies from global to shared memory (sm_80's cp.async), as
// PTX's "Data Movement and Conversion Instructions: cp.async" describes
// them: cp.async.{ca,cg}.shared.global [dst], [src], cp-size, src-size
// copies src-size bytes and zero-fills the rest of cp-size (both addresses
// aligned to cp-size); the copy is asynchronous, and only
// cp.async.commit_group (which closes the thread's group of copies issued
// since its last commit) followed by cp.async.wait_group N (the thread
// waits until at most its N most recent committed groups are pending)
// guarantees that it has landed and is visible to the thread (to others
// after a barrier). The emulator reads the source when the copy is issued
// and writes shared memory only when the issuing thread's wait_group
// covers it, so a read before the wait sees the old contents; copies
// never committed are never written.
namespace emu {
inline void asyncCopy(void* dst, const void* src, int cpSize, int srcSize) {
    if (reinterpret_cast<uintptr_t>(dst) % cpSize != 0 || reinterpret_cast<uintptr_t>(src) % cpSize != 0 || srcSize < 0 ||
        srcSize > cpSize) {
        std::fprintf(stderr, "emu: cp.async of %d bytes (src-size %d) from %p to %p: misaligned or bad size\n", cpSize, srcSize, src, dst);
        std::exit(2);
    }
    Fiber& f = self();
    AsyncCopy c{dst, {}, cpSize, f.commits};
    std::memcpy(c.data, src, srcSize);
    f.async.push_back(c);
}
inline void asyncWait(int n) {
    Fiber& f = self();
    size_t kept = 0;
    for (size_t i = 0; i < f.async.size(); i++) {
        AsyncCopy& c = f.async[i];
        if (c.group < f.commits - n)
            std::memcpy(c.dst, c.data, c.bytes);
        else
            f.async[kept++] = c;
    }
    f.async.resize(kept);
}
}  // namespace emu

#include "bulk_emu.h"

// ldmatrix_x4 is ldmatrix.sync.aligned.m8n8.x4.shared.b16 r, [row], a warp
// collective as PTX's "Warp-level matrix load instruction: ldmatrix"
// describes it: four 8 x 8 matrices of 16-bit elements, lanes 8i .. 8i+7
// giving the addresses of rows 0..7 of matrix i (16 bytes each, 16-byte
// aligned); lane l receives in r[i] the two elements of matrix i at row
// l / 4, columns 2*(l % 4) and 2*(l % 4) + 1 (lower column in the lower
// half): word l % 4 of row l / 4. Every lane deposits its row address,
// the warp meets, every lane gathers its words, the warp meets again.
inline void ldmatrix_x4(unsigned (&r)[4], const unsigned* row) {
    const unsigned th = emuThread(), w = th / 32, lane = th % 32;
    if (emu::blk->expected[1 + w] != 32) {
        std::fprintf(stderr, "emu: ldmatrix in a warp of %d threads (needs all 32)\n", emu::blk->expected[1 + w]);
        std::exit(2);
    }
    if (reinterpret_cast<uintptr_t>(row) % 16 != 0) {
        std::fprintf(stderr, "emu: ldmatrix row address %p not 16-byte aligned\n", (const void*)row);
        std::exit(2);
    }
    emu::blk->slot[th] = reinterpret_cast<uintptr_t>(row);
    emu::wait(1 + w);
    unsigned out[4];
    for (int i = 0; i < 4; i++) out[i] = reinterpret_cast<const unsigned*>(emu::blk->slot[32 * w + 8 * i + lane / 4])[lane % 4];
    emu::wait(1 + w);
    for (int i = 0; i < 4; i++) r[i] = out[i];
}

// cp_async16_if is cp.async.cg.shared.global [dst], [src], 16, !ok: the
// 16 bytes at src when ok, else zeros.
inline void cp_async16_if(void* dst, const void* src, bool ok) { emu::asyncCopy(dst, src, 16, ok ? 16 : 0); }

// cp_async4_if is cp.async.ca.shared.global [dst], [src], 4, !ok.
inline void cp_async4_if(void* dst, const void* src, bool ok) { emu::asyncCopy(dst, src, 4, ok ? 4 : 0); }

// cp_async_commit is cp.async.commit_group.
inline void cp_async_commit() { emu::self().commits++; }

// cp_async_wait<N> is cp.async.wait_group N.
template <int N>
inline void cp_async_wait() { emu::asyncWait(N); }

// Warpgroup MMA (sm_90a's wgmma.mma_async, gemm_wg.cu and conv_wg.cu), as
// PTX's "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"
// describes it for the forms they use: D (64 x n, FP32, n 256 or 128) +=
// A (64 x k) * B (n x k)^T, A and B K-major in shared memory behind matrix descriptors
// with 128-byte swizzling (mode 1). A descriptor's start address (bits
// 0-13, in 16 bytes) and stride byte offset (bits 32-45, in 16 bytes:
// between groups of 8 rows) place element (r, k) of a kdim-deep operand
// (4-byte TF32 for k 8, 2-byte bf16 for k 16) at byte start + (r/8)*SBO +
// (r%8)*128 + k*size, whose bits 4-6 are then XORed with its bits 7-9.
// Thread t of a warpgroup (warp w = t/32 in it, lane l, g = l/4, q = l%4)
// holds d[4i + 2h + u] = D[16w + g + 8h][8i + 2q + u] (i < n/8). TF32 operands are
// read truncated to their 19 bits, as the tensor cores read them; each
// product is exact and the sum with d is rounded to float once (as emu::mma).
// The shared addresses are offsets in the block's dynamic shared memory
// (smem_u32).
//
// The operation is asynchronous: the emulator forms each thread's result
// when the wgmma is issued (from the accumulators as the thread's earlier
// wgmma in flight leave them) and again when wgmma.wait_group covers its
// group, and aborts if the two differ (shared memory changed in between:
// a stage overwritten before the products were waited for, or one read
// before its copies landed and became visible) or if the thread changed
// its accumulators while the wgmma was in flight; only then are the
// accumulators written. At both points it also aborts if a cp.async of
// the block not yet landed (the emulator lands a thread's copies at its
// cp.async.wait_group) targets the operands: on a GPU it could land at
// any moment while the tensor cores read.
namespace emu {
// wgAddr is the byte offset in shared memory of element (r, k) of a
// descriptor's kdim-deep operand: the row's place in its group of 8 and
// the group's (SBO), the element's in the row, then bits 4-6 XORed with
// bits 7-9 (the 128-byte swizzle).
inline uint64_t wgAddr(uint64_t desc, int r, int k, int kdim) {
    const unsigned size = kdim == 8 ? 4 : 2;
    const uint64_t start = (desc & 0x3FFF) << 4, sbo = ((desc >> 32) & 0x3FFF) << 4;
    const uint64_t a = start + (r / 8) * sbo + (r % 8) * 128 + k * size;
    return a ^ (((a >> 7) & 7) << 4);
}
inline double wgElem(uint64_t desc, int r, int k, int kdim) {
    if (desc >> 62 != 1 || ((desc >> 49) & 7) != 0) {
        std::fprintf(stderr, "emu: wgmma descriptor %#llx: only 128-byte swizzling with base offset 0 is emulated\n", (unsigned long long)desc);
        std::exit(2);
    }
    const unsigned size = kdim == 8 ? 4 : 2;
    const uint64_t a = wgAddr(desc, r, k, kdim);
    if (a + size > sharedBytes) {
        std::fprintf(stderr, "emu: wgmma operand byte %llu beyond the %u bytes of dynamic shared memory\n", (unsigned long long)a, sharedBytes);
        std::exit(2);
    }
    const unsigned char* p = static_cast<const unsigned char*>(dynamicShared()) + a;
    uint32_t u = 0;
    if (size == 4) {
        std::memcpy(&u, p, 4);
        u &= 0xffffe000u;
    } else {
        uint16_t h;
        std::memcpy(&h, p, 2);
        u = (uint32_t)h << 16;
    }
    return bitsFloat(u);
}
inline void wgCompute(const WgOp& op, float* out, unsigned thread) {
    const unsigned t = thread % 128, w = t / 32, l = t % 32;
    double a[2][16], b[64][16];  // the thread's two rows of A and 64 columns of D's B rows
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < op.kdim; k++) a[h][k] = wgElem(op.da, 16 * w + l / 4 + 8 * h, k, op.kdim);
    for (int i = 0; i < op.n / 8; i++)
        for (int u = 0; u < 2; u++)
            for (int k = 0; k < op.kdim; k++) b[2 * i + u][k] = wgElem(op.db, 8 * i + 2 * (l % 4) + u, k, op.kdim);
    for (int i = 0; i < op.n / 8; i++)
        for (int x = 0; x < 4; x++) {
            double s = op.acc ? op.in[4 * i + x] : 0.;
            for (int k = 0; k < op.kdim; k++) s += a[x >> 1][k] * b[2 * i + (x & 1)][k];
            out[4 * i + x] = (float)s;
        }
}
// wgChunk returns the byte offset of the 16-byte chunk of shared memory
// holding element (r, k) of a descriptor's operand (see wgElem).
inline uint64_t wgChunk(uint64_t desc, int r, int k, int kdim) { return wgAddr(desc, r, k, kdim) & ~(uint64_t)15; }

// wgCheckCopies aborts if a cp.async of any thread of the block, or a
// bulk copy (bulk_emu.h), not yet landed writes into the shared memory op
// reads (when: "issued" or "waited for"): on a GPU the copy may land
// while the tensor cores read.
// The first thread of each warpgroup checks, for the warpgroup.
inline void wgCheckCopies(const WgOp& op, const char* when, unsigned thread) {
    if (thread % 128 != 0) return;
    std::vector<bool> used(sharedBytes / 16 + 1);
    for (int k = 0; k < op.kdim; k++) {
        for (int r = 0; r < 64; r++) used[wgChunk(op.da, r, k, op.kdim) / 16] = true;
        for (int r = 0; r < op.n; r++) used[wgChunk(op.db, r, k, op.kdim) / 16] = true;
    }
    const auto* sm = static_cast<const unsigned char*>(dynamicShared());
    for (unsigned long i = 0; i < used.size(); i++)
        if (used[i] && bulkOverlaps(16 * i, 16 * i + 16)) {
            std::fprintf(stderr, "emu: a bulk copy not yet landed writes byte %lu of shared memory, an operand of a wgmma %s\n", 16 * i, when);
            std::exit(2);
        }
    for (const Fiber& f : blk->fibers)
        for (const AsyncCopy& c : f.async) {
            const auto off = static_cast<const unsigned char*>(c.dst) - sm;
            if (off >= 0 && off < (long)sharedBytes && used[off / 16]) {
                std::fprintf(stderr, "emu: a cp.async not yet landed writes byte %ld of shared memory, an operand of a wgmma %s\n", (long)off, when);
                std::exit(2);
            }
        }
}

inline void wgmmaIssue(float* d, int n, uint64_t da, uint64_t db, int kdim, bool acc) {
    if ((emuThread() / 128 + 1) * 128 > bDim.x * bDim.y * bDim.z) {
        std::fprintf(stderr, "emu: wgmma by thread %u of a block of %u threads (its warpgroup of 128 incomplete)\n", emuThread(),
                     bDim.x * bDim.y * bDim.z);
        std::exit(2);
    }
    Fiber& f = self();
    WgOp op{d, da, db, kdim, f.wgCommits, acc, n, {}, {}};
    const float* in = d;
    for (auto it = f.wg.rbegin(); it != f.wg.rend(); ++it)
        if (it->d == d) {
            in = it->out;
            break;
        }
    std::memcpy(op.in, in, sizeof(float) * n / 2);
    wgCompute(op, op.out, emuThread());
    wgCheckCopies(op, "issued", emuThread());
    f.wg.push_back(op);
}
// wgRetire completes thread t's (fiber f's) wgmma of groups older than
// its n most recent: checks them (see wgmmaIssue) and writes their
// accumulators.
inline void wgRetire(Fiber& f, unsigned t, int n) {
    size_t kept = 0;
    for (size_t i = 0; i < f.wg.size(); i++) {
        WgOp& op = f.wg[i];
        if (op.group >= f.wgCommits - n) {
            f.wg[kept++] = op;
            continue;
        }
        const size_t bytes = sizeof(float) * op.n / 2;
        if (std::memcmp(op.d, op.in, bytes) != 0) {
            std::fprintf(stderr, "emu: thread %u changed its accumulators while a wgmma was in flight\n", t);
            std::exit(2);
        }
        wgCheckCopies(op, "waited for", t);
        float again[128];
        wgCompute(op, again, t);
        if (std::memcmp(again, op.out, bytes) != 0) {
            std::fprintf(stderr, "emu: thread %u: the shared memory operands of a wgmma changed between its issue and its wait_group\n", t);
            std::exit(2);
        }
        std::memcpy(op.d, op.out, bytes);
    }
    f.wg.resize(kept);
}

// wgWait is wgmma.wait_group n for the calling thread's warpgroup: a
// wgmma is one operation of the warpgroup's 128 threads, begun once all
// have issued it and complete for all at once, so once any thread's
// wait_group returns the group's shared-memory reads are over for the
// whole warpgroup (one thread may then release the stage: gemm_wgm's
// mbarrier arrivals). The emulator meets the warpgroup there, and the
// last thread to arrive retires every thread's groups (wgRetire) before
// any goes on.
inline void wgWait(int n) {
    Block& b = *blk;
    const unsigned t = emuThread(), id = wgBarrier(t);
    Fiber& f = self();
    f.wgWaitN = n;
    if (++b.arrived[id] < b.expected[id]) {
        f.waiting = (int)id;
        if (!_setjmp(f.jb)) _longjmp(b.sched, 1);
        return;
    }
    b.arrived[id] = 0;
    for (unsigned u = t / 128 * 128; u < t / 128 * 128 + 128; u++) {
        Fiber& g = b.fibers[u];
        if (g.wgCommits != f.wgCommits || g.wgWaitN != n) {
            std::fprintf(stderr, "emu: threads %u and %u of a warpgroup at wgmma.wait_group with %d and %d commits, waiting for %d and %d\n", t, u,
                         f.wgCommits, g.wgCommits, n, g.wgWaitN);
            std::exit(2);
        }
        wgRetire(g, u, n);
        if (g.waiting == (int)id) g.waiting = -1;
    }
}
}  // namespace emu

// smem_u32 is the shared-window address of p: its offset in the block's
// dynamic shared memory.
inline unsigned smem_u32(const void* p) {
    const auto o = static_cast<const unsigned char*>(p) - static_cast<const unsigned char*>(emu::dynamicShared());
    if (o < 0 || o > (long)emu::sharedBytes) {
        std::fprintf(stderr, "emu: smem_u32 of an address outside the dynamic shared memory\n");
        std::exit(2);
    }
    return (unsigned)o;
}

// fence_proxy_async (fence.proxy.async.shared::cta), wg_fence
// (wgmma.fence) and wg_fence_operands order accesses on the GPU; the
// emulator has nothing to order.
inline void fence_proxy_async() {}
inline void wg_fence() {}
template <int N>
inline void wg_fence_operands(float (&)[N]) {}

// wg_commit is wgmma.commit_group, wg_wait<N> wgmma.wait_group N.
inline void wg_commit() { emu::self().wgCommits++; }
template <int N>
inline void wg_wait() { emu::wgWait(N); }

// wgmma_tf32_m64n256k8 and wgmma_bf16_m64n256k16 are
// wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 and
// .m64n256k16.f32.bf16.bf16 (K-major; scale-d acc: 1 adds to d, 0
// ignores its input).
inline void wgmma_tf32_m64n256k8(float (&d)[128], unsigned long long da, unsigned long long db, int acc) {
    emu::wgmmaIssue(d, 256, da, db, 8, acc != 0);
}
inline void wgmma_bf16_m64n256k16(float (&d)[128], unsigned long long da, unsigned long long db, int acc) {
    emu::wgmmaIssue(d, 256, da, db, 16, acc != 0);
}
// wgmma_tf32_m64n128k8 is .m64n128k8.f32.tf32.tf32: D 64 x 128, 64
// accumulators a thread in the same layout (i < 16).
inline void wgmma_tf32_m64n128k8(float (&d)[64], unsigned long long da, unsigned long long db, int acc) {
    emu::wgmmaIssue(d, 128, da, db, 8, acc != 0);
}

namespace emu {
inline std::function<void()> body;
inline void trampoline() {
    body();
    self().done = true;
    _longjmp(blk->sched, 1);
}

// launch runs kernel k on grid x block threads, one block at a time, or
// one cluster of clusterX blocks at a time.
template <class... P, class... A>
void launch(dim3 grid, dim3 block, void (*k)(P...), A... args) {
    gDim = grid;
    bDim = block;
    const unsigned n = block.x * block.y * block.z, nw = (n + 31) / 32, cx = clusterX;
    if (grid.x % cx != 0) {
        std::fprintf(stderr, "emu: grid of %u blocks along x, not a multiple of the cluster's %u\n", grid.x, cx);
        std::exit(2);
    }
    body = [=] { k(P(args)...); };
    pauses = 0;
    launches++;
    // Blocks run in groups, x fastest: a cluster's cx blocks, or
    // concurrentBlocks consecutive blocks of a kernel exported with
    // EMU_EXPORT_CONCURRENT, else one at a time.
    const unsigned total = grid.x * grid.y * grid.z;
    const unsigned gs = cx > 1 ? cx : std::max(1u, std::min(concurrentBlocks, maxConcurrent));
    for (unsigned base = 0; base < total; base += gs) {
        const unsigned cnt = std::min(gs, total - base);
        std::vector<Block> bs(cnt);
        for (unsigned r = 0; r < cnt; r++) {
            Block& b = bs[r];
            const unsigned l = base + r;
            b.idx = dim3(l % grid.x, l / grid.x % grid.y, l / (grid.x * grid.y));
            b.rank = r;
            b.fibers.resize(n);
            b.arrived.assign(namedBarrier(namedBarriers), 0);  // the block's, warps', warpgroups' and named barriers
            b.expected.assign(namedBarrier(namedBarriers), 0);
            b.expected[0] = n;
            for (unsigned w = 0; w < nw; w++) b.expected[1 + w] = std::min(32u, n - 32 * w);
            for (unsigned g = 0; g < nw / 4; g++) b.expected[1 + nw + g] = std::min(128u, n - 128 * g);
            b.slot.assign(n, 0);
            b.frag.assign(6 * n, 0);
            b.shared.assign((sharedBytes + sharedCanary + 7) / 8, 0xa5a5a5a5a5a5a5a5ull);
            for (unsigned t = 0; t < n; t++) {
                Fiber& f = b.fibers[t];
                f.tid = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
                getcontext(&f.ctx);
                f.ctx.uc_stack.ss_sp = stack(r * n + t);
                f.ctx.uc_stack.ss_size = 64 << 10;
                f.ctx.uc_link = nullptr;
                makecontext(&f.ctx, trampoline, 0);
            }
        }
        cluster = cx > 1 ? &bs : nullptr;
        clusterArrived = 0;
        bulkStart();
        // Round robin over runnable fibers until all are done,
        // alternating the direction (and starting point) of the
        // rounds, so that a missing barrier between a write and a
        // read of another thread shows in either order. In a
        // cluster, after each release of its barrier, one block in
        // turn also stalls for a few rounds while others can run,
        // so that the others run ahead of it (a block's writes
        // into another's shared memory that no cluster barrier
        // orders after that block's reads show).
        const unsigned all = cnt * n;
        clusterReleases = 0, clusterStallLeft = 0;
        warpReleases = (launches + stallSeed() * 0xD1B54A32D192ED03ull) * 0x9E3779B97F4A7C15ull + base;
        std::fill(std::begin(warpStall), std::end(warpStall), 0u);
        for (unsigned round = 0;; round++) {
            bool ran = false, left = false, stalled = false;
            const unsigned start = (round * 7919u) % all;
            for (unsigned q = 0; q < all; q++) {
                const unsigned g = (round & 1) ? (start + all - q) % all : (start + q) % all;
                Block& b = bs[g / n];
                const unsigned t = g % n;
                Fiber& f = b.fibers[t];
                if (f.done) continue;
                left = true;
                if (f.waiting >= 0) continue;
                if (clusterStallLeft > 0 && g / n == clusterStalled) {  // from the release on, in this round too
                    stalled = true;
                    continue;
                }
                if (cx == 1 && warpStall[32 * (g / n) + t / 32] > 0) {
                    stalled = true;
                    continue;
                }
                blk = &b;
                bIdx = b.idx;
                b.cur = t;
                ran = true;
                if (!_setjmp(b.sched)) {
                    if (!f.started) {
                        f.started = true;
                        setcontext(&f.ctx);
                    }
                    _longjmp(f.jb, 1);
                }
            }
            if (!left) break;
            if (clusterStallLeft > 0) clusterStallLeft--;
            for (unsigned& w : warpStall)
                if (w > 0) w--;
            if (!ran && stalled) {
                clusterStallLeft = 0;  // only the stalled block or warps can run: the next round runs them
                std::fill(std::begin(warpStall), std::end(warpStall), 0u);
                continue;
            }
            if (!ran) {
                std::fprintf(stderr, "emu: deadlock in block (%u,%u,%u)%s: a barrier some threads never reach\n", bs[0].idx.x, bs[0].idx.y,
                             bs[0].idx.z, cx > 1 ? "'s cluster" : cnt > 1 ? " and the blocks run beside it" : "");
                std::exit(2);
            }
        }
        bulkFinish();
        blk = nullptr;
        cluster = nullptr;
        for (Block& b : bs) {
            const unsigned char* sm = reinterpret_cast<const unsigned char*>(b.shared.data());
            for (unsigned i = sharedBytes; i < sharedBytes + sharedCanary; i++)
                if (sm[i] != 0xa5) {
                    std::fprintf(stderr, "emu: block (%u,%u,%u) wrote byte %u of its %u bytes of dynamic shared memory\n", b.idx.x, b.idx.y,
                                 b.idx.z, i, sharedBytes);
                    std::exit(2);
                }
        }
    }
}

// launchParams launches k with its parameters read from params, laid out as
// cuLaunchKernel's kernelParams (params[i] points at parameter i).
template <class... P, size_t... I>
void launchParams(dim3 grid, dim3 block, void (*k)(P...), void** params, std::index_sequence<I...>) {
    launch(grid, block, k, *static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(params[I])...);
}

// EMU_EXPORT(k) defines extern "C" emu_k(gx, gy, gz, bx, by, bz, shared,
// params), which launches kernel k like cuLaunchKernel with shared bytes of
// dynamic shared memory (see emu/lib_*.cpp), and emu_params_k(sizes),
// which stores the byte size of each of k's parameters in sizes (at most
// 32) and returns their number (the fake driver, fakedriver.cpp, copies
// the parameters of a launch it runs later).
#define EMU_EXPORT(k) EMU_EXPORT_WITH(k, concurrentBlocks, 1)

// EMU_EXPORT_CLUSTER(k, cx) is EMU_EXPORT for a kernel compiled with
// __cluster_dims__(cx, 1, 1): its launches run clusters of cx blocks.
#define EMU_EXPORT_CLUSTER(k, cx) EMU_EXPORT_WITH(k, clusterX, cx)

// EMU_EXPORT_CONCURRENT(k, g) is EMU_EXPORT for a kernel whose blocks
// wait for each other through global memory: its launches run g
// consecutive blocks together (concurrentBlocks).
#define EMU_EXPORT_CONCURRENT(k, g) EMU_EXPORT_WITH(k, concurrentBlocks, g)

// EMU_EXPORT_WITH(k, setting, value) is EMU_EXPORT with emu::setting (a
// grouping of blocks: clusterX or concurrentBlocks, 1 otherwise) set to
// value during k's launches.
#define EMU_EXPORT_WITH(k, setting, value)                                                                  \
    extern "C" void emu_##k(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, \
                            unsigned shared, void** params) {                                              \
        emu::sharedBytes = shared;                                                                          \
        emu::setting = value;                                                                               \
        emu::launchParams(dim3(gx, gy, gz), dim3(bx, by, bz), k, params, std::make_index_sequence<emu::arity(k)>()); \
        emu::setting = 1;                                                                                   \
        emu::sharedBytes = 0;                                                                               \
    }                                                                                                       \
    extern "C" size_t emu_params_##k(size_t* sizes) { return emu::paramSizes(k, sizes); }

template <class... P>
constexpr size_t arity(void (*)(P...)) { return sizeof...(P); }

// paramSizes stores the byte size of each parameter of a kernel in out and
// returns their number.
template <class... P>
size_t paramSizes(void (*)(P...), size_t* out) {
    size_t s[] = {sizeof(std::remove_cv_t<std::remove_reference_t<P>>)..., 0};
    for (size_t i = 0; i < sizeof...(P); i++) out[i] = s[i];
    return sizeof...(P);
}

// Check counts mismatches between got and want with tolerance
// atol + |want|*rtol (NaN matches NaN), printing the first ten (llm.c).
struct Check {
    const char* what;
    int bad = 0;
    void operator()(double got, double want, double atol, double rtol, long long i) {
        bool ok = (std::isnan(got) && std::isnan(want)) || got == want || std::fabs(got - want) <= atol + std::fabs(want) * rtol;
        if (!ok && ++bad <= 10) std::printf("%s: element %lld = %.9g, want %.9g\n", what, i, got, want);
    }
};

// rng is a small deterministic generator (xorshift64*).
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
    uint64_t next() {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        return s * 2685821657736338717ull;
    }
    int intn(int n) { return (int)(next() % (uint64_t)n); }
    double uniform(double lo, double hi) { return lo + (hi - lo) * (double)(next() >> 11) / 9007199254740992.0; }
};
}  // namespace emu
