// conv_tc.cuh: the engine of conv_tc*.cu, conv.cu's three passes (forward, input gradient, weight
// gradient; the same geometry, layouts and arguments, see conv.cu's
// header) on tensor cores, the factors rounded to TF32 or BF16 as
// gemm_tc.cu rounds them, accumulated in FP32: the backend's convolutions
// in precisions tf32 and bf16 (cuda/conv.go), as cuDNN's with
// torch.backends.cudnn.allow_tf32.
//
// Each pass is one implicit GEMM over the whole batch (conv_pass.cuh's
// passes on this file's engine, ctc_engine), run by the
// cp.async pipeline of gemm_tc2 (tc.cuh): 256-thread blocks of 8 warps
// (2 x 4), a BM x 256 tile of the product a block (BM = 128: warps of
// 64 x 64, 4 x 8 mma tiles; BM = 64 for products of at most 64 rows:
// warps of 32 x 64, 2 x 8 tiles), panels of 32 k in a ring of 3 stages
// of dynamic shared memory, one __syncthreads a panel. The A operand (the
// product's rows) is a dense k-contiguous matrix in every pass -- w (O x
// C*K*K) forward, dy (O x N*OH*OW) for the weight gradient, and for the
// input gradient w^T' (C x O*K*K), which conv_wt_f32 writes first -- so
// it is copied by tc2_copy, 16 bytes at a time where rows are aligned.
// The B operand (the virtual im2col matrix: col, dycol or col^T) is
// gathered: each thread copies 4-byte elements with cp.async, zero-filled
// (the ignore-src predicate) outside the image, past the edges and past K, into the
// k-row panel layout of tc2 (k rows of 256 columns), from the element's
// address computed as conv.cu computes it: a per-thread base for each of
// its 4 columns (the same 4 columns for every panel) plus a per-row
// offset from a table of the panel's 32 rows (two slots in static shared
// memory, filled by the first warp two panels ahead). Where the B operand
// is itself a dense matrix (a 1 x 1 kernel, stride 1, no padding: x
// forward when channel-major, dy for the input gradient), tc2_copy copies
// it 16 bytes at a time. Each thread then rounds the words it copied
// (tc2_round), and the fragments and mma steps are gemm_tc2's.
//
// The weight gradient's reduction over N*OH*OW is split over blockIdx.z
// into chunks (multiples of 32) whose partial products
// conv_wgrad_reduce_f32 (conv.cu) sums in a fixed order, as in conv.cu.
// The mma's accumulation order is the hardware's: results agree with
// conv.cu's within TF32/BF16 rounding, not bit for bit.
//
// Dynamic shared memory: conv_tc_shared below (TF32: 165888 bytes at
// BM 128, 138240 at BM 64; BF16: 208896 and 174080), plus 768 bytes of
// static tables; the launch opts in (cuda.SharedMemoryOptIn).
//
// The kernels are split by version into modules of their own, each
// JIT-compiled by the driver only when first used (the 38 kernels' PTX
// took ptxas 40.3 s of CPU for sm_90, conv_tc.cu's 10 now 10.4 s:
// bench/RESULTS.md): conv_tc.cu the *_tf32rr kernels
// (TCAuto's and TCV3's TF32, and the transposed weight gradients every
// TF32 version runs), conv_tc_tf32.cu the *_tf32 ones (panels rounded in
// shared memory: TCV1, TCV2, and BF16 where its shared memory does not
// fit), conv_tc_bf16.cu the *_bf16 ones, conv_tc_rl.cu the *_tf32rl ones
// (TCV4).
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#ifndef CONV_TC_CUH
#define CONV_TC_CUH

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "conv_tc*.cu need sm_80 or later (mma.sync with TF32/BF16 operands)"
#endif

#include "tc.cuh"
#include "conv_pass.cuh"

// ctc_shared returns the bytes of dynamic shared memory of a BM-row
// block: the ring of FP32 panels, and for BF16 the double-buffered
// packed panels.
template <bool BF16, int BM>
__device__ constexpr int ctc_shared() {
    return 4 * (TC2_STAGES * (tc2_words<BF16, BM>() + tc2_words<BF16, CTC_BN>()) +
                (BF16 ? 2 * (tc2_pwords<BM>() + tc2_pwords<CTC_BN>()) : 0));
}

// The bytes the launchers give (cuda/conv.go's convTCShared; TestConvTCSharedConstants).
#define CTC_SHARED_TF32_128 165888
#define CTC_SHARED_TF32_64 138240
#define CTC_SHARED_BF16_128 208896
#define CTC_SHARED_BF16_64 174080
static_assert(ctc_shared<false, 128>() == CTC_SHARED_TF32_128, "CTC_SHARED_TF32_128");
static_assert(ctc_shared<false, 64>() == CTC_SHARED_TF32_64, "CTC_SHARED_TF32_64");
static_assert(ctc_shared<true, 128>() == CTC_SHARED_BF16_128, "CTC_SHARED_BF16_128");
static_assert(ctc_shared<true, 64>() == CTC_SHARED_BF16_64, "CTC_SHARED_BF16_64");

// ctc_col returns column i (0..3) of this thread's B chunks, relative to
// the block's first: the same 4 columns in every chunk of every panel
// (tc2_chunk's k-row layout of 256 columns).
__device__ __forceinline__ int ctc_col(int i) { return (threadIdx.x & 63) * 4 + i; }

// ctc_gather issues this thread's cp.async of the B panel of rows k0 ..
// k0+31 into the k-row panel at s: element (k, column i of ctc_col) is
// *src(i, row(k)) (k relative to k0), or zero where src returns nullptr.
// row(k) reads the panel's tables once for the chunk's 4 columns (the
// copies' "memory" clobber would make every element read them again).
template <bool BF16, class Row, class Src>
__device__ __forceinline__ void ctc_gather(unsigned* s, const float* any, Row row, Src src) {
    constexpr int CH = CTC_BN * TC2_BK / 4 / 256;
#pragma unroll
    for (int l = 0; l < CH; l++) {
        int r, k;
        tc2_chunk<BF16, false, CTC_BN>(l, r, k);
        unsigned* d = s + tc2_off<BF16, false, CTC_BN>(r, k);
        const ctc_rowv v = row(k);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float* p = src(i, v);
            cp_async4_if(d + i, p ? p : any, p != nullptr);
        }
    }
}

// ctc_gather_rows issues this thread's cp.async of the k-contiguous A
// panel (BM rows, rows k0 .. k0+31 of the reduction) at s: element (row
// ctc_row<BM>(l), k + i) is *src(l, key(k + i)) (k relative to k0), or
// zero where src returns nullptr. A thread's chunks are 4 consecutive k
// of BM/32 rows, the same rows and k in every panel: the 4 keys are read
// once.
template <bool BF16, int BM, class Key, class Src>
__device__ __forceinline__ void ctc_gather_rows(unsigned* s, const float* any, Key key, Src src) {
    constexpr int CH = BM * TC2_BK / 4 / 256;
    int r, k;
    tc2_chunk<BF16, true, BM>(0, r, k);
    ctc_rowv v[4];
#pragma unroll
    for (int i = 0; i < 4; i++) v[i] = key(k + i);
#pragma unroll
    for (int l = 0; l < CH; l++) {
        tc2_chunk<BF16, true, BM>(l, r, k);
        unsigned* d = s + tc2_off<BF16, true, BM>(r, k);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float* p = src(l, v[i]);
            cp_async4_if(d + i, p ? p : any, p != nullptr);
        }
    }
}

// ctc_row returns the row of this thread's l-th chunk of a k-contiguous
// panel of BM rows, relative to the block's first (tc2_chunk's layout).
__device__ __forceinline__ int ctc_row(int l) { return (threadIdx.x >> 3) + 32 * l; }

// ctc_loop runs the panels of rows kbeg .. kend-1 of the product into acc
// (a warp's MI x 8 tiles), the A and B panels in tc2's k-contiguous (AKC,
// BKC) or k-row layouts: fill(slot, k0) writes the table of the panel
// from k0 into slot (threads 0..31), copyA(s, k0) and copyB(s, k0, slot)
// issue this thread's copies of the panel into stage s. One barrier a
// panel; the tables of panel p + 2 are written before the barrier of
// panel p into panel p's slot, whose last reader, the copies of panel p,
// were issued before the barrier of panel p - 1 (or, for panel 0, before
// the barrier that closes the prologue). As in gemm_tc2, panel p + 2's
// copies and this thread's rounding of panel p + 1 run among panel p's
// mma steps, behind the first.
template <bool BF16, int BM, bool RR, bool AKC, bool BKC, class Fill, class CopyA, class CopyB>
__device__ __forceinline__ void ctc_loop(unsigned* smem, float (&acc)[BM / 32][8][4], int kbeg, int kend,
                                         Fill fill, CopyA copyA, CopyB copyB) {
    constexpr int MI = BM / 32;
    constexpr int stage = tc2_words<BF16, BM>() + tc2_words<BF16, CTC_BN>();
    const int warp = threadIdx.x >> 5;
    const int wm = (warp >> 2) * (BM / 2), wn = (warp & 3) * 64;
    const int panels = (kend - kbeg + TC2_BK - 1) / TC2_BK;
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int q = 0; q < 4; q++) acc[i][j][q] = 0.f;
    const auto issue = [&](int p) {
        unsigned* s = smem + (p % TC2_STAGES) * stage;
        copyA(s, kbeg + p * TC2_BK);
        copyB(s + tc2_words<BF16, BM>(), kbeg + p * TC2_BK, p & 1);
    };
    fill(0, kbeg);
    fill(1, kbeg + TC2_BK);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < TC2_STAGES - 1; p++) {
        if (p < panels) issue(p);
        cp_async_commit();
    }
    __syncthreads();  // the copies of panel 0 issued: its table's slot may take panel 2's
    // round(q): gemm_tc2's (this thread's chunks of panel q, after its copies landed).
    const auto round = [&](int q) {
        cp_async_wait<TC2_STAGES - 2>();
        unsigned* as = smem + (q % TC2_STAGES) * stage;
        unsigned* bs = as + tc2_words<BF16, BM>();
        if (BF16) {
            unsigned* pa = smem + TC2_STAGES * stage + (q & 1) * (tc2_pwords<BM>() + tc2_pwords<CTC_BN>());
            tc2_round<BF16, AKC, BM>(as, pa);
            tc2_round<BF16, BKC, CTC_BN>(bs, pa + tc2_pwords<BM>());
        } else if (!RR) {
            tc2_round<BF16, AKC, BM>(as, nullptr);
            tc2_round<BF16, BKC, CTC_BN>(bs, nullptr);
        }
    };
    if (panels > 0) round(0);
    for (int p = 0; p < panels; p++) {
        unsigned* as = smem + (p % TC2_STAGES) * stage;
        unsigned* bs = as + tc2_words<BF16, BM>();
        if (BF16) {
            as = smem + TC2_STAGES * stage + (p & 1) * (tc2_pwords<BM>() + tc2_pwords<CTC_BN>());
            bs = as + tc2_pwords<BM>();
        }
        if (p + TC2_STAGES - 1 < panels) fill((p + TC2_STAGES - 1) & 1, kbeg + (p + TC2_STAGES - 1) * TC2_BK);
        __syncthreads();
#pragma unroll
        for (int ks = 0; ks < TC2_BK; ks += BF16 ? 16 : 8) {
            unsigned fa[MI][4], fb[8][2];
            const int w = BF16 ? ks / 2 : ks;
            tc2_frags<BF16, AKC, BM, true, MI>(fa, as, wm, w);
            tc2_frags<BF16, BKC, CTC_BN, false>(fb, bs, wn, w);
            if (!BF16 && RR) tc2_round_frags<MI>(fa, fb);
            tc_mmas<BF16>(acc, fa, fb);
            if (ks == 0) {  // panel p + 2's copies and panel p + 1's rounding behind the first step's mma (gemm_tc2's order)
                if (p + TC2_STAGES - 1 < panels) issue(p + TC2_STAGES - 1);
                cp_async_commit();
                if (p + 1 < panels) round(p + 1);
            }
        }
    }
    cp_async_wait<0>();
}

// ctc_each_pair calls out(row, column, v0, v1, two) for every pair of
// accumulators of this thread's warp tile at columns (gn, gn + 1) of a
// row of the M x N product with gn < N (two: gn + 1 < N as well), gn
// even: the mma fragment layout, acc[i][j][2h+u] is row wm + 16i + g +
// 8h, column wn + 8j + 2t + u.
template <int BM, class Out>
__device__ __forceinline__ void ctc_each_pair(float (&acc)[BM / 32][8][4], int m0, int n0, int M, int N, Out out) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int r0 = m0 + (warp >> 2) * (BM / 2), c0 = n0 + (warp & 3) * 64;
#pragma unroll
    for (int i = 0; i < BM / 32; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int gm = r0 + 16 * i + g + 8 * h;
            if (gm >= M) continue;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const int gn = c0 + 8 * j + 2 * t;
                if (gn < N) out(gm, gn, acc[i][j][2 * h], acc[i][j][2 * h + 1], gn + 1 < N);
            }
        }
}

// ctc_each calls out(row, column, value) for every accumulator of this
// thread's warp tile inside the M x N product, in ctc_each_pair's order.
template <int BM, class Out>
__device__ __forceinline__ void ctc_each(float (&acc)[BM / 32][8][4], int m0, int n0, int M, int N, Out out) {
    ctc_each_pair<BM>(acc, m0, n0, M, N, [&](int gm, int gn, float v0, float v1, bool two) {
        out(gm, gn, v0);
        if (two) out(gm, gn + 1, v1);
    });
}

// ctc_copy_dense issues tc2_copy of panel k0 of the R-row matrix x (rows
// r0.., Rn rows, K columns; element (r, k) at x[r*ld + k] when KC, else
// x[k*ld + r]), 16 bytes at a time when vec.
template <bool BF16, bool KC, int R>
__device__ __forceinline__ void ctc_copy_dense(unsigned* s, const float* x, long long ld, int r0, int Rn, int k0, int K,
                                               bool vec) {
    if (vec)
        tc2_copy<BF16, KC, R, true>(s, x, ld, r0, Rn, k0, K);
    else
        tc2_copy<BF16, KC, R, false>(s, x, ld, r0, Rn, k0, K);
}

// ctc_copy_masked issues this thread's copies of B panel k0 of a masked
// pass (Rn rows, cols columns): where dense, src is that matrix, copied
// as tc2_copy copies (16 bytes at a time when vec); else element (k,
// column i) is src[base[i] + tabOff[k]] where tap tabT[k] is valid in
// taps[i], or zero.
template <bool BF16>
__device__ __forceinline__ void ctc_copy_masked(unsigned* s, const float* src, int cols, int n0, int k0, int Rn,
                                                bool vec, bool dense, const int* tabT, const int* tabOff,
                                                const unsigned (&taps)[4], const int (&base)[4]) {
    if (dense) {
        ctc_copy_dense<BF16, false, CTC_BN>(s, src, cols, n0, cols, k0, Rn, vec);
        return;
    }
    ctc_gather<BF16>(
        s, src, [&](int k) { return ctc_rowv{tabT[k], 0, tabOff[k]}; },
        [&](int i, const ctc_rowv& v) -> const float* {
            return ctc_valid(taps[i], v.a) ? src + (base[i] + v.off) : nullptr;
        });
}

// ctc_engine runs conv_pass.cuh's passes on this file's pipeline
// (ctc_loop, ctc_gather, tc2's panels): BF16 or TF32 factors, BM-row
// tiles, TF32 rounded in registers (RR) or by a pass over each panel; B
// gathered in conv_pass.cuh's lane mapping where LANES (TF32 rounded in
// registers only: the other roundings pass over the chunks each thread
// copied, tc2_chunk's), else by ctc_gather's chunks.
template <bool BF16, int BM_, bool RR, bool LANES = false>
struct ctc_engine {
    static_assert(!LANES || (!BF16 && RR), "the lane mapping needs TF32 rounded in registers");
    static constexpr int BM = BM_;
    using Acc = float[BM / 32][8][4];
    static __device__ __forceinline__ int col(int i) { return LANES ? conv_lane_col(i) : ctc_col(i); }
    static __device__ __forceinline__ void copyRows(unsigned* s, const float* x, long long ld, int r0, int Rn, int k0, int K,
                                                    bool vec) {
        ctc_copy_dense<BF16, true, BM>(s, x, ld, r0, Rn, k0, K, vec);
    }
    static __device__ __forceinline__ void copyMasked(unsigned* s, const float* src, int cols, int n0, int k0, int Rn, bool vec,
                                                      bool dense, const int* tabT, const int* tabOff, const unsigned (&taps)[4],
                                                      const int (&base)[4]) {
        if (LANES && !dense)
            conv_masked_gather([&](const float* any, auto row, auto f) { gather(s, any, row, f); }, src, tabT, tabOff, taps, base);
        else
            ctc_copy_masked<BF16>(s, src, cols, n0, k0, Rn, vec, dense, tabT, tabOff, taps, base);
    }
    // gather: in the lane mapping, element (k, n) at tc2_off(n, k) = k(256
    // + 8) + n: a warp's copy covers 8 columns at 4 k, banks 8k + n.
    template <class Row, class Src>
    static __device__ __forceinline__ void gather(unsigned* s, const float* any, Row row, Src src) {
        if constexpr (LANES) {
            unsigned* const d0 = s + tc2_off<false, false, CTC_BN>(conv_lane_col(0), (threadIdx.x >> 3) & 3);
            conv_lane_gather(any, row, src, [&](int j, int i) { return d0 + tc2_off<false, false, CTC_BN>(8 * i, 4 * j); });
        } else {
            ctc_gather<BF16>(s, any, row, src);
        }
    }
    template <class Fill, class CopyA, class CopyB>
    static __device__ __forceinline__ void loop(unsigned* smem, Acc& acc, int kbeg, int kend, Fill fill, CopyA copyA, CopyB copyB) {
        ctc_loop<BF16, BM, RR, true, false>(smem, acc, kbeg, kend, fill, copyA, copyB);
    }
    template <class Out>
    static __device__ __forceinline__ void eachPair(Acc& acc, int m0, int n0, int M, int N, Out out) {
        ctc_each_pair<BM>(acc, m0, n0, M, N, out);
    }
    template <class Out>
    static __device__ __forceinline__ void each(Acc& acc, int m0, int n0, int M, int N, Out out) {
        ctc_each<BM>(acc, m0, n0, M, N, out);
    }
};

// conv_wgradt_tc is the weight gradient as the transposed product, for
// weights of few columns C*K*K (a 1 x 1 kernel on 64 channels would fill
// a quarter of conv_wgrad_tc's 256 columns): dw^T (C*K*K x O) = col (C*K*K
// x N*OH*OW) * dy^T, the im2col rows gathered into the k-contiguous A
// panel (4 consecutive output positions a chunk) and dy^T, dense and
// k-contiguous (dy's rows), copied as gemm_tc2 copies B^T; the partial
// products are written in dw's own layout, out[z][o][r].
template <bool BF16, int BM, bool RR = false>
__device__ __forceinline__ void conv_wgradt_tc(float* out, const float* dy, const float* x, int accumulate, int chunk,
                                               int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW,
                                               int cm) {
    TC2_DYNAMIC_SHARED(smem);
    __shared__ int tabY[2][TC2_BK], tabX[2][TC2_BK], tabOff[2][TC2_BK];
    const int KK = K * K, Rn = C * KK, plane = OH * OW, cols = N * plane;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * CTC_BN;
    const int kbeg = blockIdx.z * chunk, kend = kbeg + chunk < cols ? kbeg + chunk : cols;
    float* o = out + (long long)blockIdx.z * O * Rn;
    const int cstride = cm ? N * H * W : H * W, istride = cm ? H * W : C * H * W;
    const bool masked = KK <= CTC_TAPS;
    constexpr int CH = BM * TC2_BK / 4 / 256;
    // This thread's rows (c, i, j) of w: the tap's offset from the output
    // position's top-left, its index and the channel's offset in x.
    int ri[CH], rj[CH], tap[CH], coff[CH];
#pragma unroll
    for (int l = 0; l < CH; l++) ctc_tap(m0 + ctc_row(l), Rn, KK, K, P, W, cstride, ri[l], rj[l], tap[l], coff[l]);
    const auto fill = [&](int slot, int k0) {
        ctc_fill_positions(tabY[slot], tabX[slot], tabOff[slot], k0, kend, plane, OW, S, P, H, W, K, istride, masked);
    };
    const bool vb = ctc_aligned(dy, cols) && (kbeg & 3) == 0;
    const auto copyB = [&](unsigned* s, int k0, int) {
        ctc_copy_dense<BF16, true, CTC_BN>(s, dy, cols, n0, O, k0, kend, vb);
    };
    const auto slotOf = [&](int k0) { return ((k0 - kbeg) / TC2_BK) & 1; };
    float acc[BM / 32][8][4];
    if (masked) {
        const auto copyA = [&](unsigned* s, int k0) {
            const int slot = slotOf(k0);
            ctc_gather_rows<BF16, BM>(
                s, x, [&](int k) { return ctc_rowv{tabY[slot][k], 0, tabOff[slot][k]}; },
                [&](int l, const ctc_rowv& v) -> const float* {
                    return ctc_valid((unsigned)v.a, tap[l]) ? x + (v.off + coff[l]) : nullptr;
                });
        };
        ctc_loop<BF16, BM, RR, true, true>(smem, acc, kbeg, kend, fill, copyA, copyB);
    } else {
        const auto copyA = [&](unsigned* s, int k0) {
            const int slot = slotOf(k0);
            ctc_gather_rows<BF16, BM>(
                s, x, [&](int k) { return ctc_rowv{tabY[slot][k], tabX[slot][k], tabOff[slot][k]}; },
                [&](int l, const ctc_rowv& v) -> const float* {
                    const int yy = v.a + ri[l], xx = v.b + rj[l];
                    const bool in = (unsigned)yy < (unsigned)H && (unsigned)xx < (unsigned)W;
                    return in ? x + v.off + coff[l] : nullptr;
                });
        };
        ctc_loop<BF16, BM, RR, true, true>(smem, acc, kbeg, kend, fill, copyA, copyB);
    }
    ctc_each<BM>(acc, m0, n0, Rn, O, [&](int r, int gm, float v) {
        float* q = o + (long long)gm * Rn + r;
        if (accumulate) v += *q;
        *q = v;
    });
}

#define CTC_ARGS N, C, H, W, O, K, S, P, OH, OW, cm

#endif  // CONV_TC_CUH
