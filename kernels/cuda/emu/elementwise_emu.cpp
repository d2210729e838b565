// elementwise_emu.cpp: fill_f32, unary_f32 and binary_f32 of elementwise.cu
// run on the CPU emulator against a plain reference, on random strided,
// transposed and broadcast views, odd and zero sizes, at several block and
// grid sizes. Prints PASS or the first mismatches.
#include "cuda_emu.h"
#include "../elementwise.cu"

// Reference definitions (tensor/reference, transcribed).
static double refUnary(int op, double x, double p) {
    switch (op) {
    case 0: return x;
    case 1: return -x;
    case 2: return std::exp(x);
    case 3: return std::log(x);
    case 4: return std::sqrt(x);
    case 5: return std::fabs(x);
    case 6: return x > 0 ? x : 0;
    case 7: return std::tanh(x);
    case 8: return 1 / (1 + std::exp(-x));
    case 9: return x * x;
    case 10: return x > 0 ? 1 : x < 0 ? -1 : x;
    case 11: return x + p;
    case 12: return x * p;
    case 13: return std::pow(x, p);
    }
    return NAN;
}

static double refBinary(int op, double x, double y, double p) {
    switch (op) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x / y;
    case 4: return (std::isnan(x) || std::isnan(y)) ? NAN : (x > y ? x : y < x ? x : (x == y ? (std::signbit(x) ? y : x) : y));
    case 5: return (std::isnan(x) || std::isnan(y)) ? NAN : (x < y ? x : y > x ? x : (x == y ? (std::signbit(x) ? x : y) : y));
    case 6: return x + p * y;
    }
    return NAN;
}

struct View {
    long long off;
    long long stride[MAXDIM];
};

int main() {
    emu::Rng r(7);
    int bad = 0, cases = 0;
    const int blocks[] = {32, 64, 96, 256};
    for (int it = 0; it < 60; it++) {
        int rank = r.intn(5);
        long long shape[MAXDIM] = {0};
        long long n = 1;
        for (int d = 0; d < rank; d++) {
            shape[d] = it % 7 == 5 && d == 0 ? 0 : 1 + r.intn(6);
            n *= shape[d];
        }
        // Three views: a permuted contiguous layout with random extra
        // padding, possibly broadcasting (stride 0) in the sources.
        View v[3];
        long long size[3];
        for (int k = 0; k < 3; k++) {
            long long s = 1 + r.intn(2);
            int perm[MAXDIM];
            for (int d = 0; d < rank; d++) perm[d] = d;
            for (int d = rank - 1; d > 0; d--) std::swap(perm[d], perm[r.intn(d + 1)]);
            for (int q = rank - 1; q >= 0; q--) {
                int d = perm[q];
                v[k].stride[d] = (k > 0 && r.intn(4) == 0) ? 0 : s;
                s *= shape[d] + r.intn(2);
            }
            v[k].off = r.intn(5);
            size[k] = v[k].off + s + 1;
        }
        Layout L;
        L.n = n;
        L.rank = rank;
        for (int d = 0; d < MAXDIM; d++) L.shape[d] = d < rank ? shape[d] : 1;
        for (int k = 0; k < 3; k++) {
            L.off[k] = v[k].off;
            for (int d = 0; d < MAXDIM; d++) L.stride[k][d] = d < rank ? v[k].stride[d] : 0;
        }
        std::vector<float> a(size[1]), b(size[2]);
        for (auto& x : a) x = (float)r.uniform(0.05, 3);
        for (auto& x : b) x = (float)r.uniform(-3, 3);
        if (a.size() > 2) a[1] = NAN;
        auto offsetOf = [&](int k, long long i) {
            long long o = v[k].off;
            for (int d = rank - 1; d >= 0; d--) o += (i % shape[d]) * v[k].stride[d], i /= shape[d];
            return o;
        };
        int bs = blocks[it % 4];
        unsigned grid = 1 + r.intn(3);
        char what[64];
        for (int op = 0; op <= 14; op++) {  // 14: fill
            std::vector<float> dst(size[0], 42.f), want(size[0], 42.f);
            float p = op == 13 ? 1.7f : -2.5f;
            if (op == 14) {
                emu::launch(dim3(grid), dim3(bs), fill_f32, dst.data(), 3.5f, L);
                for (long long i = 0; i < n; i++) want[offsetOf(0, i)] = 3.5f;
            } else {
                emu::launch(dim3(grid), dim3(bs), unary_f32, op, p, dst.data(), (const float*)a.data(), L);
                for (long long i = 0; i < n; i++) want[offsetOf(0, i)] = (float)refUnary(op, a[offsetOf(1, i)], p);
            }
            std::snprintf(what, sizeof what, "case %d unary op %d block %d", it, op, bs);
            emu::Check c{what};
            for (size_t i = 0; i < dst.size(); i++) c(dst[i], want[i], 0, 4e-7, (long long)i);
            bad += c.bad, cases++;
        }
        for (int op = 0; op <= 6; op++) {
            std::vector<float> dst(size[0], 42.f), want(size[0], 42.f);
            emu::launch(dim3(grid), dim3(bs), binary_f32, op, 0.75f, dst.data(), (const float*)a.data(), (const float*)b.data(), L);
            for (long long i = 0; i < n; i++) want[offsetOf(0, i)] = (float)refBinary(op, a[offsetOf(1, i)], b[offsetOf(2, i)], 0.75);
            std::snprintf(what, sizeof what, "case %d binary op %d block %d", it, op, bs);
            emu::Check c{what};
            for (size_t i = 0; i < dst.size(); i++) c(dst[i], want[i], 0, 0, (long long)i);
            bad += c.bad, cases++;
        }
    }
    std::printf("%s: elementwise, %d checks, %d mismatches\n", bad ? "FAIL" : "PASS", cases, bad);
    return bad != 0;
}
