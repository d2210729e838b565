// reduce_emu.cpp: reduce_rows_f32 and argmax_rows_f32 of reduce.cu run on
// the CPU emulator against a plain double reference (sum, mean, max, min;
// first index of the maximum, NaN smallest unless first), rows of 0, 1,
// odd and multi-warp lengths, at several block and grid sizes.
#include "cuda_emu.h"
#include "../reduce.cu"

int main() {
    emu::Rng r(11);
    int bad = 0, cases = 0;
    const long long lens[] = {0, 1, 31, 33, 100, 1000};
    const int blocks[] = {32, 64, 128, 1024};
    for (long long len : lens)
        for (long long rows : {0LL, 1LL, 5LL})
            for (int bs : blocks) {
                if (bs == 1024 && rows > 1) continue;  // keep the emulation short
                std::vector<float> src(rows * len);
                for (auto& x : src) x = (float)r.uniform(-1, 1);
                if (len > 3 && rows > 1) src[len + 2] = NAN, src[2 * len] = NAN;  // row 1: NaN inside; row 2: NaN first
                if (len > 4 && rows > 3) src[3 * len + 1] = src[3 * len + 4] = 2;  // row 3: tie
                unsigned grid = 1 + r.intn(3);
                char what[80];
                for (int op = 0; op < 4; op++) {
                    std::vector<float> dst(rows + 1, 42.f);
                    emu::launch(dim3(grid), dim3(bs), reduce_rows_f32, op, dst.data(), (const float*)src.data(), rows, len);
                    std::snprintf(what, sizeof what, "reduce op %d rows %lld len %lld block %d", op, rows, len, bs);
                    emu::Check c{what};
                    for (long long i = 0; i < rows; i++) {
                        double acc = op == 2 ? -INFINITY : op == 3 ? INFINITY : 0;
                        for (long long j = 0; j < len; j++) {
                            double v = src[i * len + j];
                            if (op < 2) acc += v;
                            else if (std::isnan(v) || std::isnan(acc)) acc = NAN;
                            else acc = op == 2 ? std::max(acc, v) : std::min(acc, v);
                        }
                        if (op == 1) acc /= (double)len;
                        c(dst[i], (float)acc, 0, 0, i);
                    }
                    c(dst[rows], 42.f, 0, 0, rows);  // untouched past the end
                    bad += c.bad, cases++;
                }
                if (len == 0) continue;
                std::vector<int> idx(rows + 1, -7);
                emu::launch(dim3(grid), dim3(bs), argmax_rows_f32, idx.data(), (const float*)src.data(), rows, len);
                std::snprintf(what, sizeof what, "argmax rows %lld len %lld block %d", rows, len, bs);
                emu::Check c{what};
                for (long long i = 0; i < rows; i++) {
                    double best = -INFINITY;
                    int bi = -1;
                    for (long long j = 0; j < len; j++) {
                        double v = src[i * len + j];
                        if (bi < 0 || v > best) best = v, bi = (int)j;
                    }
                    c(idx[i], bi, 0, 0, i);
                }
                c(idx[rows], -7, 0, 0, rows);
                bad += c.bad, cases++;
            }
    std::printf("%s: reduce, %d checks, %d mismatches\n", bad ? "FAIL" : "PASS", cases, bad);
    return bad != 0;
}
