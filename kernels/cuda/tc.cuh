// tc.cuh: the tensor-core building blocks shared by gemm_tc.cu and
// conv_tc.cu (sm_80 and later): the TF32/BF16 conversions, the mma.sync
// tiles and their stores, cp.async and ldmatrix, and the panel layouts,
// copies, rounding and fragment loads of the cp.async pipeline (the
// "gemm_tc2" design described in gemm_tc.cu). On the CPU emulator
// (kernels/cuda/emu/cuda_emu.h) the device instructions are warp
// collectives with PTX's fragment layouts and conversions.
#pragma once

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

// tc_mmas runs a warp's MI x NJ mma tiles of one k step:
// acc[i][j] += fa[i] x fb[j] (gemm_tc and gemm_tc2 alike).
template <bool BF16, int MI, int NJ>
__device__ __forceinline__ void tc_mmas(float (&acc)[MI][NJ][4], unsigned (&fa)[MI][4], unsigned (&fb)[NJ][2]) {
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            if (BF16)
                mma_bf16_m16n8k16(acc[i][j], fa[i], fb[j]);
            else
                mma_tf32_m16n8k8(acc[i][j], fa[i], fb[j]);
        }
}

// tc_store writes a warp's accumulators, acc[i][j][2h+u] the element of
// row r0 + 16i + g + 8h and column c0 + 8j + 2t + u (the mma fragment
// layout; g = lane/4, t = lane%4), as alpha*acc + beta*C inside the
// M x N matrix (C not read when beta is 0).
template <int MI, int NJ>
__device__ __forceinline__ void tc_store(float* c, long long ldc, int M, int N, int r0, int c0, int g, int t,
                                         float alpha, float beta, float (&acc)[MI][NJ][4]) {
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int gm = r0 + 16 * i + g + 8 * h;
            if (gm >= M) continue;
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int u = 0; u < 2; u++) {
                    const int gn = c0 + 8 * j + 2 * t + u;
                    if (gn >= N) continue;
                    float* pc = c + gm * ldc + gn;
                    float v = alpha * acc[i][j][2 * h + u];
                    if (beta != 0.f) v = fmaf(beta, *pc, v);
                    *pc = v;
                }
        }
}

#define TC2_BK 32      // k per panel
#define TC2_STAGES 3   // panels in the ring

#ifdef __CUDA_ARCH__
// cp_async16_if copies the 16 bytes at global src to shared dst when ok,
// else writes 16 zero bytes (cp.async.cg.shared.global with its
// ignore-src predicate: one predicated instruction, where a src-size
// register costs five or six more to turn into an address and a
// predicate); both addresses 16-byte aligned.
__device__ __forceinline__ void cp_async16_if(void* dst, const void* src, bool ok) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("{\n\t.reg .pred p;\n\tsetp.eq.u32 p, %2, 0;\n\tcp.async.cg.shared.global [%0], [%1], 16, p;\n\t}" ::"r"(d), "l"(src),
                 "r"((unsigned)ok)
                 : "memory");
}

// cp_async4_if copies the 4 bytes at global src to shared dst when ok,
// else writes 4 zero bytes (cp.async.ca.shared.global with ignore-src).
__device__ __forceinline__ void cp_async4_if(void* dst, const void* src, bool ok) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("{\n\t.reg .pred p;\n\tsetp.eq.u32 p, %2, 0;\n\tcp.async.ca.shared.global [%0], [%1], 4, p;\n\t}" ::"r"(d), "l"(src),
                 "r"((unsigned)ok)
                 : "memory");
}

// cp_async_commit closes the thread's group of cp.async operands issued
// since the previous commit (cp.async.commit_group).
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// cp_async_wait waits until at most N of the thread's committed groups
// are pending (cp.async.wait_group N): the older ones have landed in
// shared memory and are visible to the thread.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// ldmatrix_x4 loads four 8 x 8 matrices of 16-bit elements
// (ldmatrix.sync.aligned.m8n8.x4.shared.b16): lanes 8i .. 8i+7 give the
// 16-byte rows of matrix i, and lane l receives in r[i] word l % 4 of row
// l / 4 of matrix i. On 32-bit words (TF32, packed bf16 pairs) a row is 4
// words, and r[i] is exactly an mma fragment register: word t of row g.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const unsigned* row) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

// tc2_f2u and tc2_u2f reinterpret a float's bits.
__device__ __forceinline__ unsigned tc2_f2u(float x) { return __float_as_uint(x); }
__device__ __forceinline__ float tc2_u2f(unsigned u) { return __uint_as_float(u); }


#define TC2_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned name[]
#else
__device__ __forceinline__ unsigned tc2_f2u(float x) { return __builtin_bit_cast(unsigned, x); }
__device__ __forceinline__ float tc2_u2f(unsigned u) { return __builtin_bit_cast(float, u); }
#define TC2_DYNAMIC_SHARED(name) DYNAMIC_SHARED(unsigned, name)
#endif

// tc2_w4 is the 16-byte chunk of the conversion pass, tc2_w2 the two
// packed BF16 words it writes for a chunk of a k-contiguous row.
struct alignas(16) tc2_w4 {
    unsigned w[4];
};
struct alignas(8) tc2_w2 {
    unsigned w[2];
};

// tc2_clamp4 returns n clamped to 0..4.
__device__ __forceinline__ int tc2_clamp4(int n) { return n < 0 ? 0 : n > 4 ? 4 : n; }

// Panel layouts. The FP32 panels the copies land in: rows r of TC2_BK
// words (k contiguous) with a pitch of tc2_pk words, or k rows of R words
// (r contiguous) with a pitch of R + tc2_pr. For TF32 the fragments are
// read from them, so they are padded: 36 (lane (g, t) reads word t of row
// g: bank 4g + t) and R + 8 (word g of row t: bank 8t + g); for BF16 only
// their owner reads them back, 16 bytes at a time, unpadded. The packed
// BF16 panels (tc2_poff) hold 16 words of k per row with a pitch of 20
// words (bank 20g + t: 32 distinct), or 16 k rows of R + 8 words. Every
// pitch is a multiple of 4 words, so the 16-byte chunks stay aligned.
template <bool BF16>
__device__ constexpr int tc2_pk() { return BF16 ? TC2_BK : TC2_BK + 4; }
template <bool BF16>
__device__ constexpr int tc2_pr() { return BF16 ? 0 : 8; }

// tc2_words returns the words of one FP32 panel of R rows, in either
// layout.
template <bool BF16, int R>
__device__ constexpr int tc2_words() {
    return R * tc2_pk<BF16>() > TC2_BK * (R + tc2_pr<BF16>()) ? R * tc2_pk<BF16>() : TC2_BK * (R + tc2_pr<BF16>());
}

// tc2_pwords returns the words of one packed BF16 panel of R rows.
template <int R>
__device__ constexpr int tc2_pwords() { return R * 20 > 16 * (R + 8) ? R * 20 : 16 * (R + 8); }

// tc2_off is the word offset of element (r, k) of an FP32 panel of R
// rows, k contiguous (KC) or not.
template <bool BF16, bool KC, int R>
__device__ __forceinline__ int tc2_off(int r, int k) {
    return KC ? r * tc2_pk<BF16>() + k : k * (R + tc2_pr<BF16>()) + r;
}

// tc2_poff is the word offset of packed word w (k = 2w, 2w + 1) of row r
// of a packed BF16 panel of R rows.
template <bool KC, int R>
__device__ __forceinline__ int tc2_poff(int r, int w) {
    return KC ? r * 20 + w : w * (R + 8) + r;
}

// tc2_chunk returns the first element (r, k) of this thread's chunk l of
// a panel of R rows: KC, 8 chunks along each row of 32 k; else R/4 chunks
// along each k row, for BF16 in pairs (l even: k, l odd: k + 1, same r).
template <bool BF16, bool KC, int R>
__device__ __forceinline__ void tc2_chunk(int l, int& r, int& k) {
    if (KC) {
        const int e = threadIdx.x + 256 * l;
        r = e >> 3, k = (e & 7) * 4;
    } else if (BF16) {
        const int e = threadIdx.x + 256 * (l >> 1);
        r = (e % (R / 4)) * 4, k = 2 * (e / (R / 4)) + (l & 1);
    } else {
        const int e = threadIdx.x + 256 * l;
        r = (e % (R / 4)) * 4, k = e / (R / 4);
    }
}

// tc2_dr and tc2_dk return how far chunk l's first element lies from
// chunk 0's (tc2_chunk) in r and in k: the same for every thread, since
// 256 is a multiple of the chunks along a row (8) or a k row (R/4).
template <bool BF16, bool KC, int R>
__device__ constexpr int tc2_dr(int l) { return KC ? 32 * l : 0; }
template <bool BF16, bool KC, int R>
__device__ constexpr int tc2_dk(int l) {
    return KC ? 0 : BF16 ? 2 * (l >> 1) * (1024 / R) + (l & 1) : l * (1024 / R);
}

// tc2_copy issues the cp.async of this thread's chunks of panel k0 of X
// (R rows from r0; element (r, k) at x[r*ld + k] when KC, else
// x[k*ld + r]) into the FP32 panel at s: when VEC, 16-byte copies where
// every chunk is whole or outside (KC: a panel wholly inside K; else the
// thread's 4 rows inside Rn), else 4-byte ones. Chunk l's source,
// destination and bounds are chunk 0's moved by constants (tc2_dr,
// tc2_dk), so that a chunk costs an address add, a bounds test and the
// copy rather than its whole index arithmetic (the copies sat between
// each panel's barrier and its mma steps, a third of the loop's
// instructions).
//
// The 16-byte path's test compares without the clamp: written as
// tc2_clamp4(K - k) == 4, the H100's JIT (driver 580, from this sm_80
// PTX, which is right) took it for a chunk starting at k = K, where
// K - k is 0, so both factors of a k-contiguous product copied the next
// row's first 4 elements into the panel's zeros past K: C wrong wherever
// K is not a multiple of 32, both rows start on 16 bytes and op(A) = A,
// op(B) = B^T (TestGemmPrecisionKernel's aligned cases; the emulator,
// which runs this C++ as written, agreed with the CPU). k0 + TC2_BK <= K
// and gr1 + 4 <= Rn compute right there.
template <bool BF16, bool KC, int R, bool VEC>
__device__ __forceinline__ void tc2_copy(unsigned* s, const float* x, long long ld, int r0, int Rn, int k0, int K) {
    constexpr int CH = R * TC2_BK / 4 / 256;  // chunks per thread
    static_assert(256 % (R / 4) == 0, "a k row's chunks must divide the block");
    int r1, k1;
    tc2_chunk<BF16, KC, R>(0, r1, k1);
    const int gr1 = r0 + r1, gk1 = k0 + k1;
    const float* src1 = KC ? x + (long long)gr1 * ld + gk1 : x + (long long)gk1 * ld + gr1;
    unsigned* d1 = s + tc2_off<BF16, KC, R>(r1, k1);
    if (VEC && (KC ? k0 + TC2_BK <= K : gr1 + 4 <= Rn)) {
        // Every chunk whole or outside (every chunk of an inner panel and
        // block): one predicated copy each, in its own branch so that the
        // general path's size arithmetic is not issued beside it.
#pragma unroll
        for (int l = 0; l < CH; l++) {
            const int dr = tc2_dr<BF16, KC, R>(l), dk = tc2_dk<BF16, KC, R>(l);
            const bool ok = KC ? gr1 + dr < Rn : gk1 + dk < K;
            const float* src = src1 + (KC ? dr : dk) * ld;
            cp_async16_if(d1 + tc2_off<BF16, KC, R>(dr, dk), ok ? src : x, ok);
        }
        return;
    }
    // valid elements of every chunk along k (KC) or along r: the same for all
    const int n1 = KC ? tc2_clamp4(K - gk1) : tc2_clamp4(Rn - gr1);
#pragma unroll
    for (int l = 0; l < CH; l++) {
        const int dr = tc2_dr<BF16, KC, R>(l), dk = tc2_dk<BF16, KC, R>(l);
        unsigned* d = d1 + tc2_off<BF16, KC, R>(dr, dk);
        const int n = (KC ? gr1 + dr < Rn : gk1 + dk < K) ? n1 : 0;
        const float* src = src1 + (KC ? dr : dk) * ld;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const bool ok = i < n;
            cp_async4_if(d + i, ok ? src + i : x, ok);  // element i of the chunk: src + i in both layouts
        }
    }
}

// tc2_round rounds this thread's chunks of the FP32 panel at s: TF32 in
// place, BF16 packed into the panel at pk.
template <bool BF16, bool KC, int R>
__device__ __forceinline__ void tc2_round(unsigned* s, unsigned* pk) {
    constexpr int CH = R * TC2_BK / 4 / 256;
    // Chunk l is chunk 0 moved by constants (tc2_dr, tc2_dk), as in
    // tc2_copy: one base address, immediate offsets.
    int r1, k1;
    tc2_chunk<BF16, KC, R>(0, r1, k1);
    unsigned* const s1 = s + tc2_off<BF16, KC, R>(r1, k1);
#pragma unroll
    for (int l = 0; l < CH; l++) {
        const int dr = tc2_dr<BF16, KC, R>(l), dk = tc2_dk<BF16, KC, R>(l);
        tc2_w4* p = reinterpret_cast<tc2_w4*>(s1 + tc2_off<BF16, KC, R>(dr, dk));
        tc2_w4 v = *p;
        if (!BF16) {
#pragma unroll
            for (int i = 0; i < 4; i++) v.w[i] = tf32_round(tc2_u2f(v.w[i]));
            *p = v;
        } else if (KC) {  // k .. k+3 of row r: words k/2, k/2 + 1 (k = k1: dk is 0)
            tc2_w2 q;
            q.w[0] = bf16x2_round(tc2_u2f(v.w[0]), tc2_u2f(v.w[1]));
            q.w[1] = bf16x2_round(tc2_u2f(v.w[2]), tc2_u2f(v.w[3]));
            *reinterpret_cast<tc2_w2*>(pk + tc2_poff<KC, R>(r1 + dr, k1 >> 1)) = q;
        } else if (l & 1) {  // rows r .. r+3 at k - 1 (chunk l - 1) and k: word (k - 1)/2 of each (k1 even, dk odd)
            const tc2_w4 v0 = *reinterpret_cast<const tc2_w4*>(s1 + tc2_off<BF16, KC, R>(dr, dk - 1));
            tc2_w4 q;
#pragma unroll
            for (int i = 0; i < 4; i++) q.w[i] = bf16x2_round(tc2_u2f(v0.w[i]), tc2_u2f(v.w[i]));
            *reinterpret_cast<tc2_w4*>(pk + tc2_poff<KC, R>(r1, k1 >> 1) + tc2_poff<KC, R>(dr, (dk - 1) >> 1)) = q;
        }
    }
}

// tc2_round_frags rounds a k step's TF32 fragments in registers (the
// "RR" kernels, gemm_tc3_tf32 and conv_tc.cu's *_tf32rr: the same words
// as tc2_round's pass over the panels, without that pass and its place
// before the panel's barrier).
template <int MI>
__device__ __forceinline__ void tc2_round_frags(unsigned (&fa)[MI][4], unsigned (&fb)[8][2]) {
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int q = 0; q < 4; q++) fa[i][q] = tf32_round(tc2_u2f(fa[i][q]));
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
        for (int q = 0; q < 2; q++) fb[j][q] = tf32_round(tc2_u2f(fb[j][q]));
}

// tc2_foff is the offset of word w of row r of the panel the fragments
// are read from: TF32, element (r, w) of the FP32 panel; BF16, packed
// word w (k = 2w, 2w + 1) of the packed panel.
template <bool BF16, bool KC, int R>
__device__ __forceinline__ int tc2_foff(int r, int w) {
    return BF16 ? tc2_poff<KC, R>(r, w) : tc2_off<BF16, KC, R>(r, w);
}

// tc2_frags loads the fragments of one k step (words w and w + 4 of the
// rows of the panel at s) for the warp's 4 m16 tiles from row wm (A) or
// its 8 n8 tiles from row wn (B, as n rows); NT other tile counts
// (conv_tc.cu's 64-row blocks: 2 m16 tiles). Rows along k (KC): ldmatrix,
// one x4 per m16 tile or per two n8 tiles, rows 16 bytes apart in words
// w .. w+3 and w+4 .. w+7 (the padded pitches, 36 and 20 words, keep
// every 8 rows on distinct banks); k rows: one 32-bit load per register.
template <bool BF16, bool KC, int R, bool ISA, int NT = ISA ? 4 : 8>
__device__ __forceinline__ void tc2_frags(unsigned (&f)[NT][ISA ? 4 : 2], const unsigned* s, int r0, int w) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    if (KC) {
        const int q = lane >> 3, j = lane & 7;  // this lane gives row j of matrix q
        if (ISA) {  // matrices: rows 0-7 / 8-15 (q & 1), words w / w + 4 (q >> 1): a0, a1, a2, a3
#pragma unroll
            for (int i = 0; i < NT; i++) ldmatrix_x4(reinterpret_cast<unsigned (&)[4]>(f[i]), s + tc2_foff<BF16, KC, R>(r0 + 16 * i + 8 * (q & 1) + j, w + 4 * (q >> 1)));
        } else {  // matrices: tile j or j + 1 (q >> 1), words w / w + 4 (q & 1): b0, b1 of both
#pragma unroll
            for (int jj = 0; jj < NT; jj += 2) {
                unsigned v[4];
                ldmatrix_x4(v, s + tc2_foff<BF16, KC, R>(r0 + 8 * (jj + (q >> 1)) + j, w + 4 * (q & 1)));
                f[jj][0] = v[0], f[jj][1] = v[1], f[jj + 1][0] = v[2], f[jj + 1][1] = v[3];
            }
        }
    } else if (ISA) {
#pragma unroll
        for (int i = 0; i < NT; i++) {
            const int r = r0 + 16 * i + g;
            f[i][0] = s[tc2_foff<BF16, KC, R>(r, w + t)];
            f[i][1] = s[tc2_foff<BF16, KC, R>(r + 8, w + t)];
            f[i][2] = s[tc2_foff<BF16, KC, R>(r, w + t + 4)];
            f[i][3] = s[tc2_foff<BF16, KC, R>(r + 8, w + t + 4)];
        }
    } else {
#pragma unroll
        for (int jj = 0; jj < NT; jj++) {
            const int n = r0 + 8 * jj + g;
            f[jj][0] = s[tc2_foff<BF16, KC, R>(n, w + t)];
            f[jj][1] = s[tc2_foff<BF16, KC, R>(n, w + t + 4)];
        }
    }
}
