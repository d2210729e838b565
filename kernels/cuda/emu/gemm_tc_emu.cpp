// gemm_tc_emu.cpp: gemm_tc.cu on the CPU emulator.
//
// 1. The emulated conversions against hand-worked values (TF32 ties away
//    from zero, bf16 ties to even, NaN, overflow to infinity).
// 2. The emulated mma.sync, one warp, against a naive product: the test
//    kernel scatters A (16 x k) and B (k x 8) into fragments with PTX's
//    formulas as the ISA writes them (row = groupID for ai where ..., col =
//    ...), independently of gemm_tc.cu's loads, and gathers D the same way.
// 3. gemm_tf32 and gemm_bf16 against a double reference whose inputs are
//    rounded the same way (tf32_round / bf16_round): every transposition,
//    odd and zero sizes, padded leading dimensions, batches with strides (0
//    broadcasts), alpha/beta, beta = 0 with NaN in C (C must not be read).
//    Tolerance per element: 2^-23 * (mma steps + 2) * |alpha| * sum_k
//    |a_k b_k| + 2^-23 * |beta c|: the kernel rounds its FP32 accumulator
//    once per mma step (K/8 or K/16 of them), the reference once.
// 4. The emulated ldmatrix.x4 against PTX's table, on a one-warp probe
//    with scattered row addresses.
// 5. gemm_tc2_tf32 and gemm_tc2_bf16 (cp.async pipeline, 128 x 256 tiles)
//    on the same 144 products and on 72 with 16-byte aligned rows (its
//    16-byte copies), against the same reference and bit for bit against
//    gemm_tf32 and gemm_bf16 (the same mma steps in the same order).
#include "cuda_emu.h"
#include "gemm_case.h"
#include "../gemm_tc.cu"

static float tf32f(float x) { return emu::bitsFloat(tf32_round(x)); }
static float bf16f(float x) { return emu::bitsFloat(bf16_round(x) << 16); }

// mma_probe runs one mma on a warp: A is 16 x kdim, B is kdim x 8 (row
// major, already rounded), D = A*B + C (16 x 8).
__global__ void mma_probe(int kdim, const float* A, const float* B, const float* C, float* D) {
    const int laneid = threadIdx.x % 32;
    const int groupID = laneid >> 2, threadID_in_group = laneid % 4;
    unsigned a[4], b[2];
    float d[4];
    if (kdim == 8) {
        for (int i = 0; i < 4; i++) {  // row = groupID for a0, a2; groupID + 8 for a1, a3. col = threadID_in_group for a0, a1; + 4 for a2, a3
            int row = (i == 0 || i == 2) ? groupID : groupID + 8;
            int col = (i == 0 || i == 1) ? threadID_in_group : threadID_in_group + 4;
            a[i] = tf32_round(A[row * 8 + col]);
        }
        for (int i = 0; i < 2; i++) {  // row = threadID_in_group for b0; + 4 for b1. col = groupID
            int row = i == 0 ? threadID_in_group : threadID_in_group + 4;
            b[i] = tf32_round(B[row * 8 + groupID]);
        }
    } else {
        unsigned short ah[8], bh[4];
        for (int i = 0; i < 8; i++) {  // row = groupID for ai where 0 <= i < 2 || 4 <= i < 6, groupID + 8 otherwise; col = threadID_in_group*2 + (i & 1) (+8 for i >= 4)
            int row = ((0 <= i && i < 2) || (4 <= i && i < 6)) ? groupID : groupID + 8;
            int col = i < 4 ? threadID_in_group * 2 + (i & 1) : threadID_in_group * 2 + (i & 1) + 8;
            ah[i] = (unsigned short)bf16_round(A[row * 16 + col]);
        }
        for (int i = 0; i < 4; i++) {  // row = threadID_in_group*2 + (i & 1) (+8 for i >= 2), col = groupID
            int row = i < 2 ? threadID_in_group * 2 + (i & 1) : threadID_in_group * 2 + (i & 1) + 8;
            bh[i] = (unsigned short)bf16_round(B[row * 8 + groupID]);
        }
        for (int r = 0; r < 4; r++) a[r] = ah[2 * r] | (unsigned)ah[2 * r + 1] << 16;  // "elements low to high": a0, a1 in the first register
        for (int r = 0; r < 2; r++) b[r] = bh[2 * r] | (unsigned)bh[2 * r + 1] << 16;
    }
    for (int i = 0; i < 4; i++) {  // c_i: row = groupID for i < 2, groupID + 8 otherwise; col = threadID_in_group*2 + (i & 1)
        int row = i < 2 ? groupID : groupID + 8, col = threadID_in_group * 2 + (i & 1);
        d[i] = C[row * 8 + col];
    }
    if (kdim == 8)
        mma_tf32_m16n8k8(d, a, b);
    else
        mma_bf16_m16n8k16(d, a, b);
    for (int i = 0; i < 4; i++) {
        int row = i < 2 ? groupID : groupID + 8, col = threadID_in_group * 2 + (i & 1);
        D[row * 8 + col] = d[i];
    }
}

// ldsm_probe runs one ldmatrix.x4 on a warp: matrix i's row j (4 words,
// word c = 1000 i + 10 j + c) lies at words ((8i + j) * 8 + 4 ((i + j) % 2))
// of shared memory (16-byte aligned, scattered), lane l gives the address
// of row l % 8 of matrix l / 8, and out[4l + i] receives its register i.
__global__ void ldsm_probe(unsigned* out) {
    alignas(16) __shared__ unsigned sm[32 * 8];
    const int lane = threadIdx.x % 32;
    for (int e = lane; e < 32 * 4; e += 32) {
        const int i = e / 32, j = e / 4 % 8, c = e % 4;
        sm[(8 * i + j) * 8 + 4 * ((i + j) % 2) + c] = 1000 * i + 10 * j + c;
    }
    __syncthreads();
    const int i = lane / 8, j = lane % 8;
    unsigned r[4];
    ldmatrix_x4(r, sm + (8 * i + j) * 8 + 4 * ((i + j) % 2));
    for (int q = 0; q < 4; q++) out[4 * lane + q] = r[q];
}

// ldsm checks ldsm_probe against PTX's table for ldmatrix .x4 .b16: the
// lane with %laneid l holds, in register i, the elements of matrix i at
// row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1: the 32-bit word l % 4
// of that row.
static int ldsm() {
    std::vector<unsigned> out(128);
    emu::launch(dim3(1), dim3(32), ldsm_probe, out.data());
    int bad = 0;
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++) {
            const unsigned want = 1000 * i + 10 * (l / 4) + l % 4;
            if (out[4 * l + i] != want && ++bad <= 5) std::printf("ldmatrix: lane %d register %d = %u, want %u\n", l, i, out[4 * l + i], want);
        }
    return bad;
}

static int conversions() {
    int bad = 0;
    auto want = [&](const char* what, float got, float w) {
        if (!(got == w || (std::isnan(got) && std::isnan(w)))) {
            std::printf("%s = %.9g, want %.9g\n", what, got, w);
            bad++;
        }
    };
    const float t = std::ldexp(1.f, -11), b = std::ldexp(1.f, -8);
    want("tf32(1 + 2^-11) (tie: away from zero)", tf32f(1 + t), 1 + 2 * t);
    want("tf32(-(1 + 2^-11))", tf32f(-(1 + t)), -(1 + 2 * t));
    want("tf32(1 + 3*2^-11) (tie)", tf32f(1 + 3 * t), 1 + 4 * t);
    want("tf32(1 + 2^-11 - 2^-23)", tf32f(1 + t - std::ldexp(1.f, -23)), 1);
    want("tf32(max float)", tf32f(3.4028235e38f), INFINITY);
    want("tf32(NaN)", tf32f(NAN), NAN);
    want("tf32(-inf)", tf32f(-INFINITY), -INFINITY);
    want("bf16(1 + 2^-8) (tie: to even)", bf16f(1 + b), 1);
    want("bf16(1 + 3*2^-8) (tie: to even)", bf16f(1 + 3 * b), 1 + 4 * b);
    want("bf16(-(1 + 3*2^-8))", bf16f(-(1 + 3 * b)), -(1 + 4 * b));
    want("bf16(1 + 2^-8 + 2^-20)", bf16f(1 + b + std::ldexp(1.f, -20)), 1 + 2 * b);
    want("bf16(max float)", bf16f(3.4028235e38f), INFINITY);
    want("bf16(NaN)", bf16f(NAN), NAN);
    return bad;
}

static int probes(emu::Rng& r) {
    int bad = 0;
    for (int kdim : {8, 16})
        for (int rep = 0; rep < 3; rep++) {
            std::vector<float> A(16 * kdim), B(kdim * 8), C(16 * 8), D(16 * 8);
            for (auto& x : A) x = (float)r.uniform(-2, 2);
            for (auto& x : B) x = (float)r.uniform(-2, 2);
            for (auto& x : C) x = (float)r.uniform(-1, 1);
            emu::launch(dim3(1), dim3(32), mma_probe, kdim, (const float*)A.data(), (const float*)B.data(), (const float*)C.data(), D.data());
            char what[64];
            std::snprintf(what, sizeof what, "mma k%d probe %d", kdim, rep);
            emu::Check c{what};
            for (int i = 0; i < 16; i++)
                for (int j = 0; j < 8; j++) {
                    double s = C[i * 8 + j];
                    for (int k = 0; k < kdim; k++) {
                        float a = A[i * kdim + k], bb = B[k * 8 + j];
                        s += kdim == 8 ? (double)tf32f(a) * tf32f(bb) : (double)bf16f(a) * bf16f(bb);
                    }
                    c(D[i * 8 + j], (float)s, 0, 0, i * 8 + j);  // one rounding on both sides: equal
                }
            bad += c.bad;
        }
    return bad;
}

// launchTC runs gemm_tf32/gemm_bf16 (v2 false: 128 x 128 tiles) or
// gemm_tc2_tf32/gemm_tc2_bf16 (v2: 128 x 256 tiles, TC2_SHARED_* bytes of
// dynamic shared memory) on case g into C, at most two blocks along the
// batch (grid-stride).
static void launchTC(bool bf, bool v2, const GemmCase& g, float alpha, float beta, std::vector<float>& C) {
    if (g.m == 0 || g.n == 0) return;
    auto k = v2 ? (bf ? gemm_tc2_bf16 : gemm_tc2_tf32) : (bf ? gemm_bf16 : gemm_tf32);
    const int bn = v2 ? TC2_BN : 128, bm = v2 ? TC2_BM : 128;
    emu::sharedBytes = v2 ? (bf ? TC2_SHARED_BF16 : TC2_SHARED_TF32) : 0;
    emu::launch(dim3((g.n + bn - 1) / bn, (g.m + bm - 1) / bm, std::min(g.batch, 2)), dim3(256), k, g.ta, g.tb, g.m, g.n, g.k, alpha,
                (const float*)g.A.data(), g.lda, g.sa, (const float*)g.B.data(), g.ldb, g.sb, beta, C.data(), g.ldc, g.sc, g.batch);
    emu::sharedBytes = 0;
}

// checkTC checks C (the result of a product of case g from C0) against
// the double reference, as the header says.
static int checkTC(const char* what, bool bf, const GemmCase& g, float alpha, float beta, const std::vector<float>& C0, const std::vector<float>& C) {
    emu::Check c{what};
    const int steps = (g.k + (bf ? 15 : 7)) / (bf ? 16 : 8);
    const double u = std::ldexp(1.0, -23);
    std::vector<float> want = C0;
    std::vector<double> tol(C.size(), 0);
    for (int bi = 0; bi < g.batch; bi++)
        for (int i = 0; i < g.m; i++)
            for (int j = 0; j < g.n; j++) {
                double acc = 0, mag = 0;
                for (int p = 0; p < g.k; p++) {
                    float a = g.a(bi, i, p), b = g.b(bi, p, j);
                    double x = bf ? (double)bf16f(a) * bf16f(b) : (double)tf32f(a) * tf32f(b);
                    acc += x, mag += std::fabs(x);
                }
                const long long o = g.c(bi, i, j);
                double v = alpha * acc;
                if (beta != 0) v += beta * (double)C0[o];
                want[o] = (float)v;
                tol[o] = u * (steps + 2) * alpha * mag + (beta != 0 ? u * std::fabs(beta * C0[o]) : 0);
            }
    for (size_t i = 0; i < C.size(); i++) c(C[i], want[i], tol[i], 0, (long long)i);
    return c.bad;
}

// sameBits counts the elements where got and want differ in their bits
// (any NaN equals any NaN), printing the first five.
static int sameBits(const char* what, const std::vector<float>& got, const std::vector<float>& want) {
    int bad = 0;
    for (size_t i = 0; i < got.size(); i++) {
        uint32_t x, y;
        std::memcpy(&x, &got[i], 4);
        std::memcpy(&y, &want[i], 4);
        if (x != y && !(std::isnan(got[i]) && std::isnan(want[i])) && ++bad <= 5)
            std::printf("%s: element %zu = %.9g (gemm_tc2), %.9g (gemm_tc)\n", what, i, got[i], want[i]);
    }
    return bad;
}

int main() {
    emu::Rng r(7);
    int bad = conversions(), cases = 0, cases2 = 0;
    bad += probes(r) + ldsm();
    struct Shape { int m, n, k, batch; };
    const Shape shapes[] = {{1, 1, 1, 1}, {0, 3, 2, 1}, {3, 0, 2, 1}, {2, 3, 0, 1}, {7, 33, 130, 1},
                            {130, 7, 33, 2}, {129, 130, 40, 1}, {33, 5, 17, 3}, {128, 128, 32, 1}};
    // 1. gemm_tf32/gemm_bf16 on the 144 products, and gemm_tc2_* on the
    //    same operands (mostly unaligned: its 4-byte copies), bit for bit
    //    the same (same mma steps in the same order) and within tolerance.
    for (int bf = 0; bf < 2; bf++)
        for (const Shape& s : shapes)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) {
                    GemmCase g(r, s.m, s.n, s.k, s.batch, ta, tb);
                    std::vector<float>& C = g.C;
                    for (float beta : {0.f, 0.5f}) {
                        float alpha = 1.25f;
                        for (auto& x : C) x = beta == 0 ? NAN : (float)r.uniform(-1, 1);
                        std::vector<float> C0 = C, C2 = C;
                        launchTC(bf, false, g, alpha, beta, C);
                        launchTC(bf, true, g, alpha, beta, C2);
                        char what[96];
                        std::snprintf(what, sizeof what, "%s %dx%dx%d batch %d ta %d tb %d beta %g", bf ? "bf16" : "tf32", s.m, s.n, s.k,
                                      s.batch, ta, tb, beta);
                        bad += checkTC(what, bf, g, alpha, beta, C0, C), cases++;
                        char what2[128];
                        std::snprintf(what2, sizeof what2, "tc2 %s", what);
                        bad += checkTC(what2, bf, g, alpha, beta, C0, C2) + sameBits(what2, C2, C), cases2++;
                    }
                }
    // 2. gemm_tc2_* with 16-byte aligned rows (its 16-byte copies, partial
    //    chunks at the edges), on those shapes and larger ones (several
    //    128 x 256 tiles, panels off 32), against gemm_tc and the reference.
    const Shape aligned[] = {{1, 1, 1, 1}, {2, 3, 0, 1}, {7, 33, 130, 1}, {130, 7, 33, 2}, {129, 130, 40, 1},
                             {33, 5, 17, 3}, {128, 256, 64, 1}, {131, 260, 45, 1}, {257, 9, 70, 2}};
    for (int bf = 0; bf < 2; bf++)
        for (const Shape& s : aligned)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) {
                    GemmCase g(r, s.m, s.n, s.k, s.batch, ta, tb, true);
                    const float alpha = 0.75f, beta = r.intn(2) ? 0.f : -0.5f;
                    for (auto& x : g.C) x = beta == 0 ? NAN : (float)r.uniform(-1, 1);
                    std::vector<float> C0 = g.C, C2 = g.C;
                    launchTC(bf, false, g, alpha, beta, g.C);
                    launchTC(bf, true, g, alpha, beta, C2);
                    char what[128];
                    std::snprintf(what, sizeof what, "tc2 aligned %s %dx%dx%d batch %d ta %d tb %d beta %g", bf ? "bf16" : "tf32", s.m, s.n, s.k,
                                  s.batch, ta, tb, beta);
                    bad += checkTC(what, bf, g, alpha, beta, C0, C2) + sameBits(what, C2, g.C), cases2++;
                }
    std::printf("%s: gemm_tc (conversions, mma and ldmatrix probes, %d products; gemm_tc2 %d products, bit for bit as gemm_tc), %d mismatches\n",
                bad ? "FAIL" : "PASS", cases, cases2, bad);
    return bad != 0;
}
