// im2col.cu: the im2col matrix of a C x H x W image for a KH x KW
// convolution (stride sh x sw, zero padding ph x pw) and its adjoint.
// Row (c*KH+i)*KW+j, column oy*OW+ox of the matrix holds
// x[c, oy*sh+i-ph, ox*sw+j-pw], or 0 outside the image.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

// col[(c*KH+i)*KW+j][oy*OW+ox] = x[c][oy*sh+i-ph][ox*sw+j-pw] (0 outside)
extern "C" __global__ void im2col_f32(float* col, const float* x, int C, int H, int W, int KH, int KW,
                                      int sh, int sw, int ph, int pw, int OH, int OW) {
    const long long n = (long long)C * KH * KW * OH * OW;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
        int ox = (int)(e % OW);
        long long t = e / OW;
        int oy = (int)(t % OH);
        t /= OH;
        int j = (int)(t % KW);
        t /= KW;
        int i = (int)(t % KH);
        int c = (int)(t / KH);
        int y = oy * sh + i - ph, xx = ox * sw + j - pw;
        float v = 0.f;
        if (y >= 0 && y < H && xx >= 0 && xx < W) v = x[((long long)c * H + y) * W + xx];
        col[e] = v;
    }
}

// x[c][y][x] += sum over (i, j, oy, ox) with oy*sh+i-ph = y, ox*sw+j-pw = x of col[(c*KH+i)*KW+j][oy*OW+ox]
extern "C" __global__ void col2im_f32(float* x, const float* col, int C, int H, int W, int KH, int KW,
                                      int sh, int sw, int ph, int pw, int OH, int OW) {
    // One thread per image element gathers its terms (no atomics: the result
    // does not depend on scheduling), summed in double from the old value.
    const long long n = (long long)C * H * W;
    const long long plane = (long long)OH * OW;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
        int xx = (int)(e % W);
        long long t = e / W;
        int y = (int)(t % H);
        int c = (int)(t / H);
        double s = (double)x[e];
        for (int i = 0; i < KH; i++) {
            int ty = y + ph - i;  // = oy*sh
            if (ty < 0 || ty % sh != 0) continue;
            int oy = ty / sh;
            if (oy >= OH) continue;
            for (int j = 0; j < KW; j++) {
                int tx = xx + pw - j;
                if (tx < 0 || tx % sw != 0) continue;
                int ox = tx / sw;
                if (ox >= OW) continue;
                s += (double)col[((long long)(c * KH + i) * KW + j) * plane + (long long)oy * OW + ox];
            }
        }
        x[e] = (float)s;
    }
}
