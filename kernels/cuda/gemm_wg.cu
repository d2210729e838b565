// gemm_wg.cu: batched matrix product on Hopper's warpgroup tensor cores
// (wgmma.mma_async, sm_90a: the PTX loads on compute capability 9.0 only),
// FP32 in and out, the factors rounded as gemm_tc.cu's:
//
//   C[b] = alpha*op(A[b])*op(B[b]) + beta*C[b],   op(X) = X or X^T
//
// in two steps.
//
// 1. gemm_wg_pack_tf32 / gemm_wg_pack_bf16 copy op(A) (M x K) and op(B)^T
//    (N x K) into packed operands: R x K row-major with k contiguous (the
//    "K-major" layout wgmma's TF32 operands require), rows padded to Rp (a
//    multiple of the block tile: 128 for A, 256 for B) and k to whole
//    128-byte rows (32 TF32 or 64 bf16 values, KW words a row), every
//    value rounded once (TF32: cvt.rna.tf32.f32, 10 mantissa bits, to
//    nearest, ties away from zero; BF16: cvt.rn.bf16x2.f32, to nearest
//    even, two per word, the lower k in the lower half), the padding zero.
//    A 32 x 32-word tile goes through shared memory, so that both the
//    reads (along k when op(X) is k-contiguous, along the rows otherwise)
//    and the writes are coalesced.
//
// 2. gemm_wg_tf32 / gemm_wg_bf16 multiply the packed operands: each
//    256-thread block (two warpgroups) computes a 128 x 256 tile of C,
//    warpgroup g its rows 64g .. 64g+63 with wgmma m64n256k8 (TF32) or
//    m64n256k16 (BF16) into 128 FP32 accumulators a thread. The k-tiles
//    of 128 bytes (A: 128 rows, B: 256 rows, 48 KiB) go through a ring of
//    WG_STAGES stages of dynamic shared memory filled with cp.async (16
//    bytes a copy, 12 a thread a stage, no predicate: the packed operands
//    cover every tile; gemm_wg3_tf32 / gemm_wg3_bf16 are the same code
//    with three warpgroups, 384 threads, a 192 x 256 tile, 56 KiB a stage
//    and 9 or 10 copies a thread: a block reads 22% fewer bytes a FLOP
//    from L2, which bounds the two-warpgroup tile on an H100, see
//    docs/cuda.md), two k-tiles ahead of the products, in the
//    128-byte swizzled K-major layout: row r of a tile at byte 128r of it,
//    its 16-byte chunk c at chunk c ^ (r % 8) (address bits 4-6 XOR bits
//    7-9, stages aligned to 1024 bytes), which a matrix descriptor with
//    swizzle mode 1 (128B), stride byte offset 1024 (between groups of 8
//    rows) and the k step's byte offset added to its start address
//    describes. A k-tile: each thread waits for its own copies
//    (cp.async.wait_group), fences them for the async proxy the tensor
//    cores read through (fence.proxy.async.shared::cta), one block
//    barrier, the copies of the k-tile two ahead are issued into the stage
//    the products of two k-tiles before freed, then wgmma.fence, four
//    wgmma (the k steps of the tile, each accumulating onto the last), one
//    commit, and wgmma.wait_group 1: the products of this k-tile stay in
//    flight behind the next barrier and copies, those of the previous one
//    are done (so every thread past the next barrier has finished reading
//    the stage that barrier lets be overwritten).
//
// 3. gemm_wgm_tf32 / gemm_wgm_bf16 (and gemm_wgm3_*, three warpgroups)
//    are the same products fed by bulk copies (cp.async.bulk: the copy
//    engine behind TMA, bulk.cuh) in clusters of two blocks along m
//    (blockIdx.x: m, y: n; __cluster_dims__(2, 1, 1)), which share B's
//    tile: each block copies its own A rows and one half of B's 256 rows
//    into both blocks (.multicast::cluster), so a block reads (BM + 128)
//    x 128 bytes from L2 a k-tile instead of (BM + 256) x 128. Their
//    operands come from gemm_wg_packt_tf32 / gemm_wg_packt_bf16: the same
//    rounded values as gemm_wg_pack_*'s, laid out in units of 64 rows by
//    one 128-byte k-tile (8 KiB: unit r / 64, k-tile kt at byte ((r / 64)
//    * KT + kt) * 8192 of the operand, KT = KW / 32), each unit already in
//    the stage's swizzled layout (row r % 64 at byte 128 (r % 64), chunk
//    c at chunk c ^ (r % 8)), so that one bulk copy of 8 KiB fills 64
//    rows of a stage. Rows are padded to whole clusters (A: 2 BM) and to
//    256 (B). One thread (thread 0) issues a block's copies; two
//    mbarriers a stage order them: "full" (count 1: thread 0's
//    arrive.expect_tx of the stage's bytes, which the copies of both
//    blocks complete) and "empty" (count 2 NWG: the first thread of every
//    warpgroup of the cluster arrives once its products of the stage's
//    k-tile are done, wgmma.wait_group 1 after the next k-tile's). A
//    k-tile g: every thread waits for full (phase parity (g / STAGES) %
//    2), wgmma.fence, four wgmma, commit, wait_group 1, the releases of
//    k-tile g - 1's stage, and thread 0 waits for that stage's empty
//    phase and loads k-tile g - 1 + STAGES into it (into both blocks:
//    their four warpgroups must all be done with it). A batch's first k
//    step sets d = A*B (wgmma's scale-d 0) rather than the accumulators
//    being zeroed inside the pipeline (ptxas then serialises the wgmma).
//    The mbarriers are initialised and fenced (fence.mbarrier_init)
//    before a cluster barrier, and a cluster barrier ends the kernel, so
//    that no block leaves while the other may arrive on its mbarriers.
//    gemm_wgms_tf32 / gemm_wgms_bf16 are gemm_wgm_* warp-specialised: a
//    ninth warp (288 threads) whose first lane issues every k-tile's
//    copies, each once its stage's empty phase has completed, so that no
//    warpgroup stops between its products to wait for the other block.
//    gemm_wgs_tf32 / gemm_wgs_bf16 are gemm_wgms_* without the cluster:
//    each block's producer copies A's units and all four of B's into its
//    own shared memory, and its "empty" mbarriers count its own two
//    warpgroups (on an H200 the clustered kernels ran slower than
//    gemm_wg_*'s cp.async: this one tells whether the cluster or the bulk
//    copies cost it).
//
// 4. gemm_wgp_tf32 / gemm_wgp_bf16 are steps 1 and 2 in one launch, the
//    packing hidden behind the products: 384-thread blocks, warpgroups 0
//    and 1 gemm_wg_*'s product of a 128 x 256 tile, warpgroup 2 a packer
//    that writes gemm_wg_pack_*'s operands (the same values and layout)
//    in pieces of 32 rows by WGP_CHUNK k-tiles, claimed from a counter
//    in global memory by whichever blocks run; the products wait for the
//    count of each chunk's pieces before copying its k-tiles (gemm_wgp
//    below). On an H200 the separate packing took 17-36% of gemm_wg_*'s
//    time (BF16 4096³: 62 of 320 us), the product alone 0.77x torch.mm's
//    time on bfloat16-stored factors.
//
// The accumulators follow PTX's "Register Fragments" for wgmma's D: in
// warp w of the warpgroup, lane l (g = l / 4, t = l % 4) holds
// d[4i + 2h + u] = D[16w + g + 8h][8i + 2t + u]; the epilogue writes
// alpha*d + beta*C (C not read when beta is 0) inside M x N, as gemm_tc's.
//
// The k steps run in gemm_tc's order (k = 0, 8, 16, ...; 16 for BF16),
// each one instruction over all of the block's tile, so on the CPU
// emulator (kernels/cuda/emu/cuda_emu.h, whose wgmma forms each product
// exactly and rounds the sum with d once, as its mma.sync) the results
// are gemm_tc's bit for bit; a GPU's tensor cores may differ in the last
// bits. The emulator reads the operands through the descriptors and the
// swizzle as described above, both when a wgmma is issued and when its
// group is waited for, and aborts if they differ (a stage overwritten
// too early, or read before its copies landed) or if the accumulators
// were touched in between.
//
// Build: go run ./kernels/cuda/gen with a CUDA 12 nvcc for sm_90a (see
// docs/cuda.md); the backend runs these kernels only on compute
// capability 9.0 (and the emulator), when asked (TCKernel TCWG).
// gen: arch 90a

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ != 900
#error "gemm_wg.cu is sm_90a code (wgmma)"
#endif

#include "tc.cuh"

#define WG_BM 128                                          // rows of C per block of gemm_wg_* (two warpgroups of 64)
#define WG3_BM 192                                         // rows of C per block of gemm_wg3_* (three warpgroups)
#define WG_BN 256                                          // columns of C per block
#define WG_STAGES 4                                        // k-tiles in the ring
#define WG_SHARED (WG_STAGES * (WG_BM + WG_BN) * 128 + 1024)    // gemm_wg_*'s dynamic shared memory (1024: alignment slack)
#define WG3_SHARED (WG_STAGES * (WG3_BM + WG_BN) * 128 + 1024)  // gemm_wg3_*'s: 225 KiB of the H100's 227
#define WGM_SHARED (WG_SHARED + 16 * WG_STAGES)                  // gemm_wgm_*'s: gemm_wg_*'s and two mbarriers a stage
#define WGM3_SHARED (WG3_SHARED + 16 * WG_STAGES)                // gemm_wgm3_*'s

#include "bulk.cuh"
#include "cluster.cuh"

#include "wg.cuh"

#include "flags.cuh"

#define WGP_SHARED (WG_SHARED + 16)  // gemm_wgp_*'s dynamic shared memory: gemm_wg_*'s, then the packers' two claims
#define WGP_CHUNK 8          // 128-byte k-tiles a chunk of gemm_wgp_*'s packing: what its products wait for
#define WGP_COUNT_STRIDE 32  // ints between gemm_wgp_*'s counters: each in its own 128-byte line

// wg_pack writes op(X[b]) (R x K; element (r, k) at x[r*ld + k] when
// kcontig, else x[k*ld + r]) into P[b] (Rp x KW words), rounded, zero
// beyond R x K; blocks of 32 x 8 threads, one 32-row by 32-word tile each
// (blockIdx.x: words, blockIdx.y: rows, blockIdx.z: batch, grid-stride).
template <bool BF16, bool TILED>
__device__ __forceinline__ void wg_pack(const float* X, long long ld, long long stride, int kcontig, int R, int K, unsigned* P, int Rp,
                                        int KW, int batch) {
    constexpr int E = BF16 ? 2 : 1;  // k per word
    __shared__ float tile[32][32 * E + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int r0 = blockIdx.y * 32, w0 = blockIdx.x * 32, k0 = w0 * E;
    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        const float* x = X + bz * stride;
        if (kcontig) {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int rr = ty + 8 * j, r = r0 + rr;
#pragma unroll
                for (int e = 0; e < E; e++) {
                    const int k = k0 + tx + 32 * e;
                    tile[rr][tx + 32 * e] = r < R && k < K ? x[(long long)r * ld + k] : 0.f;
                }
            }
        } else {
            const int r = r0 + tx;
#pragma unroll
            for (int j = 0; j < 4 * E; j++) {
                const int kk = ty + 8 * j, k = k0 + kk;
                tile[tx][kk] = r < R && k < K ? x[(long long)k * ld + r] : 0.f;
            }
        }
        __syncthreads();
        unsigned* p = P + (long long)bz * Rp * KW;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int rr = ty + 8 * j;
            const unsigned w = BF16 ? bf16x2_round(tile[rr][2 * tx], tile[rr][2 * tx + 1]) : tf32_round(tile[rr][tx]);
            const int r = r0 + rr;
            if (TILED)  // unit r / 64, k-tile w0 / 32, row r % 64, chunk tx / 4 at chunk (tx / 4) ^ (r % 8)
                p[(long long)(r >> 6) * 64 * KW + w0 * 64 + (r & 63) * 32 + (((tx >> 2) ^ (r & 7)) << 2) + (tx & 3)] = w;
            else
                p[(long long)r * KW + w0 + tx] = w;
        }
        __syncthreads();
    }
}

// wg_store writes alpha*d + beta*C (C not read when beta is 0) inside M x
// N: d is thread t's (of its warpgroup) accumulators of the 64 x 256 tile
// of C at row m0, column n0 (see the top of the file).
__device__ __forceinline__ void wg_store(const float (&d)[128], int M, int N, float alpha, float beta, float* C, long long ldc, int m0, int n0,
                                         int t) {
    const int w = t >> 5, l = t & 31;
    const int r = m0 + 16 * w + (l >> 2), cn = n0 + 2 * (l & 3);
#pragma unroll
    for (int i = 0; i < 32; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int gm = r + 8 * h;
            if (gm >= M) continue;
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const int gn = cn + 8 * i + u;
                if (gn >= N) continue;
                float* pc = C + (long long)gm * ldc + gn;
                float v = alpha * d[4 * i + 2 * h + u];
                if (beta != 0.f) v = fmaf(beta, *pc, v);
                *pc = v;
            }
        }
}

// gemm_wg multiplies packed operands (see the top of the file): A (Rp_A x
// KW words, batch stride strideA words), B (Rp_B x KW), into C, with NWG
// warpgroups of 128 threads (2 or 3: a 64*NWG x 256 tile of C a block).
// With P (gemm_wgp_*) the operands are being packed while it runs: its
// warpgroups are the block's first 256 threads, their barriers bar.sync
// 2, 256, and before a k-tile's copies are issued thread 0 waits until
// ready[WGP_COUNT_STRIDE * (bz * Q + c)], the pieces of the batch's chunk
// c (WGP_CHUNK k-tiles) packed, reaches per.
template <bool BF16, int NWG, bool P = false>
__device__ __forceinline__ void gemm_wg(int M, int N, int KW, float alpha, const unsigned* Ap, long long strideA, const unsigned* Bp,
                                        long long strideB, float beta, float* C, long long ldc, long long strideC, int batch,
                                        const int* ready = nullptr, int Q = 0, int per = 0) {
    static_assert(!P || NWG == 2, "gemm_wg: the pipelined packing runs beside two warpgroups");
    constexpr int BM = 64 * NWG;                 // rows of A (and C) a block
    constexpr int TILE = (BM + WG_BN) * 128;     // one stage: 128-byte rows of A, then of B
    constexpr int PASS = 16 * NWG;               // rows a pass of the block's copies covers (8 threads a row)
    constexpr int PASSES_B = (WG_BN + PASS - 1) / PASS;
    TC2_DYNAMIC_SHARED(smem);
    const unsigned s0 = smem_u32(smem), pad = (1024u - (s0 & 1023u)) & 1023u;
    unsigned char* base = reinterpret_cast<unsigned char*>(smem) + pad;
    const unsigned sbase = s0 + pad;
    const int tid = threadIdx.x, wg = tid >> 7;
    const int KT = KW / 32;  // 128-byte k-tiles
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * WG_BN;
    const long long rowBytes = 4LL * KW, passBytes = PASS * rowBytes;
    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        const unsigned char* a = reinterpret_cast<const unsigned char*>(Ap + bz * strideA + (long long)m0 * KW);
        const unsigned char* b = reinterpret_cast<const unsigned char*>(Bp + bz * strideB + (long long)n0 * KW);
        // load issues this thread's copies of k-tile kt into its stage:
        // row lr + PASS*l of A (l < 4, BM = 4 PASS) and of B (while below
        // 256), chunk c, at chunk c ^ (lr % 8) of its row (PASS, BM and the
        // stage a multiple of 8 rows keep the row's residue mod 8).
        const int lr = tid >> 3, c = tid & 7;
        const int dsw = lr * 128 + ((c ^ (lr & 7)) << 4);
        const unsigned char* pa = a + lr * rowBytes + c * 16;
        const unsigned char* pb = b + lr * rowBytes + c * 16;
        auto load = [&](int kt) {
            unsigned char* st = base + (kt % WG_STAGES) * TILE + dsw;
            const unsigned char* src = pa + kt * 128;
#pragma unroll
            for (int l = 0; l < 4; l++, src += passBytes) cp_async16_if(st + l * PASS * 128, src, true);
            src = pb + kt * 128;
#pragma unroll
            for (int l = 0; l < PASSES_B; l++, src += passBytes)
                if (WG_BN % PASS == 0 || lr + l * PASS < WG_BN) cp_async16_if(st + (BM + l * PASS) * 128, src, true);
        };
        // wait (P): thread 0 waits until k-tile kt's chunk is packed, when
        // kt starts a chunk; the barrier after it lets the others copy it.
        auto wait = [&](int kt) {
            if constexpr (P) {
                if (tid == 0 && kt < KT && kt % WGP_CHUNK == 0) {
                    const int* f = ready + WGP_COUNT_STRIDE * ((long long)bz * Q + kt / WGP_CHUNK);
                    for (unsigned polls = 0; ld_acquire_gpu(f) < per;) poll_pause(polls);
                }
                __syncwarp();
            }
        };
        auto barrier = [] {
            if constexpr (P)
                bar_named(2, 256);
            else
                __syncthreads();
        };
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; i++) d[i] = 0.f;
        if constexpr (P) {
            wait(0);  // the first WG_STAGES - 2 k-tiles lie in chunk 0
            barrier();
        }
#pragma unroll
        for (int s = 0; s < WG_STAGES - 2; s++) {
            if (s < KT) load(s);
            cp_async_commit();
        }
        for (int kt = 0; kt < KT; kt++) {
            wait(kt + WG_STAGES - 2);
            cp_async_wait<WG_STAGES - 3>();  // k-tile kt's copies have landed
            fence_proxy_async();
            barrier();
            if (kt + WG_STAGES - 2 < KT) load(kt + WG_STAGES - 2);  // into the stage of k-tile kt - 2, whose products are done
            cp_async_commit();
            const unsigned sa = sbase + (kt % WG_STAGES) * TILE + wg * 64 * 128, sb = sbase + (kt % WG_STAGES) * TILE + BM * 128;
            wg_ktile(d, sa, sb, [&](int, unsigned long long da, unsigned long long db) {
                if (BF16)
                    wgmma_bf16_m64n256k16(d, da, db, 1);
                else
                    wgmma_tf32_m64n256k8(d, da, db, 1);
            });
        }
        wg_wait<0>();
        wg_fence_operands(d);
        cp_async_wait<0>();

        wg_store(d, M, N, alpha, beta, C + bz * strideC, ldc, m0 + 64 * wg, n0, tid & 127);
        barrier();  // every warpgroup done with the ring before the next batch's copies
    }
}

// P[b] = tf32(op(X[b])) packed K-major (Rp x KW words, zero-padded) for gemm_wg_tf32, 32 x 8 threads per 32 x 32-word tile
extern "C" __global__ void __launch_bounds__(256) gemm_wg_pack_tf32(const float* X, long long ld, long long stride, int kcontig, int R, int K,
                                                                    unsigned* P, int Rp, int KW, int batch) {
    wg_pack<false, false>(X, ld, stride, kcontig, R, K, P, Rp, KW, batch);
}

// P[b] = bf16(op(X[b])) packed K-major, two per word (Rp x KW words, zero-padded) for gemm_wg_bf16, 32 x 8 threads per 32 x 32-word tile
extern "C" __global__ void __launch_bounds__(256) gemm_wg_pack_bf16(const float* X, long long ld, long long stride, int kcontig, int R, int K,
                                                                    unsigned* P, int Rp, int KW, int batch) {
    wg_pack<true, false>(X, ld, stride, kcontig, R, K, P, Rp, KW, batch);
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from packed TF32 operands with wgmma m64n256k8, 128 x 256 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256, 1) gemm_wg_tf32(int M, int N, int KW, float alpha, const unsigned* A, long long strideA,
                                                                  const unsigned* B, long long strideB, float beta, float* C, long long ldc,
                                                                  long long strideC, int batch) {
    gemm_wg<false, 2>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from packed BF16 operands with wgmma m64n256k16, 128 x 256 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256, 1) gemm_wg_bf16(int M, int N, int KW, float alpha, const unsigned* A, long long strideA,
                                                                  const unsigned* B, long long strideB, float beta, float* C, long long ldc,
                                                                  long long strideC, int batch) {
    gemm_wg<true, 2>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from packed TF32 operands with wgmma m64n256k8, 192 x 256 tiles per 384-thread block
extern "C" __global__ void __launch_bounds__(384, 1) gemm_wg3_tf32(int M, int N, int KW, float alpha, const unsigned* A, long long strideA,
                                                                   const unsigned* B, long long strideB, float beta, float* C, long long ldc,
                                                                   long long strideC, int batch) {
    gemm_wg<false, 3>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from packed BF16 operands with wgmma m64n256k16, 192 x 256 tiles per 384-thread block
extern "C" __global__ void __launch_bounds__(384, 1) gemm_wg3_bf16(int M, int N, int KW, float alpha, const unsigned* A, long long strideA,
                                                                   const unsigned* B, long long strideB, float beta, float* C, long long ldc,
                                                                   long long strideC, int batch) {
    gemm_wg<true, 3>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

// P[b] = tf32(op(X[b])) in gemm_wgm_tf32's tiled layout (64-row units of 128-byte k-tiles, swizzled), 32 x 8 threads per 32 x 32-word tile
extern "C" __global__ void __launch_bounds__(256) gemm_wg_packt_tf32(const float* X, long long ld, long long stride, int kcontig, int R, int K,
                                                                     unsigned* P, int Rp, int KW, int batch) {
    wg_pack<false, true>(X, ld, stride, kcontig, R, K, P, Rp, KW, batch);
}

// P[b] = bf16(op(X[b])) in gemm_wgm_bf16's tiled layout, two per word, 32 x 8 threads per 32 x 32-word tile
extern "C" __global__ void __launch_bounds__(256) gemm_wg_packt_bf16(const float* X, long long ld, long long stride, int kcontig, int R, int K,
                                                                     unsigned* P, int Rp, int KW, int batch) {
    wg_pack<true, true>(X, ld, stride, kcontig, R, K, P, Rp, KW, batch);
}

// gemm_wgm is gemm_wg on tiled operands (see the top of the file) in
// clusters of CL blocks along m (2: their bulk copies share B's tile; 1:
// no cluster, each block copies all of B's tile into itself); with WS
// (warp-specialised) a warp after the NWG warpgroups issues the copies
// (its first lane), so that no warpgroup waits for the other block to free
// a stage, else thread 0 does between its products.
template <bool BF16, int NWG, bool WS, int CL = 2>
__device__ __forceinline__ void gemm_wgm(int M, int N, int KW, float alpha, const unsigned* Ap, long long strideA, const unsigned* Bp,
                                         long long strideB, float beta, float* C, long long ldc, long long strideC, int batch) {
    constexpr int BM = 64 * NWG;                  // rows of A (and C) a block
    constexpr unsigned UNIT = 64 * 128;           // bytes of a unit: 64 rows of a 128-byte k-tile
    constexpr unsigned TILE = (BM + WG_BN) * 128; // one stage: A's BM rows, then B's 256
    TC2_DYNAMIC_SHARED(smem);
    const unsigned s0 = smem_u32(smem), pad = (1024u - (s0 & 1023u)) & 1023u;
    const unsigned sbase = s0 + pad, bars = sbase + WG_STAGES * TILE;  // stage s's full mbarrier at bars + 8s, its empty one 8 WG_STAGES on
    const int tid = threadIdx.x, wg = tid >> 7;
    static_assert(CL == 1 || CL == 2, "gemm_wgm: clusters of 1 or 2 blocks");
    const unsigned rank = CL == 2 ? clusterRank() : 0u;
    const int KT = KW / 32;  // 128-byte k-tiles
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * WG_BN;
    const int nb = (int)blockIdx.z < batch ? (batch - 1 - (int)blockIdx.z) / (int)gridDim.z + 1 : 0;  // the block's batches
    const int G = nb * KT;  // the block's k-tiles, batch after batch
    if (tid == 0) {
        for (int s = 0; s < WG_STAGES; s++) {
            mbarInit(bars + 8 * s, 1);                        // full: the producer's arrival and the stage's bytes
            mbarInit(bars + 8 * (WG_STAGES + s), CL * NWG);   // empty: every warpgroup of the cluster done with the stage
        }
        fenceMbarInit();
    }
    if (CL == 2)
        clusterSync();  // the mbarriers initialised before any block copies into or arrives on them
    else
        __syncthreads();
    const long long unitStride = 64LL * 4 * KW;                                                     // bytes between 64-row units
    const unsigned char* a0 = reinterpret_cast<const unsigned char*>(Ap) + (long long)m0 * 4 * KW;  // the block's first unit of A
    const unsigned char* b0 = reinterpret_cast<const unsigned char*>(Bp) + (long long)(n0 + WG_BN / CL * rank) * 4 * KW;  // its part of B's
    // issue (the producer) loads k-tile g of the block's sequence into its
    // stage, once every warpgroup of the cluster is done with the stage's
    // last k-tile: A's units into this block, this block's half of B's
    // tile into both blocks.
    auto issue = [&](int g) {
        const int s = g % WG_STAGES, kt = g % KT;
        const long long bz = blockIdx.z + (long long)(g / KT) * gridDim.z;
        if (g >= WG_STAGES) mbarWait(bars + 8 * (WG_STAGES + s), (g / WG_STAGES - 1) & 1);
        mbarArriveExpectTx(bars + 8 * s, TILE);
        const unsigned st = sbase + s * TILE;
        const unsigned char* a = a0 + bz * 4 * strideA + kt * UNIT;
#pragma unroll
        for (int u = 0; u < NWG; u++) bulkCopyOwn(st + u * UNIT, a + u * unitStride, UNIT, bars + 8 * s);
        const unsigned char* b = b0 + bz * 4 * strideB + kt * UNIT;
#pragma unroll
        for (int u = 0; u < 4 / CL; u++) {
            if (CL == 2)
                bulkCopy(st + BM * 128 + (2 * rank + u) * UNIT, b + u * unitStride, UNIT, bars + 8 * s, 3u);
            else
                bulkCopyOwn(st + BM * 128 + u * UNIT, b + u * unitStride, UNIT, bars + 8 * s);
        }
    };
    if (WS && tid >= NWG * 128) {  // the producer warp: its first lane loads every k-tile, each once its stage is free
        if (tid == NWG * 128)
            for (int g = 0; g < G; g++) issue(g);
        __syncwarp();
    } else {
        if (!WS && tid == 0)
            for (int g = 0; g < G && g < WG_STAGES; g++) issue(g);
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; i++) d[i] = 0.f;  // before the pipeline: each batch's first wgmma ignores d (no k: C = beta*C)
        int g = 0;                                   // the block's k-tiles so far
        for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
            for (int kt = 0; kt < KT; kt++, g++) {
                const int s = g % WG_STAGES;
                mbarWait(bars + 8 * s, (g / WG_STAGES) & 1);  // k-tile g has landed
                const unsigned sa = sbase + s * TILE + wg * 64 * 128, sb = sbase + s * TILE + BM * 128;
                // A batch's first k step sets d = A*B; wait_group 1: k-tile g - 1's products are done.
                wg_ktile(d, sa, sb, [&](int j, unsigned long long da, unsigned long long db) {
                    if (BF16)
                        wgmma_bf16_m64n256k16(d, da, db, kt > 0 || j > 0);
                    else
                        wgmma_tf32_m64n256k8(d, da, db, kt > 0 || j > 0);
                });
                if (g > 0) {  // its stage is free in this block: every warpgroup says so to both blocks
                    const unsigned e = bars + 8 * (WG_STAGES + (g - 1) % WG_STAGES);
                    if ((tid & 127) == 0) {
                        if (CL == 2) {
                            mbarArriveCluster(e, 0);
                            mbarArriveCluster(e, 1);
                        } else {
                            mbarArrive(e);
                        }
                    }
                    if (!WS && tid == 0 && g - 1 + WG_STAGES < G) issue(g - 1 + WG_STAGES);
                    __syncwarp();
                }
            }
            wg_wait<0>();
            wg_fence_operands(d);
            wg_store(d, M, N, alpha, beta, C + bz * strideC, ldc, m0 + 64 * wg, n0, tid & 127);
        }
    }
    if (CL == 2) clusterSync();  // no block leaves while the other may still arrive on its mbarriers
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from tiled TF32 operands, 128 x 256 tiles per 256-thread block, clusters of 2 sharing B's tile
extern "C" __global__ void __launch_bounds__(256, 1) __cluster_dims__(2, 1, 1) gemm_wgm_tf32(int M, int N, int KW, float alpha, const unsigned* A,
                                                                                             long long strideA, const unsigned* B, long long strideB,
                                                                                             float beta, float* C, long long ldc, long long strideC,
                                                                                             int batch) {
    gemm_wgm<false, 2, false>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from tiled BF16 operands, 128 x 256 tiles per 256-thread block, clusters of 2 sharing B's tile
extern "C" __global__ void __launch_bounds__(256, 1) __cluster_dims__(2, 1, 1) gemm_wgm_bf16(int M, int N, int KW, float alpha, const unsigned* A,
                                                                                             long long strideA, const unsigned* B, long long strideB,
                                                                                             float beta, float* C, long long ldc, long long strideC,
                                                                                             int batch) {
    gemm_wgm<true, 2, false>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from tiled TF32 operands, 192 x 256 tiles per 384-thread block, clusters of 2 sharing B's tile
extern "C" __global__ void __launch_bounds__(384, 1) __cluster_dims__(2, 1, 1) gemm_wgm3_tf32(int M, int N, int KW, float alpha, const unsigned* A,
                                                                                              long long strideA, const unsigned* B, long long strideB,
                                                                                              float beta, float* C, long long ldc, long long strideC,
                                                                                              int batch) {
    gemm_wgm<false, 3, false>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from tiled BF16 operands, 192 x 256 tiles per 384-thread block, clusters of 2 sharing B's tile
extern "C" __global__ void __launch_bounds__(384, 1) __cluster_dims__(2, 1, 1) gemm_wgm3_bf16(int M, int N, int KW, float alpha, const unsigned* A,
                                                                                              long long strideA, const unsigned* B, long long strideB,
                                                                                              float beta, float* C, long long ldc, long long strideC,
                                                                                              int batch) {
    gemm_wgm<true, 3, false>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from tiled TF32 operands, 128 x 256 tiles per 288-thread block (a producer warp), clusters of 2 sharing B's tile
extern "C" __global__ void __launch_bounds__(288, 1) __cluster_dims__(2, 1, 1) gemm_wgms_tf32(int M, int N, int KW, float alpha, const unsigned* A,
                                                                                              long long strideA, const unsigned* B, long long strideB,
                                                                                              float beta, float* C, long long ldc, long long strideC,
                                                                                              int batch) {
    gemm_wgm<false, 2, true>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from tiled BF16 operands, 128 x 256 tiles per 288-thread block (a producer warp), clusters of 2 sharing B's tile
extern "C" __global__ void __launch_bounds__(288, 1) __cluster_dims__(2, 1, 1) gemm_wgms_bf16(int M, int N, int KW, float alpha, const unsigned* A,
                                                                                              long long strideA, const unsigned* B, long long strideB,
                                                                                              float beta, float* C, long long ldc, long long strideC,
                                                                                              int batch) {
    gemm_wgm<true, 2, true>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from tiled TF32 operands, 128 x 256 tiles per 288-thread block (a producer warp), no cluster
extern "C" __global__ void __launch_bounds__(288, 1) gemm_wgs_tf32(int M, int N, int KW, float alpha, const unsigned* A, long long strideA,
                                                                   const unsigned* B, long long strideB, float beta, float* C, long long ldc,
                                                                   long long strideC, int batch) {
    gemm_wgm<false, 2, true, 1>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*A[b]*B[b]^T + beta*C[b] from tiled BF16 operands, 128 x 256 tiles per 288-thread block (a producer warp), no cluster
extern "C" __global__ void __launch_bounds__(288, 1) gemm_wgs_bf16(int M, int N, int KW, float alpha, const unsigned* A, long long strideA,
                                                                   const unsigned* B, long long strideB, float beta, float* C, long long ldc,
                                                                   long long strideC, int batch) {
    gemm_wgm<true, 2, true, 1>(M, N, KW, alpha, A, strideA, B, strideB, beta, C, ldc, strideC, batch);
}

static_assert(WGP_CHUNK >= WG_STAGES - 2, "gemm_wgp: the prologue's k-tiles lie in the first chunk");

// wgp_piece writes rows r0 .. r0+31 and words w0 .. w0+nw-1 (nw a multiple
// of 32) of a packed operand p (rows of KW words; gemm_wg_pack_*'s layout
// and rounding) from op(x) (element (r, k) at x[r*ld + k] when kcontig,
// else x[k*ld + r]; zero outside R x K), t being the thread's index in
// the 128 that share the piece. A unit of work is 4 words: of one row
// (kcontig: 4 or 8 consecutive k, one 16-byte store) or one word of 4
// rows (4 consecutive rows at 1 or 2 k, a warp's lanes 4 row groups by 8
// words, so that its loads read 64 contiguous bytes of a k row and its
// stores 32 of a packed row); the float4 loads where vec (x 16-byte
// aligned, ld a multiple of 4) and the unit lies inside R x K, else one
// checked load an element; U units loaded before any is stored.
template <bool BF16>
__device__ __forceinline__ void wgp_piece(const float* x, long long ld, int kcontig, int R, int K, int vec, unsigned* p, int KW, int r0,
                                          int w0, int nw, int t) {
    constexpr int E = BF16 ? 2 : 1;  // k per word
    constexpr int U = 4;             // units in flight a thread
    const int total = 8 * nw, upr = nw / 4;  // units of the piece; a row's (kcontig)
    for (int i0 = 0; i0 < total; i0 += 128 * U) {
        float v[U][4 * E];  // kcontig: the unit's k in order; else v[u][4e + c]: row r + c at k = wE + e
        int rs[U], ws[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = i0 + 128 * u + t;
            int r, w;
            if (kcontig) {
                r = r0 + i / upr;
                w = w0 + 4 * (i % upr);
            } else {
                const int j = i >> 5, l = i & 31;  // the warp's item, the lane
                r = r0 + 4 * ((l & 3) + 4 * (j & 1));
                w = w0 + 8 * (j >> 1) + (l >> 2);
            }
            rs[u] = r, ws[u] = w;
            if (i >= total) continue;
            const int k = w * E;
            if (kcontig) {
                const float* src = x + (long long)r * ld + k;
                if (vec && r < R && k + 4 * E <= K) {
#pragma unroll
                    for (int e = 0; e < E; e++) {
                        const float4 q = *reinterpret_cast<const float4*>(src + 4 * e);
                        v[u][4 * e] = q.x, v[u][4 * e + 1] = q.y, v[u][4 * e + 2] = q.z, v[u][4 * e + 3] = q.w;
                    }
                } else {
#pragma unroll
                    for (int j = 0; j < 4 * E; j++) v[u][j] = r < R && k + j < K ? src[j] : 0.f;
                }
            } else {
                const float* src = x + (long long)k * ld + r;
                if (vec && r + 4 <= R && k + E <= K) {
#pragma unroll
                    for (int e = 0; e < E; e++) {
                        const float4 q = *reinterpret_cast<const float4*>(src + e * ld);
                        v[u][4 * e] = q.x, v[u][4 * e + 1] = q.y, v[u][4 * e + 2] = q.z, v[u][4 * e + 3] = q.w;
                    }
                } else {
#pragma unroll
                    for (int e = 0; e < E; e++)
#pragma unroll
                        for (int c = 0; c < 4; c++) v[u][4 * e + c] = r + c < R && k + e < K ? src[e * ld + c] : 0.f;
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (i0 + 128 * u + t >= total) continue;
            if (kcontig) {
                uint4 q;
                if constexpr (BF16) {
                    q.x = bf16x2_round(v[u][0], v[u][1]), q.y = bf16x2_round(v[u][2], v[u][3]);
                    q.z = bf16x2_round(v[u][4], v[u][5]), q.w = bf16x2_round(v[u][6], v[u][7]);
                } else {
                    q.x = tf32_round(v[u][0]), q.y = tf32_round(v[u][1]), q.z = tf32_round(v[u][2]), q.w = tf32_round(v[u][3]);
                }
                *reinterpret_cast<uint4*>(p + (long long)rs[u] * KW + ws[u]) = q;
            } else {
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    unsigned word;
                    if constexpr (BF16)
                        word = bf16x2_round(v[u][c], v[u][4 + c]);
                    else
                        word = tf32_round(v[u][c]);
                    p[(long long)(rs[u] + c) * KW + ws[u]] = word;
                }
            }
        }
    }
}

// gemm_wgp is the product of gemm_wg_pack_* and gemm_wg_* in one launch of
// 384-thread blocks: warpgroups 0 and 1 run gemm_wg's product while
// warpgroup 2 packs op(A) into Ap and op(B)^T into Bp. The packing is cut
// into pieces of 32 rows by one chunk (WGP_CHUNK 128-byte k-tiles) of one
// operand of one batch, numbered chunk after chunk (batch bz's chunk c is
// chunk f = bz * Q + c; in each, A's Rp_A / 32 bands, then B's Rp_B / 32);
// a block's packer warpgroup claims the next piece by atomicAdd on
// sync[0] until none is left (the next one while it writes the current
// one), writes it, and once its 128 threads have (bar.sync 1, 128) one of
// them fences and adds 1 to chunk f's count, sync[WGP_COUNT_STRIDE * (1 +
// f)] (every counter in a 128-byte line of its own, so that the polls of
// one chunk's count do not contend with the claims or the other counts). The
// product waits for each chunk's count to reach per = (Rp_A + Rp_B) / 32
// before copying its k-tiles. Every claimed piece belongs to a block that
// runs, and every block packs until all are claimed, so no block waits
// on one not yet resident: the blocks of the first wave pack the operands
// while they multiply their first tiles, and the later ones find them
// packed. sync holds WGP_COUNT_STRIDE * (1 + batch * Q) zeroed ints.
template <bool BF16>
__device__ __forceinline__ void gemm_wgp(const float* A, long long lda, long long sA, int kcA, int vecA, const float* B, long long ldb,
                                         long long sB, int kcB, int vecB, int M, int N, int K, int KW, int RpA, int RpB, float alpha,
                                         unsigned* Ap, unsigned* Bp, float beta, float* C, long long ldc, long long strideC, int batch,
                                         int* sync) {
    const int Q = (KW + 32 * WGP_CHUNK - 1) / (32 * WGP_CHUNK);  // chunks a batch
    const int bandsA = RpA / 32, per = bandsA + RpB / 32;      // pieces a chunk
    const long long strideAp = (long long)RpA * KW, strideBp = (long long)RpB * KW;
    if (threadIdx.x < 256) {
        gemm_wg<BF16, 2, true>(M, N, KW, alpha, Ap, strideAp, Bp, strideBp, beta, C, ldc, strideC, batch, sync + WGP_COUNT_STRIDE, Q, per);
        return;
    }
    const int t = threadIdx.x - 256;
    const int total = batch * Q * per;  // the host keeps it below 2^31
    // claim[i % 2] is the piece of the i-th turn; thread 0 claims the next
    // one as a turn starts and stores it only once its share of the piece
    // is written, so that the atomic's round trip overlaps the piece. They
    // lie after the product's ring in dynamic shared memory (the CPU
    // emulator runs blocks of this kernel side by side, whose static
    // shared variables it would share).
    TC2_DYNAMIC_SHARED(smem);
    int* claim = reinterpret_cast<int*>(reinterpret_cast<unsigned char*>(smem) + WG_SHARED);
    if (t == 0) claim[0] = atomicAdd(sync, 1);
    bar_named(1, 128);
    for (int turn = 0;; turn++) {
        const int pc = claim[turn & 1];
        if (pc >= total) break;
        int next = 0;
        if (t == 0) next = atomicAdd(sync, 1);
        const int f = pc / per, band = pc % per, bz = f / Q, c = f % Q;
        const int w0 = c * 32 * WGP_CHUNK, nw = KW - w0 < 32 * WGP_CHUNK ? KW - w0 : 32 * WGP_CHUNK;
        if (band < bandsA)
            wgp_piece<BF16>(A + bz * sA, lda, kcA, M, K, vecA, Ap + bz * strideAp, KW, 32 * band, w0, nw, t);
        else
            wgp_piece<BF16>(B + bz * sB, ldb, kcB, N, K, vecB, Bp + bz * strideBp, KW, 32 * (band - bandsA), w0, nw, t);
        if (t == 0) claim[(turn + 1) & 1] = next;
        bar_named(1, 128);  // the piece's stores issued by all 128, and the next claim visible to them
        if (t == 0) {
            __threadfence();
            atomicAdd(sync + WGP_COUNT_STRIDE * (1 + f), 1);
        }
    }
}

// C[b] = alpha*op(A[b])*op(B[b]) + beta*C[b], op(A) and op(B)^T packed to TF32 by a third warpgroup while wgmma m64n256k8 multiplies them, 128 x 256 tiles per 384-thread block
extern "C" __global__ void __launch_bounds__(384, 1) gemm_wgp_tf32(const float* A, long long lda, long long strideA, int kcontigA, int vecA,
                                                                   const float* B, long long ldb, long long strideB, int kcontigB, int vecB,
                                                                   int M, int N, int K, int KW, int RpA, int RpB, float alpha, unsigned* Ap,
                                                                   unsigned* Bp, float beta, float* C, long long ldc, long long strideC,
                                                                   int batch, int* sync) {
    gemm_wgp<false>(A, lda, strideA, kcontigA, vecA, B, ldb, strideB, kcontigB, vecB, M, N, K, KW, RpA, RpB, alpha, Ap, Bp, beta, C, ldc,
                    strideC, batch, sync);
}

// C[b] = alpha*op(A[b])*op(B[b]) + beta*C[b], op(A) and op(B)^T packed to BF16 by a third warpgroup while wgmma m64n256k16 multiplies them, 128 x 256 tiles per 384-thread block
extern "C" __global__ void __launch_bounds__(384, 1) gemm_wgp_bf16(const float* A, long long lda, long long strideA, int kcontigA, int vecA,
                                                                   const float* B, long long ldb, long long strideB, int kcontigB, int vecB,
                                                                   int M, int N, int K, int KW, int RpA, int RpB, float alpha, unsigned* Ap,
                                                                   unsigned* Bp, float beta, float* C, long long ldc, long long strideC,
                                                                   int batch, int* sync) {
    gemm_wgp<true>(A, lda, strideA, kcontigA, vecA, B, ldb, strideB, kcontigB, vecB, M, N, K, KW, RpA, RpB, alpha, Ap, Bp, beta, C, ldc,
                   strideC, batch, sync);
}
