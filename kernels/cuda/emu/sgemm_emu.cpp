// sgemm_emu.cpp: sgemm_f32 of sgemm.cu run on the CPU emulator against a
// double reference: every transposition, odd and zero sizes, padded leading
// dimensions, batches with strides (0 broadcasts), alpha/beta, and beta = 0
// with NaN in C (C must not be read).
#include "cuda_emu.h"
#include "../sgemm.cu"

int main() {
    emu::Rng r(5);
    int bad = 0, cases = 0;
    struct Shape { int m, n, k, batch; };
    const Shape shapes[] = {{1, 1, 1, 1}, {0, 3, 2, 1}, {3, 0, 2, 1}, {2, 3, 0, 1}, {65, 70, 33, 1},
                            {64, 64, 16, 2}, {3, 130, 17, 3}, {17, 5, 40, 2}};
    for (const Shape& s : shapes)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int rowsA = ta ? s.k : s.m, colsA = ta ? s.m : s.k;
                int rowsB = tb ? s.n : s.k, colsB = tb ? s.k : s.n;
                long long lda = colsA + r.intn(3), ldb = colsB + r.intn(3), ldc = s.n + r.intn(3);
                long long sa = r.intn(3) == 0 ? 0 : rowsA * lda + r.intn(4);
                long long sb = r.intn(3) == 0 ? 0 : rowsB * ldb + r.intn(4);
                long long sc = (long long)s.m * ldc + r.intn(4);
                std::vector<float> A(sa * (s.batch - 1) + rowsA * lda + 1), B(sb * (s.batch - 1) + rowsB * ldb + 1),
                    C(sc * s.batch + 1);
                for (auto& x : A) x = (float)r.uniform(-1, 1);
                for (auto& x : B) x = (float)r.uniform(-1, 1);
                for (float beta : {0.f, 0.5f}) {
                    float alpha = 1.25f;
                    for (auto& x : C) x = beta == 0 ? NAN : (float)r.uniform(-1, 1);
                    std::vector<float> C0 = C;
                    if (s.m > 0 && s.n > 0)
                        emu::launch(dim3((s.n + 63) / 64, (s.m + 63) / 64, std::min(s.batch, 2)), dim3(256), sgemm_f32, ta, tb, s.m, s.n, s.k,
                                    alpha, (const float*)A.data(), lda, sa, (const float*)B.data(), ldb, sb, beta, C.data(), ldc, sc, s.batch);
                    char what[96];
                    std::snprintf(what, sizeof what, "sgemm %dx%dx%d batch %d ta %d tb %d beta %g", s.m, s.n, s.k, s.batch, ta, tb, beta);
                    emu::Check c{what};
                    std::vector<float> want = C0;
                    for (int bi = 0; bi < s.batch; bi++)
                        for (int i = 0; i < s.m; i++)
                            for (int j = 0; j < s.n; j++) {
                                double acc = 0;
                                for (int p = 0; p < s.k; p++) {
                                    double a = ta ? A[bi * sa + p * lda + i] : A[bi * sa + i * lda + p];
                                    double b = tb ? B[bi * sb + j * ldb + p] : B[bi * sb + p * ldb + j];
                                    acc += a * b;
                                }
                                double v = alpha * acc;
                                if (beta != 0) v += beta * (double)C0[bi * sc + i * ldc + j];
                                want[bi * sc + i * ldc + j] = (float)v;
                            }
                    for (size_t i = 0; i < C.size(); i++) c(C[i], want[i], 3e-7 * (s.k + 1) * alpha + 1e-6, 1e-6, (long long)i);
                    bad += c.bad, cases++;
                }
            }
    std::printf("%s: sgemm, %d checks, %d mismatches\n", bad ? "FAIL" : "PASS", cases, bad);
    return bad != 0;
}
