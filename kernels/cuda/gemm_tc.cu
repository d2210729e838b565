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

#ifdef __CUDA_ARCH__
// tf32_round returns x rounded to TF32 (cvt.rna.tf32.f32), as a 32-bit word.
__device__ __forceinline__ unsigned tf32_round(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

// bf16x2_round returns lo and hi rounded to bfloat16 (to nearest even),
// packed with lo in the lower 16 bits.
__device__ __forceinline__ unsigned bf16x2_round(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// d += A*B for one 16 x 8 x 8 TF32 tile of the warp.
__device__ __forceinline__ void mma_tf32_m16n8k8(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += A*B for one 16 x 8 x 16 BF16 tile of the warp.
__device__ __forceinline__ void mma_bf16_m16n8k16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

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
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        if (BF16)
                            mma_bf16_m16n8k16(acc[i][j], fa[i], fb[j]);
                        else
                            mma_tf32_m16n8k8(acc[i][j], fa[i], fb[j]);
                    }
            }
            if (p + 1 < panels) store(s ^ 1);  // the other buffer: last read before the previous barrier
            __syncthreads();
        }

#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int gm = m0 + wm + 16 * i + g + 8 * h;
                if (gm >= M) continue;
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int u = 0; u < 2; u++) {
                        const int gn = n0 + wn + 8 * j + 2 * t + u;
                        if (gn >= N) continue;
                        float* pc = c + gm * ldc + gn;
                        float v = alpha * acc[i][j][2 * h + u];
                        if (beta != 0.f) v = fmaf(beta, *pc, v);
                        *pc = v;
                    }
            }
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
