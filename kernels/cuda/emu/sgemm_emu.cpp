// sgemm_emu.cpp: sgemm_f32 of sgemm.cu run on the CPU emulator against a
// double reference: every transposition, odd and zero sizes, padded leading
// dimensions, batches with strides (0 broadcasts), alpha/beta, and beta = 0
// with NaN in C (C must not be read).
#include "cuda_emu.h"
#include "gemm_case.h"
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
                GemmCase g(r, s.m, s.n, s.k, s.batch, ta, tb);
                std::vector<float>& C = g.C;
                for (float beta : {0.f, 0.5f}) {
                    float alpha = 1.25f;
                    for (auto& x : C) x = beta == 0 ? NAN : (float)r.uniform(-1, 1);
                    std::vector<float> C0 = C;
                    if (s.m > 0 && s.n > 0)
                        emu::launch(dim3((s.n + 63) / 64, (s.m + 63) / 64, std::min(s.batch, 2)), dim3(256), sgemm_f32, ta, tb, s.m, s.n, s.k,
                                    alpha, (const float*)g.A.data(), g.lda, g.sa, (const float*)g.B.data(), g.ldb, g.sb, beta, C.data(), g.ldc, g.sc, s.batch);
                    char what[96];
                    std::snprintf(what, sizeof what, "sgemm %dx%dx%d batch %d ta %d tb %d beta %g", s.m, s.n, s.k, s.batch, ta, tb, beta);
                    emu::Check c{what};
                    std::vector<float> want = C0;
                    for (int bi = 0; bi < s.batch; bi++)
                        for (int i = 0; i < s.m; i++)
                            for (int j = 0; j < s.n; j++) {
                                double acc = 0;
                                for (int p = 0; p < s.k; p++) acc += (double)g.a(bi, i, p) * g.b(bi, p, j);
                                double v = alpha * acc;
                                if (beta != 0) v += beta * (double)C0[g.c(bi, i, j)];
                                want[g.c(bi, i, j)] = (float)v;
                            }
                    for (size_t i = 0; i < C.size(); i++) c(C[i], want[i], 3e-7 * (s.k + 1) * alpha + 1e-6, 1e-6, (long long)i);
                    bad += c.bad, cases++;
                }
            }
    std::printf("%s: sgemm, %d checks, %d mismatches\n", bad ? "FAIL" : "PASS", cases, bad);
    return bad != 0;
}
