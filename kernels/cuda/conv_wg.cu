// conv_wg.cu: conv_pass.cuh's three passes (forward, input gradient,
// weight gradient; conv.cu's geometry, layouts and arguments) in TF32 on
// Hopper's warpgroup tensor cores (wgmma.mma_async, sm_90a): conv_tc.cu's
// implicit GEMMs, the same tables and the same gathers' addresses, with
// the products issued by whole warpgroups from shared memory instead of
// mma.sync from registers.
//
// A block is 256 threads, two warpgroups, and computes a BM x 256 tile
// of the product: BM = 128, warpgroup g its rows 64g .. 64g+63 with
// wgmma m64n256k8 (128 accumulators a thread); BM = 64 (products of at
// most 64 rows), both warpgroups its 64 rows, warpgroup g its columns
// 128g .. 128g+127 with m64n128k8 (64 accumulators). Panels of 32 k go
// through a ring of CWG_STAGES stages of dynamic shared memory (aligned
// to 1024 bytes), each the A panel (BM rows) then the B panel (256
// rows), both in the 128-byte-swizzled K-major layout of gemm_wg.cu (row
// r at byte 128r, its 16-byte chunk c at chunk c ^ (r % 8)), which
// wg_desc describes. Every thread copies into it with cp.async, two
// panels ahead of the products, as gemm_wg_tf32 does:
//   - A (w forward, w^T' for the input gradient, dy for the weight
//     gradient: dense, k-contiguous) 16 bytes at a time where its rows
//     start on 16 bytes and the panel lies inside K, else 4; thread t
//     copies chunk t % 8 of rows t / 8 + 32l (a warp writes 4 whole
//     128-byte rows: no bank conflict);
//   - B (the virtual im2col matrix) 4 bytes at a time in conv_pass.cuh's
//     lane mapping: thread t (lane l of warp w) copies columns n = l % 8
//     + 8(4w + i), i < 4, at k = (l / 8) % 4 + 4j, j < 8, so that one
//     cp.async of a warp covers 8 columns at 4 k, 32 distinct banks of
//     the swizzled rows (conv_tc.cu's rr kernels take a warp's 4-byte
//     copies at a 16-byte stride), and reads 4 runs of 8 consecutive
//     columns. Its columns' bases and taps are
//     conv_pass.cuh's, as are the tables of the panels' rows (two slots,
//     filled by the first warp three panels ahead).
// A panel: each thread waits for its own copies of it
// (cp.async.wait_group), fences them for the async proxy
// (fence.proxy.async.shared::cta), one block barrier, the copies of the
// panel two ahead are issued into the stage the products of two panels
// before freed and the table of the panel three ahead is written, then
// wgmma.fence, four wgmma (the k steps of 8), one commit and
// wgmma.wait_group 1 (the products of this panel stay in flight behind
// the next barrier; those of the previous one are done).
//
// No pass rounds the factors: the tensor cores read each FP32 value's
// top 19 bits (TF32 truncated, where conv_tc.cu's TF32 kernels round to
// nearest), so that no thread touches a panel between its copies and
// the products. Factors already in TF32 (the tests' pre-rounded ones)
// give conv_tc.cu's products; the accumulation order is the hardware's.
// The weight gradient's chunks and their reduction are conv_tc.cu's.
//
// Dynamic shared memory: CWG_SHARED_128 (BM 128) or CWG_SHARED_64 bytes,
// plus conv_pass.cuh's 768 bytes of static tables; the launch opts in.
//
// Build: go run ./kernels/cuda/gen with a CUDA 12 nvcc for sm_90a (see
// docs/cuda.md); the backend runs these kernels on compute capability
// 9.0 (and the emulator) under TCWG.
// gen: arch 90a

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ != 900
#error "conv_wg.cu is sm_90a code (wgmma)"
#endif

#include "wg.cuh"
#include "conv_pass.cuh"

#define CWG_STAGES 4  // panels in the ring

// The bytes the launchers give (cuda/conv_tc.go; TestConvWGSharedConstants):
// CWG_STAGES stages of (BM + 256) rows of 128 bytes, and 1024 of alignment slack.
#define CWG_SHARED_128 197632
#define CWG_SHARED_64 164864
static_assert(CWG_STAGES * (128 + CTC_BN) * 128 + 1024 == CWG_SHARED_128, "CWG_SHARED_128");
static_assert(CWG_STAGES * (64 + CTC_BN) * 128 + 1024 == CWG_SHARED_64, "CWG_SHARED_64");

// cwg_engine runs conv_pass.cuh's passes on wgmma (see the top of the
// file), BM-row tiles.
template <int BM_>
struct cwg_engine {
    static constexpr int BM = BM_;
    static constexpr int NI = BM == 128 ? 32 : 16;  // 8-column groups of a warpgroup's tile
    using Acc = float[4 * NI];
    static constexpr int A_BYTES = BM * 128;               // a stage's A panel
    static constexpr int STAGE = (BM + CTC_BN) * 128;      // a stage: the A panel, then the B panel
    static_assert(CTC_BN == 256 && TC2_BK == 32, "one 128-byte row of TF32 a panel row");

    static __device__ __forceinline__ int col(int i) { return conv_lane_col(i); }

    // copyRows: the A panel's 16-byte chunks, chunk t % 8 of rows t / 8 +
    // 32l (rows r0 + .. of Rn, k0 + .. of K), at chunk c ^ (r % 8) of row
    // r (r % 8 the same for every l).
    static __device__ __forceinline__ void copyRows(unsigned* s, const float* x, long long ld, int r0, int Rn, int k0, int K,
                                                    bool vec) {
        constexpr int CH = BM / 32;
        const int r1 = threadIdx.x >> 3, c = threadIdx.x & 7;
        const int gr1 = r0 + r1, gk = k0 + 4 * c;
        unsigned* const d1 = s + r1 * 32 + ((c ^ (r1 & 7)) << 2);
        const float* const src1 = x + (long long)gr1 * ld + gk;
        if (vec && k0 + TC2_BK <= K) {  // written without the clamp: see tc2_copy
#pragma unroll
            for (int l = 0; l < CH; l++) {
                const bool ok = gr1 + 32 * l < Rn;
                cp_async16_if(d1 + 1024 * l, ok ? src1 + 32 * l * ld : x, ok);
            }
            return;
        }
        const int n1 = tc2_clamp4(K - gk);  // valid k of this thread's chunks
#pragma unroll
        for (int l = 0; l < CH; l++) {
            const int n = gr1 + 32 * l < Rn ? n1 : 0;
            const float* src = src1 + 32 * l * ld;
#pragma unroll
            for (int i = 0; i < 4; i++) cp_async4_if(d1 + 1024 * l + i, i < n ? src + i : x, i < n);
        }
    }

    // gather: the B panel in the lane mapping, element (k, column n =
    // col(i)) at word 32n + 4((k / 4) ^ (n % 8)) + k % 4: k / 4 = j, n % 8
    // = t % 8 for every i, and col(i) = col(0) + 8i (8 rows of 32 words).
    template <class Row, class Src>
    static __device__ __forceinline__ void gather(unsigned* s, const float* any, Row row, Src src) {
        const int t = threadIdx.x, c7 = t & 7;
        unsigned* const d0 = s + col(0) * 32 + ((t >> 3) & 3);
        conv_lane_gather(any, row, src, [&](int j, int i) { return d0 + ((j ^ c7) << 2) + 256 * i; });
    }

    // copyMasked: the masked gather; a dense B (a 1 x 1 kernel, stride 1,
    // no padding) is the same gather, its taps and tables giving each
    // element's address in the dense matrix.
    static __device__ __forceinline__ void copyMasked(unsigned* s, const float* src, int, int, int, int, bool, bool, const int* tabT,
                                                      const int* tabOff, const unsigned (&taps)[4], const int (&base)[4]) {
        conv_masked_gather([&](const float* any, auto row, auto f) { gather(s, any, row, f); }, src, tabT, tabOff, taps, base);
    }

    template <class Fill, class CopyA, class CopyB>
    static __device__ __forceinline__ void loop(unsigned* smem, Acc& acc, int kbeg, int kend, Fill fill, CopyA copyA, CopyB copyB) {
        const unsigned s0 = smem_u32(smem), pad = (1024u - (s0 & 1023u)) & 1023u;
        unsigned* const base = smem + pad / 4;
        const unsigned sbase = s0 + pad;
        const int wg = threadIdx.x >> 7;
        const int panels = kend > kbeg ? (kend - kbeg + TC2_BK - 1) / TC2_BK : 0;
#pragma unroll
        for (int i = 0; i < 4 * NI; i++) acc[i] = 0.f;
        const auto issue = [&](int p) {
            unsigned* st = base + (p % CWG_STAGES) * (STAGE / 4);
            copyA(st, kbeg + p * TC2_BK);
            copyB(st + A_BYTES / 4, kbeg + p * TC2_BK, p & 1);
        };
        fill(0, kbeg);
        fill(1, kbeg + TC2_BK);
        __syncthreads();
#pragma unroll
        for (int p = 0; p < CWG_STAGES - 2; p++) {
            if (p < panels) issue(p);
            cp_async_commit();
        }
        __syncthreads();  // panel 0's copies issued by every thread: its table's slot may take panel 2's
        if (2 < panels) fill(0, kbeg + 2 * TC2_BK);
        for (int p = 0; p < panels; p++) {
            cp_async_wait<CWG_STAGES - 3>();  // panel p's copies have landed
            fence_proxy_async();
            __syncthreads();
            // Into the stage of panel p - 2, whose products every thread
            // waited for before this barrier; from table slot p % 2.
            if (p + CWG_STAGES - 2 < panels) issue(p + CWG_STAGES - 2);
            cp_async_commit();
            // Slot (p + 1) % 2 held panel p + 1's table, whose copies were
            // issued before this barrier; panel p + 3's are issued after the next.
            if (p + 3 < panels) fill((p + 1) & 1, kbeg + (p + 3) * TC2_BK);
            const unsigned st = sbase + (p % CWG_STAGES) * STAGE;
            const unsigned sa = st + (BM == 128 ? wg * 64 * 128 : 0), sb = st + A_BYTES + (BM == 128 ? 0 : wg * 128 * 128);
            wg_ktile(acc, sa, sb, [&](int, unsigned long long da, unsigned long long db) {
                if constexpr (BM == 128)
                    wgmma_tf32_m64n256k8(acc, da, db, 1);
                else
                    wgmma_tf32_m64n128k8(acc, da, db, 1);
            });
        }
        wg_wait<0>();
        wg_fence_operands(acc);
        cp_async_wait<0>();
    }

    // eachPair: thread t (warp w of warpgroup g, lane l) holds acc[4i + 2h
    // + u] at row 16w + l/4 + 8h (+ 64g when BM is 128), column 8i + 2(l %
    // 4) + u (+ 128g when BM is 64) of the tile.
    template <class Out>
    static __device__ __forceinline__ void eachPair(Acc& acc, int m0, int n0, int M, int N, Out out) {
        const int t = threadIdx.x, wg = t >> 7, w = (t >> 5) & 3, l = t & 31;
        const int r0 = m0 + (BM == 128 ? 64 * wg : 0) + 16 * w + (l >> 2);
        const int c0 = n0 + (BM == 128 ? 0 : 128 * wg) + 2 * (l & 3);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int gm = r0 + 8 * h;
            if (gm >= M) continue;
#pragma unroll
            for (int i = 0; i < NI; i++) {
                const int gn = c0 + 8 * i;
                if (gn < N) out(gm, gn, acc[4 * i + 2 * h], acc[4 * i + 2 * h + 1], gn + 1 < N);
            }
        }
    }

    template <class Out>
    static __device__ __forceinline__ void each(Acc& acc, int m0, int n0, int M, int N, Out out) {
        eachPair(acc, m0, n0, M, N, [&](int gm, int gn, float v0, float v1, bool two) {
            out(gm, gn, v0);
            if (two) out(gm, gn + 1, v1);
        });
    }
};

#define CWG_ARGS N, C, H, W, O, K, S, P, OH, OW, cm

// y[o][p] = sum over r of w[o][r]*col[r][p] (+ b[o]), TF32 (truncated) on wgmma, 128 x 256 tiles; CWG_SHARED_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_fwd_wg_tf32(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_fwd_pass<cwg_engine<128>>(y, x, w, b, hasBias, CWG_ARGS);
}

// y[o][p] = sum over r of w[o][r]*col[r][p] (+ b[o]), TF32 (truncated) on wgmma, 64 x 256 tiles; CWG_SHARED_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_fwd_wg64_tf32(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_fwd_pass<cwg_engine<64>>(y, x, w, b, hasBias, CWG_ARGS);
}

// dx[c][q] (+)= sum over k of wt[c][k]*dycol[k][q], wt from conv_wt_f32, TF32 (truncated) on wgmma, 128 x 256 tiles; CWG_SHARED_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgrad_wg_tf32(
    float* dx, const float* dy, const float* wt, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_dgrad_pass<cwg_engine<128>>(dx, dy, wt, accumulate, CWG_ARGS);
}

// dx[c][q] (+)= sum over k of wt[c][k]*dycol[k][q], wt from conv_wt_f32, TF32 (truncated) on wgmma, 64 x 256 tiles; CWG_SHARED_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgrad_wg64_tf32(
    float* dx, const float* dy, const float* wt, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_dgrad_pass<cwg_engine<64>>(dx, dy, wt, accumulate, CWG_ARGS);
}

// out[z][o][r] (+)= sum over p in chunk z of dy[o][p]*col[r][p], TF32 (truncated) on wgmma, 128 x 256 tiles; CWG_SHARED_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgrad_wg_tf32(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgrad_pass<cwg_engine<128>>(out, dy, x, accumulate, chunk, CWG_ARGS);
}

// out[z][o][r] (+)= sum over p in chunk z of dy[o][p]*col[r][p], TF32 (truncated) on wgmma, 64 x 256 tiles; CWG_SHARED_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgrad_wg64_tf32(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgrad_pass<cwg_engine<64>>(out, dy, x, accumulate, chunk, CWG_ARGS);
}

// dx (+)= phase (ry, rx) of the input gradient (dense: dx = its C x N*Hp*Wp matrix) at stride S, sum over k of wtp[c][k]*dy gathered, wtp from conv_wt_phase_f32, TF32 (truncated) on wgmma, 128 x 256 tiles; CWG_SHARED_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgradp_wg_tf32(
    float* dx, const float* dy, const float* wtp, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm, int ry, int rx, int dense) {
    conv_dgrad_phase_pass<cwg_engine<128>>(dx, dy, wtp, accumulate, CWG_ARGS, ry, rx, dense);
}

// dx (+)= phase (ry, rx) of the input gradient (dense: dx = its C x N*Hp*Wp matrix) at stride S, sum over k of wtp[c][k]*dy gathered, wtp from conv_wt_phase_f32, TF32 (truncated) on wgmma, 64 x 256 tiles; CWG_SHARED_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgradp_wg64_tf32(
    float* dx, const float* dy, const float* wtp, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm, int ry, int rx, int dense) {
    conv_dgrad_phase_pass<cwg_engine<64>>(dx, dy, wtp, accumulate, CWG_ARGS, ry, rx, dense);
}
