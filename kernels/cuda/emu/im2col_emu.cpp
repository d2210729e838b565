// im2col_emu.cpp: im2col_f32 and col2im_f32 of im2col.cu run on the CPU
// emulator against the reference loops of tensor/reference, with strides,
// padding, kernels larger than the image and empty outputs.
#include "cuda_emu.h"
#include "../im2col.cu"

int main() {
    emu::Rng r(3);
    int bad = 0, cases = 0;
    struct Geom { int C, H, W, KH, KW, sh, sw, ph, pw; };
    const Geom geoms[] = {{1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 5, 7, 3, 3, 1, 1, 1, 1}, {3, 8, 6, 3, 2, 2, 3, 1, 0},
                          {1, 4, 4, 5, 5, 1, 1, 2, 2}, {2, 3, 3, 2, 2, 2, 2, 0, 0}, {1, 2, 2, 3, 3, 1, 1, 0, 0}};
    for (const Geom& g : geoms)
        for (int bs : {32, 128}) {
            int OH = (g.H + 2 * g.ph - g.KH) / g.sh + 1, OW = (g.W + 2 * g.pw - g.KW) / g.sw + 1;
            if (g.H + 2 * g.ph < g.KH || g.W + 2 * g.pw < g.KW) OH = OW = 0;
            long long ncol = (long long)g.C * g.KH * g.KW * OH * OW, nimg = (long long)g.C * g.H * g.W;
            std::vector<float> x(nimg), col(ncol + 1, 42.f), wantCol(ncol + 1, 42.f);
            for (auto& v : x) v = (float)r.uniform(-1, 1);
            unsigned grid = 1 + r.intn(3);
            if (ncol > 0)
                emu::launch(dim3(grid), dim3(bs), im2col_f32, col.data(), (const float*)x.data(), g.C, g.H, g.W, g.KH, g.KW, g.sh, g.sw, g.ph, g.pw, OH, OW);
            std::vector<double> sum(nimg);
            std::vector<float> img(nimg), wantImg(nimg);
            for (long long i = 0; i < nimg; i++) img[i] = (float)r.uniform(-1, 1), sum[i] = img[i];
            std::vector<float> colIn(ncol);
            for (auto& v : colIn) v = (float)r.uniform(-1, 1);
            for (int c = 0; c < g.C; c++)
                for (int i = 0; i < g.KH; i++)
                    for (int j = 0; j < g.KW; j++)
                        for (int oy = 0; oy < OH; oy++)
                            for (int ox = 0; ox < OW; ox++) {
                                long long row = (c * g.KH + i) * g.KW + j, e = row * OH * OW + oy * OW + ox;
                                int y = oy * g.sh + i - g.ph, xx = ox * g.sw + j - g.pw;
                                bool in = y >= 0 && y < g.H && xx >= 0 && xx < g.W;
                                wantCol[e] = in ? x[(c * g.H + y) * g.W + xx] : 0.f;
                                if (in) sum[(c * g.H + y) * g.W + xx] += colIn[e];
                            }
            for (long long i = 0; i < nimg; i++) wantImg[i] = (float)sum[i];
            if (ncol > 0)
                emu::launch(dim3(grid), dim3(bs), col2im_f32, img.data(), (const float*)colIn.data(), g.C, g.H, g.W, g.KH, g.KW, g.sh, g.sw, g.ph, g.pw, OH, OW);
            char what[64];
            std::snprintf(what, sizeof what, "im2col C%d H%d W%d K%dx%d block %d", g.C, g.H, g.W, g.KH, g.KW, bs);
            emu::Check c1{what};
            for (long long i = 0; i <= ncol; i++) c1(col[i], wantCol[i], 0, 0, i);
            std::snprintf(what, sizeof what, "col2im C%d H%d W%d K%dx%d block %d", g.C, g.H, g.W, g.KH, g.KW, bs);
            emu::Check c2{what};
            for (long long i = 0; i < nimg; i++) c2(img[i], wantImg[i], 1e-7, 1e-7, i);
            bad += c1.bad + c2.bad, cases += 2;
        }
    std::printf("%s: im2col, %d checks, %d mismatches\n", bad ? "FAIL" : "PASS", cases, bad);
    return bad != 0;
}
