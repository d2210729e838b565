// rows.cu: tensor.RowsBackend, the row operations of package autograd
// (softmax, log-softmax, L2 normalisation, softmax cross-entropy), forward
// and backward, along one axis of contiguous operands of shape
// outer x n x inner: lane l = o*inner + j holds the n elements at
// o*n*inner + j + i*inner. One block per lane (grid-stride over lanes;
// blockDim.x a multiple of 32, at most 1024), the lane's maximum and sums
// reduced with __shfl_down_sync, then through shared memory between warps,
// the sums in double. The arithmetic is kernels/rows': the maximum in
// float32 (NaN never greater), each exponential expf(x - max) in float32,
// its sum in double, the softmax scaled by the float32 inverse of that sum,
// log-softmax x - (max + (float)log(sum)); L2 normalisation divides in
// double by max(sqrt(sum of squares), eps). Products whose rounding the CPU
// keeps are written with rn_fmul/rn_dmul (no FMA contraction). Results
// agree with the CPU backend's to a few float32 ulps (expf and the order
// of the double sums differ), not bit for bit.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#include "common.cuh"

// The kernels reduce through block_sum_f64 (common.cuh) and rows_block_max, outside
// their bodies: the markers softmax_f32_warps, log_softmax_f32_warps,
// softmax_back_f32_warps, log_softmax_back_f32_warps, l2norm_f32_warps,
// l2norm_back_f32_warps, cross_entropy_f32_warps and rows_mean_f64_warps
// give them launchers that insist on whole warps (see kernels/cuda/gen).

// rows_neg_inf returns -Inf
__device__ __forceinline__ float rows_neg_inf() { return (float)-__longlong_as_double(0x7ff0000000000000LL); }

// rows_max returns the larger of a and b, a NaN never being larger (kernels/rows.LaneMax's v > m)
__device__ __forceinline__ float rows_max(float a, float b) { return b > a ? b : a; }

// rows_block_max returns the maximum of v over the block to every thread (-Inf for none; part: 32 doubles of shared memory).
__device__ __forceinline__ float rows_block_max(float v, double* part) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int s = 16; s > 0; s >>= 1) v = rows_max(v, __shfl_down_sync(0xffffffffu, v, s));
    if (lane == 0) part[warp] = (double)v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? (float)part[lane] : rows_neg_inf();
        for (int s = 16; s > 0; s >>= 1) v = rows_max(v, __shfl_down_sync(0xffffffffu, v, s));
        if (lane == 0) part[0] = (double)v;
    }
    __syncthreads();
    v = (float)part[0];
    __syncthreads();
    return v;
}

// rows_base returns the index of lane l's first element; its elements follow inner apart.
__device__ __forceinline__ long long rows_base(long long l, long long n, long long inner) {
    const long long o = l / inner, j = l - o * inner;
    return o * n * inner + j;
}

// rows_lane_max returns the maximum of the lane at x (n elements, inner apart) over the block.
__device__ __forceinline__ float rows_lane_max(const float* x, long long n, long long inner, double* part) {
    float m = rows_neg_inf();
    for (long long i = threadIdx.x; i < n; i += blockDim.x) m = rows_max(m, x[i * inner]);
    return rows_block_max(m, part);
}

// y = exp(x - max) / sum along each lane (the sum in double, scaled by its float32 inverse)
extern "C" __global__ void softmax_f32(float* y, const float* x, long long outer, long long n, long long inner) {
    __shared__ double part[32];
    for (long long l = blockIdx.x; l < outer * inner; l += gridDim.x) {
        const long long b = rows_base(l, n, inner);
        const float m = rows_lane_max(x + b, n, inner, part);
        double s = 0.0;
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            const float e = expf(x[b + i * inner] - m);
            y[b + i * inner] = e;
            s += (double)e;
        }
        const float inv = (float)(1.0 / block_sum_f64(s, part));
        for (long long i = threadIdx.x; i < n; i += blockDim.x) y[b + i * inner] = rn_fmul(y[b + i * inner], inv);
    }
}

// y = x - (max + log(sum exp(x - max))) along each lane and, when has_p, p = softmax(x)
extern "C" __global__ void log_softmax_f32(float* y, float* p, const float* x, long long outer, long long n, long long inner,
                                           int has_p) {
    __shared__ double part[32];
    for (long long l = blockIdx.x; l < outer * inner; l += gridDim.x) {
        const long long b = rows_base(l, n, inner);
        const float m = rows_lane_max(x + b, n, inner, part);
        double s = 0.0;
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            const float e = expf(x[b + i * inner] - m);
            if (has_p) p[b + i * inner] = e;
            s += (double)e;
        }
        s = block_sum_f64(s, part);
        const float lse = m + (float)log(s);
        const float inv = (float)(1.0 / s);
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            y[b + i * inner] = x[b + i * inner] - lse;
            if (has_p) p[b + i * inner] = rn_fmul(p[b + i * inner], inv);
        }
    }
}

// dx = y * (g - (float)sum(g*y)) along each lane (the sum in double)
extern "C" __global__ void softmax_back_f32(float* dx, const float* g, const float* y, long long outer, long long n,
                                            long long inner) {
    __shared__ double part[32];
    for (long long l = blockIdx.x; l < outer * inner; l += gridDim.x) {
        const long long b = rows_base(l, n, inner);
        double s = 0.0;
        for (long long i = threadIdx.x; i < n; i += blockDim.x) s += rn_dmul((double)g[b + i * inner], (double)y[b + i * inner]);
        const float sgy = (float)block_sum_f64(s, part);
        for (long long i = threadIdx.x; i < n; i += blockDim.x) dx[b + i * inner] = rn_fmul(y[b + i * inner], g[b + i * inner] - sgy);
    }
}

// dx = g - p * (float)sum(g) along each lane (the sum in double)
extern "C" __global__ void log_softmax_back_f32(float* dx, const float* g, const float* p, long long outer, long long n,
                                                long long inner) {
    __shared__ double part[32];
    for (long long l = blockIdx.x; l < outer * inner; l += gridDim.x) {
        const long long b = rows_base(l, n, inner);
        double s = 0.0;
        for (long long i = threadIdx.x; i < n; i += blockDim.x) s += (double)g[b + i * inner];
        const float sg = (float)block_sum_f64(s, part);
        for (long long i = threadIdx.x; i < n; i += blockDim.x) dx[b + i * inner] = g[b + i * inner] - rn_fmul(p[b + i * inner], sg);
    }
}

// rows_lane_norm returns max(sqrt(sum of squares), eps) of the lane at x, in double, over the block.
__device__ __forceinline__ double rows_lane_norm(const float* x, long long n, long long inner, double eps, double* part) {
    double s = 0.0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        const double v = (double)x[i * inner];
        s += rn_dmul(v, v);
    }
    return fmax(sqrt(block_sum_f64(s, part)), eps);
}

// y = x / max(||x||, eps) along each lane, in double per element rounded once
extern "C" __global__ void l2norm_f32(float* y, const float* x, long long outer, long long n, long long inner, double eps) {
    __shared__ double part[32];
    for (long long l = blockIdx.x; l < outer * inner; l += gridDim.x) {
        const long long b = rows_base(l, n, inner);
        const double d = rows_lane_norm(x + b, n, inner, eps, part);
        for (long long i = threadIdx.x; i < n; i += blockDim.x) y[b + i * inner] = (float)((double)x[b + i * inner] / d);
    }
}

// dx = (g - y * sum(g*y)) / d along each lane, d = max(||x||, eps), the sum 0 where ||x|| <= eps (in double, rounded once)
extern "C" __global__ void l2norm_back_f32(float* dx, const float* g, const float* x, const float* y, long long outer,
                                           long long n, long long inner, double eps) {
    __shared__ double part[32];
    for (long long l = blockIdx.x; l < outer * inner; l += gridDim.x) {
        const long long b = rows_base(l, n, inner);
        const double d = rows_lane_norm(x + b, n, inner, eps, part);
        double s = 0.0;
        for (long long i = threadIdx.x; i < n; i += blockDim.x) s += rn_dmul((double)g[b + i * inner], (double)y[b + i * inner]);
        s = block_sum_f64(s, part);
        if (!(d > eps)) s = 0.0;
        const double inv = 1.0 / d;
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            const double gi = (double)g[b + i * inner], yi = (double)y[b + i * inner];
            dx[b + i * inner] = (float)rn_dmul(gi - rn_dmul(yi, s), inv);
        }
    }
}

// nll[r] = max + log(sum exp(x - max)) - x[r, t[r]] (double) for the rows of the n x c logits x; when has_p, p = softmax(x)
extern "C" __global__ void cross_entropy_f32(double* nll, float* p, const float* x, const int* t, int n, int c, int has_p) {
    __shared__ double part[32];
    for (int r = blockIdx.x; r < n; r += gridDim.x) {
        const long long b = (long long)r * c;
        const float m = rows_lane_max(x + b, c, 1, part);
        double s = 0.0;
        for (int j = threadIdx.x; j < c; j += blockDim.x) {
            const float e = expf(x[b + j] - m);
            if (has_p) p[b + j] = e;
            s += (double)e;
        }
        s = block_sum_f64(s, part);
        if (threadIdx.x == 0) nll[r] = (double)m + log(s) - (double)x[b + t[r]];
        if (has_p) {
            const float inv = (float)(1.0 / s);
            for (int j = threadIdx.x; j < c; j += blockDim.x) p[b + j] = rn_fmul(p[b + j], inv);
        }
    }
}

// out[0] = (float)(sum of v[0..n) / n) (one block; NaN for n = 0)
extern "C" __global__ void rows_mean_f64(float* out, const double* v, int n) {
    __shared__ double part[32];
    double s = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
    s = block_sum_f64(s, part);
    if (threadIdx.x == 0) out[0] = (float)(s / (double)n);
}

// p[r, j] = (p[r, j] - [j = t[r]]) * scale over the n x c probabilities p (float32)
extern "C" __global__ void cross_entropy_back_f32(float* p, const int* t, int n, int c, float scale) {
    const long long total = (long long)n * c;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const long long r = i / c;
        float v = p[i];
        if (i - r * c == t[r]) v = v - 1.0f;
        p[i] = rn_fmul(v, scale);
    }
}
