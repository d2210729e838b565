// pool.cu: the pooling passes of tensor.PoolBackend over planes of H x W
// floats, one after the other (NCHW or CNHW: the order of the planes does
// not matter), each output plane OH x OW. Max pooling counts padding as
// -inf (PyTorch's floor mode) and records the position inside its plane of
// the element each output took, as an int32 (tensor.PoolBackend's arg, the
// bits of a float32 operand). The backward passes gather, one thread per
// input element, the outputs that reach it in increasing output order (no
// atomics: deterministic, and the float32 sums of kernels/pool in its
// order). Every kernel is a grid-stride loop over its items.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

// y[p][oi][oj] = max of x[p][oi*s-p+a][oj*s-p+b] over the k x k window (first maximum; NaN propagates), arg = its position
extern "C" __global__ void maxpool2d_f32(float* y, int* arg, const float* x, long long planes, int H, int W, int OH, int OW,
                                         int k, int s, int pad) {
    const long long n = planes * OH * OW;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
        const int oj = (int)(e % OW);
        const long long t = e / OW;
        const int oi = (int)(t % OH);
        const float* img = x + (t / OH) * H * W;
        float best = (float)-__longlong_as_double(0x7ff0000000000000LL);  // -Inf
        int bi = -1;
        for (int a = 0; a < k; a++) {
            const int ih = oi * s - pad + a;
            if (ih < 0 || ih >= H) continue;
            for (int b = 0; b < k; b++) {
                const int iw = oj * s - pad + b;
                if (iw < 0 || iw >= W) continue;
                const float v = img[ih * W + iw];
                if (v > best || bi < 0 || v != v) {
                    best = v;
                    bi = ih * W + iw;
                }
            }
        }
        y[e] = best;
        arg[e] = bi;
    }
}

// dx[p][i] = (acc ? dx[p][i] : 0) + sum over outputs o of plane p with arg[o] = i of dy[o]
extern "C" __global__ void maxpool2d_back_f32(float* dx, const float* dy, const int* arg, long long planes, int H, int W,
                                              int OH, int OW, int k, int s, int pad, int acc) {
    const long long n = planes * H * W;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
        const int iw = (int)(e % W);
        const long long t = e / W;
        const int ih = (int)(t % H);
        const long long pl = t / H;
        const int at = ih * W + iw;
        // Outputs whose window covers (ih, iw): oi*s-pad <= ih <= oi*s-pad+k-1.
        int oi0 = (ih + pad - k + s) / s, oi1 = (ih + pad) / s;
        int oj0 = (iw + pad - k + s) / s, oj1 = (iw + pad) / s;
        if (oi0 < 0) oi0 = 0;
        if (oj0 < 0) oj0 = 0;
        if (oi1 > OH - 1) oi1 = OH - 1;
        if (oj1 > OW - 1) oj1 = OW - 1;
        float v = acc ? dx[e] : 0.f;
        const long long base = pl * OH * OW;
        for (int oi = oi0; oi <= oi1; oi++)
            for (int oj = oj0; oj <= oj1; oj++) {
                const long long o = base + (long long)oi * OW + oj;
                if (arg[o] == at) v += dy[o];
            }
        dx[e] = v;
    }
}

// pool_window sets [lo, hi) to the input rows (or columns) of adaptive output i of out over in
__device__ __forceinline__ void pool_window(int i, int out, int in, int& lo, int& hi) {
    lo = (int)((long long)i * in / out);
    hi = (int)(((long long)(i + 1) * in + out - 1) / out);
}

// y[p][oi][oj] = mean of x[p] over rows [floor(oi*H/OH), ceil((oi+1)*H/OH)) and likewise columns
extern "C" __global__ void adaptive_avgpool2d_f32(float* y, const float* x, long long planes, int H, int W, int OH, int OW) {
    const long long n = planes * OH * OW;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
        const int oj = (int)(e % OW);
        const long long t = e / OW;
        const int oi = (int)(t % OH);
        const float* img = x + (t / OH) * H * W;
        int h0, h1, w0, w1;
        pool_window(oi, OH, H, h0, h1);
        pool_window(oj, OW, W, w0, w1);
        float sum = 0.f;
        for (int ih = h0; ih < h1; ih++)
            for (int iw = w0; iw < w1; iw++) sum += img[ih * W + iw];
        y[e] = sum / (float)((h1 - h0) * (w1 - w0));
    }
}

// dx[p][ih][iw] = (acc ? dx : 0) + sum over the windows (oi, oj) holding it of dy[p][oi][oj] / window size
extern "C" __global__ void adaptive_avgpool2d_back_f32(float* dx, const float* dy, long long planes, int H, int W, int OH,
                                                       int OW, int acc) {
    const long long n = planes * H * W;
    const bool narrow = n <= 0x7fffffffLL;  // 32-bit divisions (a 64-bit one costs several times more)
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
        int iw, ih;
        long long plane;
        if (narrow) {
            const unsigned u = (unsigned)e, t = u / (unsigned)W;
            iw = (int)(u - t * (unsigned)W);
            plane = t / (unsigned)H;
            ih = (int)(t - (unsigned)plane * (unsigned)H);
        } else {
            iw = (int)(e % W);
            const long long t = e / W;
            ih = (int)(t % H);
            plane = t / H;
        }
        const float* g = dy + plane * OH * OW;
        float v = acc ? dx[e] : 0.f;
        // Windows only move forward: start at the first that can hold ih.
        for (int oi = (int)((long long)ih * OH / H); oi < OH; oi++) {
            int h0, h1;
            pool_window(oi, OH, H, h0, h1);
            if (h0 > ih) break;
            if (ih >= h1) continue;
            for (int oj = (int)((long long)iw * OW / W); oj < OW; oj++) {
                int w0, w1;
                pool_window(oj, OW, W, w0, w1);
                if (w0 > iw) break;
                if (iw >= w1) continue;
                v += g[oi * OW + oj] / (float)((h1 - h0) * (w1 - w0));
            }
        }
        dx[e] = v;
    }
}
