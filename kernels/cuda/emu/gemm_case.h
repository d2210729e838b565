// gemm_case.h: the operands of one batched GEMM check, shared by the
// emulator tests of sgemm.cu (sgemm_emu.cpp) and gemm_tc.cu
// (gemm_tc_emu.cpp): random A and B with padded leading dimensions and
// batch strides (0 broadcasts one matrix), C of the padded size.
#pragma once
#include <vector>

#include "cuda_emu.h"

struct GemmCase {
    int m, n, k, batch, ta, tb;
    long long lda, ldb, ldc, sa, sb, sc;
    std::vector<float> A, B, C;

    // align4 rounds lda, ldb and the batch strides of A and B up to
    // multiples of 4 floats (16 bytes: gemm_tc2's cp.async of 16 bytes),
    // after the same draws.
    GemmCase(emu::Rng& r, int m_, int n_, int k_, int batch_, int ta_, int tb_, bool align4 = false)
        : m(m_), n(n_), k(k_), batch(batch_), ta(ta_), tb(tb_) {
        const int rowsA = ta ? k : m, colsA = ta ? m : k;
        const int rowsB = tb ? n : k, colsB = tb ? k : n;
        auto up = [&](long long x) { return align4 ? (x + 3) / 4 * 4 : x; };
        lda = up(colsA + r.intn(3)), ldb = up(colsB + r.intn(3)), ldc = n + r.intn(3);
        sa = r.intn(3) == 0 ? 0 : up(rowsA * lda + r.intn(4));
        sb = r.intn(3) == 0 ? 0 : up(rowsB * ldb + r.intn(4));
        sc = (long long)m * ldc + r.intn(4);
        A.resize(sa * (batch - 1) + rowsA * lda + 1);
        B.resize(sb * (batch - 1) + rowsB * ldb + 1);
        C.resize(sc * batch + 1);
        for (auto& x : A) x = (float)r.uniform(-1, 1);
        for (auto& x : B) x = (float)r.uniform(-1, 1);
    }
    // a is op(A)[bi][i][p], b is op(B)[bi][p][j], c the offset of C[bi][i][j].
    float a(int bi, int i, int p) const { return ta ? A[bi * sa + p * lda + i] : A[bi * sa + i * lda + p]; }
    float b(int bi, int p, int j) const { return tb ? B[bi * sb + j * ldb + p] : B[bi * sb + p * ldb + j]; }
    long long c(int bi, int i, int j) const { return bi * sc + i * ldc + j; }
};
