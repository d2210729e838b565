// gemm_tc.cu: batched matrix product on tensor cores (sm_80 and later),
// row-major, FP32 in and out, the inputs rounded on the fly:
//
//   C[b] = alpha*op(A[b])*op(B[b]) + beta*C[b],   op(X) = X or X^T
//
// with sgemm.cu's arguments (sgemm_f32 is the FP32 path and the fallback
// on older GPUs). gemm_tf32 rounds every element of op(A) and op(B) to TF32
// (cvt.rna.tf32.f32: 10 mantissa bits, to nearest, ties away from zero) and
// multiplies with mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32;
// gemm_bf16 rounds them to bfloat16 (to nearest even, cvt.rn.bf16x2.f32)
// and multiplies with mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32.
// Both accumulate in FP32 (the tensor core's FP32 accumulator).
//
// Each 256-thread block (8 warps, 2 x 4) computes a 128 x 128 tile of C
// (blockIdx.x: columns, blockIdx.y: rows, blockIdx.z: batch, grid-stride),
// each warp a 64 x 32 tile (4 x 4 mma tiles of 16 x 8, 64 FP32 accumulators
// per thread). Panels of op(A) (128 rows) and op(B) (128 columns) are staged
// in shared memory as 32-bit words along K: one TF32 value, or two bf16
// values of consecutive k packed as the mma operands want them (lower k in
// the lower half), 16 words deep (16 k for TF32, 32 for BF16), both
// panels rounded once when stored. Double buffering: while the warps
// multiply one panel, each thread holds the next panel's 16 words in
// registers (loaded from global memory before the products, stored into
// the other buffer after them), one __syncthreads per panel. Rows are
// padded to 20 words, so that a warp's fragment loads (lane (g, t) reads
// word t of row g) hit 32 distinct banks. Out-of-range rows, columns and k
// are zero. No cp.async: the conversion happens between the global load
// and the shared store, and lda/ldb/offsets carry no 16-byte alignment.
// beta == 0 means C is not read (it may hold NaN).
//
// The fragment layouts are PTX's ("Matrix Fragments for mma.m16n8k8" and
// "for mma.m16n8k16 with floating point type"): with g = lane / 4 and
// t = lane % 4, the m16n8k8 TF32 fragment a0..a3 holds A[g][t], A[g+8][t],
// A[g][t+4], A[g+8][t+4] and b0, b1 hold B[t][g], B[t+4][g]; the m16n8k16
// BF16 fragment's four registers hold the pairs A[g][2t..2t+1],
// A[g+8][2t..2t+1], A[g][2t+8..2t+9], A[g+8][2t+8..2t+9] and B[2t..2t+1][g],
// B[2t+8..2t+9][g] -- in words of the staged panels (word w of k-row r is
// k = 2w, 2w+1), the same positions as TF32's: word t and word t+4 of rows
// g and g+8. The accumulators c0..c3 are C[g][2t], C[g][2t+1],
// C[g+8][2t], C[g+8][2t+1] for both.
//
// On the CPU emulator (kernels/cuda/emu/cuda_emu.h) mma_tf32_m16n8k8 and
// mma_bf16_m16n8k16 are warp collectives with these layouts, and
// tf32_round/bf16x2_round round bit for bit as the PTX conversions do.
//
// The mma instructions are warp collectives: the launchers insist on whole
// warps (gemm_tf32_warps, gemm_bf16_warps), and the thread mapping assumes
// blocks of exactly 256 threads, as sgemm_f32's.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md). This file is compiled
// for sm_80 only (its PTX is what sm_86/89/90 JIT) and checked by ptxas for
// sm_80 and sm_90; the backend uses sgemm_f32 below compute capability 8.0.
// gen: min-arch 80

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "gemm_tc.cu needs sm_80 or later (mma.sync with TF32/BF16 operands)"
#endif

#include "tc.cuh"

#define TC_TILE 128  // rows of op(A) and columns of op(B) per block
#define TC_WORDS 16  // words of k per staged panel row
#define TC_PITCH 20  // words per staged row (padded: conflict-free fragment loads)
#define TC_THREADS 256

// tc_word returns word kw (k = k0 + kw*E .. + E-1, E = 1 for TF32, 2 for
// BF16) of row r of the panel of X, whose element (r, k) is x[r*ld + k]
// (kcontig) or x[k*ld + r], rounded and packed; out-of-range rows and k
// read as zero.
template <bool BF16>
__device__ __forceinline__ unsigned tc_word(const float* x, long long ld, bool kcontig, int r, int R, int k, int K) {
    float v0 = 0.f, v1 = 0.f;
    if (r < R) {
        if (k < K) v0 = kcontig ? x[r * ld + k] : x[k * ld + r];
        if (BF16 && k + 1 < K) v1 = kcontig ? x[r * ld + k + 1] : x[(k + 1) * ld + r];
    }
    if (BF16) return bf16x2_round(v0, v1);
    return tf32_round(v0);
}

template <bool BF16>
__device__ __forceinline__ void gemm_tc(
    int transA, int transB, int M, int N, int K, float alpha,
    const float* A, long long lda, long long strideA,
    const float* B, long long ldb, long long strideB,
    float beta, float* C, long long ldc, long long strideC, int batch) {
    __shared__ unsigned As[2][TC_TILE * TC_PITCH];
    __shared__ unsigned Bs[2][TC_TILE * TC_PITCH];
    const int E = BF16 ? 2 : 1;       // k per word
    const int KT = TC_WORDS * E;      // k per panel
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;  // the warp's tile in the block's
    const int m0 = blockIdx.y * TC_TILE, n0 = blockIdx.x * TC_TILE;
    // The words this thread stages, e = tid + 256*l: along k when k is
    // contiguous in memory (16 threads per row), else along the rows.
    const bool akc = !transA, bkc = transB;  // op(A)(m, k) = a[m*lda + k] when !transA; op(B)(k, n) = b[n*ldb + k] when transB

    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        const float* a = A + bz * strideA;
        const float* b = B + bz * strideB;
        float* c = C + bz * strideC;
        float acc[4][4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int q = 0; q < 4; q++) acc[i][j][q] = 0.f;

        unsigned ra[8], rb[8];
        // load fetches panel k0's words into ra, rb.
        auto load = [&](int k0) {
#pragma unroll
            for (int l = 0; l < 8; l++) {
                const int e = tid + TC_THREADS * l;
                int r = akc ? (e >> 4) : (e & 127), w = akc ? (e & 15) : (e >> 7);
                ra[l] = tc_word<BF16>(a, lda, akc, m0 + r, M, k0 + w * E, K);
                r = bkc ? (e >> 4) : (e & 127), w = bkc ? (e & 15) : (e >> 7);
                rb[l] = tc_word<BF16>(b, ldb, bkc, n0 + r, N, k0 + w * E, K);
            }
        };
        // store writes ra, rb into buffer s.
        auto store = [&](int s) {
#pragma unroll
            for (int l = 0; l < 8; l++) {
                const int e = tid + TC_THREADS * l;
                int r = akc ? (e >> 4) : (e & 127), w = akc ? (e & 15) : (e >> 7);
                As[s][r * TC_PITCH + w] = ra[l];
                r = bkc ? (e >> 4) : (e & 127), w = bkc ? (e & 15) : (e >> 7);
                Bs[s][r * TC_PITCH + w] = rb[l];
            }
        };

        const int panels = (K + KT - 1) / KT;
        if (panels > 0) {
            load(0);
            store(0);
        }
        __syncthreads();
        for (int p = 0; p < panels; p++) {
            const int s = p & 1;
            if (p + 1 < panels) load((p + 1) * KT);  // in flight during the products
            const unsigned* as = As[s];
            const unsigned* bs = Bs[s];
#pragma unroll
            for (int ks = 0; ks < TC_WORDS; ks += 8) {
                unsigned fa[4][4], fb[4][2];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const unsigned* row = as + (wm + 16 * i + g) * TC_PITCH + ks + t;
                    fa[i][0] = row[0];
                    fa[i][1] = row[8 * TC_PITCH];
                    fa[i][2] = row[4];
                    fa[i][3] = row[8 * TC_PITCH + 4];
                }
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const unsigned* col = bs + (wn + 8 * j + g) * TC_PITCH + ks + t;
                    fb[j][0] = col[0];
                    fb[j][1] = col[4];
                }
                tc_mmas<BF16>(acc, fa, fb);
            }
            if (p + 1 < panels) store(s ^ 1);  // the other buffer: last read before the previous barrier
            __syncthreads();
        }

        tc_store(c, ldc, M, N, m0 + wm, n0 + wn, g, t, alpha, beta, acc);
    }
}

// C[b] = alpha*tf32(op(A[b]))*tf32(op(B[b])) + beta*C[b] on tensor cores (FP32 accumulation), 128 x 128 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256) gemm_tf32(
    int transA, int transB, int M, int N, int K, float alpha,
    const float* A, long long lda, long long strideA,
    const float* B, long long ldb, long long strideB,
    float beta, float* C, long long ldc, long long strideC, int batch) {
    gemm_tc<false>(transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*bf16(op(A[b]))*bf16(op(B[b])) + beta*C[b] on tensor cores (FP32 accumulation), 128 x 128 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256) gemm_bf16(
    int transA, int transB, int M, int N, int K, float alpha,
    const float* A, long long lda, long long strideA,
    const float* B, long long ldb, long long strideB,
    float beta, float* C, long long ldc, long long strideC, int batch) {
    gemm_tc<true>(transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch);
}

// ---------------------------------------------------------------------------
// gemm_tc2_tf32 and gemm_tc2_bf16: the same products (same arguments, same
// rounding, same order of the mma steps along K, so the same bits as
// gemm_tf32 and gemm_bf16) with a deeper pipeline and larger tiles.
//
// Each 256-thread block (8 warps, 2 x 4) computes a 128 x 256 tile of C
// (blockIdx.x: columns, blockIdx.y: rows, blockIdx.z: batch, grid-stride),
// each warp a 64 x 64 tile (4 x 8 mma tiles, 128 FP32 accumulators per
// thread): a k step loads 16 A and 16 B fragment registers (TF32) for 32
// mma, against 24 for 16 in gemm_tc.
//
// Panels of 32 k of op(A) (128 rows) and op(B) (256 columns) go through a
// ring of TC2_STAGES stages of shared memory filled with cp.async
// (cp.async.cg, 16 bytes, when the operand's rows start on 16 bytes:
// pointer, leading dimension and batch stride multiples of 4 floats;
// else four cp.async.ca of 4 bytes), TC2_STAGES - 1 panels ahead of the
// products. Out-of-range elements are zero-filled by the copy (the
// ignore-src predicate; a panel not wholly inside K, or a thread whose
// rows are not, copies 4 bytes at a time: see tc2_copy). Each panel lands
// as it lies in memory: rows along k when k is contiguous (op(A) = A,
// op(B) = B^T), else k rows along m or n, as FP32 words. Every thread rounds the 16-byte chunks it copied
// itself, once, after its cp.async.wait_group and before the block's
// barrier, so the copy needs no barrier of its own: one __syncthreads per
// panel. Panel p + 1 is rounded (and panel p + 2's copies issued) among
// panel p's mma steps, behind the first, so that neither sits between the
// barrier and the first mma. TF32 rounds in place (cvt.rna.tf32.f32); BF16
// writes the pairs of consecutive k rounded and packed as gemm_bf16's
// words (cvt.rn.bf16x2.f32: bf16x2_round(x(r, k), x(r, k + 1))) into a
// separate panel of 16 words of k, double-buffered (a thread copying k
// rows takes the chunks of two consecutive k, so it holds both halves of
// its pairs). The fragments are then read as gemm_tc's, from the same
// words, and the mma steps run in the same order: the same bits.
//
// The rows of the panels the fragments are read from are padded so that
// a warp's loads hit 32 distinct banks (lane (g, t) reads word t of row g,
// or word g of row t), and every fragment address is a per-thread base
// plus a constant: see tc2_pk, tc2_pr. Where k is contiguous, ldmatrix.x4
// loads four fragment registers at once (a row of an 8 x 8 b16 matrix is
// 4 words, and lane l receives word l % 4 of row l / 4: an mma fragment);
// k rows take one 32-bit load per register (ldmatrix's .trans works on
// 16-bit elements, not on TF32 words or bf16 pairs).
//
// Dynamic shared memory: TC2_SHARED_TF32 bytes (162 KiB) or
// TC2_SHARED_BF16 (204 KiB); the launch must opt in beyond 48 KiB (sm_80
// allows 163 KiB per block, so gemm_tc2_tf32 only; sm_90 227 KiB).
// ---------------------------------------------------------------------------

#define TC2_BM 128     // rows of op(A) per block
#define TC2_BN 256     // columns of op(B) per block
// TC2_SHARED_TF32 and TC2_SHARED_BF16 are the bytes of dynamic shared
// memory of gemm_tc2_tf32 and gemm_tc2_bf16: TC2_STAGES stages of a
// 128 x 32 and a 256 x 32 panel (TF32: padded, see tc2_pk), and for BF16
// two packed panels of 16 words of k (padded).
#define TC2_SHARED_TF32 165888
#define TC2_SHARED_BF16 208896

static_assert(TC2_SHARED_TF32 == TC2_STAGES * 4 * (TC2_BM * (TC2_BK + 4) + TC2_BN * (TC2_BK + 4)), "TC2_SHARED_TF32");
static_assert(TC2_SHARED_BF16 == TC2_STAGES * 4 * (TC2_BM + TC2_BN) * TC2_BK + 2 * 4 * (TC2_BM + TC2_BN) * (TC2_BK / 2 + 4), "TC2_SHARED_BF16");

// tc2_stage returns the words of one stage: the FP32 panel of op(A), then
// that of op(B).
template <bool BF16>
__device__ constexpr int tc2_stage() { return tc2_words<BF16, TC2_BM>() + tc2_words<BF16, TC2_BN>(); }

template <bool BF16, bool AKC, bool BKC, bool RR = false>
__device__ __forceinline__ void gemm_tc2(
    int M, int N, int K, float alpha,
    const float* A, long long lda, long long strideA,
    const float* B, long long ldb, long long strideB,
    float beta, float* C, long long ldc, long long strideC, int batch) {
    TC2_DYNAMIC_SHARED(smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 64;  // the warp's tile in the block's
    const int m0 = blockIdx.y * TC2_BM, n0 = blockIdx.x * TC2_BN;
    const int panels = (K + TC2_BK - 1) / TC2_BK;

    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        const float* a = A + bz * strideA;
        const float* b = B + bz * strideB;
        float* c = C + bz * strideC;
        // 16-byte copies when every chunk's first element is 16-byte aligned
        const bool va = ((reinterpret_cast<unsigned long long>(a) | (unsigned long long)lda * 4) & 15) == 0;
        const bool vb = ((reinterpret_cast<unsigned long long>(b) | (unsigned long long)ldb * 4) & 15) == 0;
        float acc[4][8][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int q = 0; q < 4; q++) acc[i][j][q] = 0.f;

        auto issue = [&](int p) {
            unsigned* s = smem + (p % TC2_STAGES) * tc2_stage<BF16>();
            if (va)
                tc2_copy<BF16, AKC, TC2_BM, true>(s, a, lda, m0, M, p * TC2_BK, K);
            else
                tc2_copy<BF16, AKC, TC2_BM, false>(s, a, lda, m0, M, p * TC2_BK, K);
            if (vb)
                tc2_copy<BF16, BKC, TC2_BN, true>(s + tc2_words<BF16, TC2_BM>(), b, ldb, n0, N, p * TC2_BK, K);
            else
                tc2_copy<BF16, BKC, TC2_BN, false>(s + tc2_words<BF16, TC2_BM>(), b, ldb, n0, N, p * TC2_BK, K);
        };
#pragma unroll
        for (int p = 0; p < TC2_STAGES - 1; p++) {
            if (p < panels) issue(p);
            cp_async_commit();
        }
        // round(q) waits for this thread's copies of panel q (at most the
        // next panel's group still in flight) and rounds the chunks it
        // copied: TF32 in place, BF16 into the packed panels q & 1.
        const auto round = [&](int q) {
            cp_async_wait<TC2_STAGES - 2>();
            unsigned* as = smem + (q % TC2_STAGES) * tc2_stage<BF16>();
            unsigned* bs = as + tc2_words<BF16, TC2_BM>();
            if (BF16) {
                unsigned* pa = smem + TC2_STAGES * tc2_stage<BF16>() + (q & 1) * (tc2_pwords<TC2_BM>() + tc2_pwords<TC2_BN>());
                tc2_round<BF16, AKC, TC2_BM>(as, pa);
                tc2_round<BF16, BKC, TC2_BN>(bs, pa + tc2_pwords<TC2_BM>());
            } else if (!RR) {
                tc2_round<BF16, AKC, TC2_BM>(as, nullptr);
                tc2_round<BF16, BKC, TC2_BN>(bs, nullptr);
            }
        };
        if (panels > 0) round(0);
        for (int p = 0; p < panels; p++) {
            unsigned* as = smem + (p % TC2_STAGES) * tc2_stage<BF16>();
            unsigned* bs = as + tc2_words<BF16, TC2_BM>();
            if (BF16) {  // the packed panels, double-buffered after the ring
                as = smem + TC2_STAGES * tc2_stage<BF16>() + (p & 1) * (tc2_pwords<TC2_BM>() + tc2_pwords<TC2_BN>());
                bs = as + tc2_pwords<TC2_BM>();
            }
            // panel p rounded by all (RR: landed for all); the stage of
            // panel p - 1 and the packed BF16 panels of p - 1 read by all
            __syncthreads();
#pragma unroll
            for (int ks = 0; ks < TC2_BK; ks += BF16 ? 16 : 8) {
                unsigned fa[4][4], fb[8][2];
                const int w = BF16 ? ks / 2 : ks;  // the step's first word: fragment words w + t and w + t + 4
                tc2_frags<BF16, AKC, TC2_BM, true>(fa, as, wm, w);
                tc2_frags<BF16, BKC, TC2_BN, false>(fb, bs, wn, w);
                if (!BF16 && RR) tc2_round_frags(fa, fb);
                tc_mmas<BF16>(acc, fa, fb);
                // Behind the first step's mma: the copies of panel p + 2
                // (into the stage of panel p - 1, free since the barrier),
                // then the rounding of this thread's chunks of panel p + 1
                // (into its own stage, and for BF16 the packed panels of
                // p - 1): the tensor cores work through the queued mma
                // while the warps compute addresses and round, rather than
                // idling while every warp does that between the barrier and
                // its first mma.
                if (ks == 0) {
                    if (p + TC2_STAGES - 1 < panels) issue(p + TC2_STAGES - 1);
                    cp_async_commit();
                    if (p + 1 < panels) round(p + 1);
                }
            }
        }
        cp_async_wait<0>();
        __syncthreads();  // the stages are free for the next batch

        tc_store(c, ldc, M, N, m0 + wm, n0 + wn, g, t, alpha, beta, acc);
    }
}

// gemm_tc2_layout dispatches on the layouts of op(A) and op(B) in memory
// (RR: the TF32 factors rounded in registers, gemm_tc3_tf32).
template <bool BF16, bool RR = false>
__device__ __forceinline__ void gemm_tc2_layout(
    int transA, int transB, int M, int N, int K, float alpha,
    const float* A, long long lda, long long strideA,
    const float* B, long long ldb, long long strideB,
    float beta, float* C, long long ldc, long long strideC, int batch) {
    if (!transA) {
        if (transB)
            gemm_tc2<BF16, true, true, RR>(M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch);
        else
            gemm_tc2<BF16, true, false, RR>(M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch);
    } else {
        if (transB)
            gemm_tc2<BF16, false, true, RR>(M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch);
        else
            gemm_tc2<BF16, false, false, RR>(M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch);
    }
}

// C[b] = alpha*tf32(op(A[b]))*tf32(op(B[b])) + beta*C[b] on tensor cores (FP32 accumulation), 128 x 256 tiles per 256-thread block, cp.async pipeline; TC2_SHARED_TF32 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) gemm_tc2_tf32(
    int transA, int transB, int M, int N, int K, float alpha,
    const float* A, long long lda, long long strideA,
    const float* B, long long ldb, long long strideB,
    float beta, float* C, long long ldc, long long strideC, int batch) {
    gemm_tc2_layout<false>(transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*bf16(op(A[b]))*bf16(op(B[b])) + beta*C[b] on tensor cores (FP32 accumulation), 128 x 256 tiles per 256-thread block, cp.async pipeline; TC2_SHARED_BF16 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) gemm_tc2_bf16(
    int transA, int transB, int M, int N, int K, float alpha,
    const float* A, long long lda, long long strideA,
    const float* B, long long ldb, long long strideB,
    float beta, float* C, long long ldc, long long strideC, int batch) {
    gemm_tc2_layout<true>(transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch);
}

// C[b] = alpha*tf32(op(A[b]))*tf32(op(B[b])) + beta*C[b] as gemm_tc2_tf32, the factors rounded in registers after each fragment load instead of by a pass over each panel in shared memory (the same words and bits); TC2_SHARED_TF32 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) gemm_tc3_tf32(
    int transA, int transB, int M, int N, int K, float alpha,
    const float* A, long long lda, long long strideA,
    const float* B, long long ldb, long long strideB,
    float beta, float* C, long long ldc, long long strideC, int batch) {
    gemm_tc2_layout<false, true>(transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch);
}
