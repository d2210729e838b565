// batchnorm.cu: the passes of tensor.BatchNormBackend. An activation is
// N x C planes of S floats, sample-major (cm = 0: plane i*C+ch) or
// channel-major (cm = 1: plane ch*N+i); a ghost BatchNorm cuts the batch
// into `splits` groups (sample i in group i % splits), the statistics of
// group grp, channel ch at grp*C+ch (N*C*S below 2^31: 32-bit indices).
// The reductions (statistics, the backward pass's sums) run one block per
// (channel, group, part) (grid C x splits x P: each group's elements cut
// into P equal ranges so that small C still fills the GPU; blockDim.x a
// multiple of 32, at most 1024), accumulated in double and combined with
// __shfl_down_sync, then through shared memory between warps; a second
// kernel sums each group's P partial sums in order (deterministic for a
// given P). The variance is one pass over x shifted by the group's first
// element (in double: no cancellation when |mean| >> std). The elementwise
// passes are grid-stride loops in float32. The results match the CPU backend's
// (kernels/batchnorm) to float32 rounding, not bit for bit.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#include "common.cuh"

// bn_plane returns the memory plane of sample i, channel ch.
__device__ __forceinline__ int bn_plane(int i, int ch, int N, int C, int cm) {
    return cm ? ch * N + i : i * C + ch;
}

// bn_group_elem returns the memory index of element e (of ng*S) of group grp, channel ch.
__device__ __forceinline__ int bn_group_elem(int e, int grp, int ch, int N, int C, int S, int splits, int cm) {
    const int j = e / S, r = e - j * S;
    return bn_plane(grp + j * splits, ch, N, C, cm) * S + r;
}

// The reductions shuffle through block_sum_f64 (common.cuh), outside their bodies: the
// markers bn_stats_f32_warps and bn_back_sums_f32_warps give them launchers
// that insist on whole warps (see kernels/cuda/gen).
// bn_part_range sets [lo, hi) to part q of P of the cnt elements of a group.
__device__ __forceinline__ void bn_part_range(int q, int P, int cnt, int& lo, int& hi) {
    const int chunk = (cnt + P - 1) / P;
    lo = q * chunk < cnt ? q * chunk : cnt;
    hi = lo + chunk < cnt ? lo + chunk : cnt;
}

// part[2(k*P+q)], part[2(k*P+q)+1] = sum of d, sum of d*d over part q = blockIdx.z of group grp = blockIdx.y, channel ch = blockIdx.x, d = x - (the group's first element)
extern "C" __global__ void bn_stats_f32(double* part, const float* x, int N, int C, int S, int splits, int cm) {
    __shared__ double red[32];
    const int ch = blockIdx.x, grp = blockIdx.y, q = blockIdx.z, P = gridDim.z;
    const int cnt = (N / splits) * S;
    int lo, hi;
    bn_part_range(q, P, cnt, lo, hi);
    // The shift keeps the one-pass variance free of cancellation when |mean| >> std.
    const double shift = cnt > 0 ? (double)x[bn_group_elem(0, grp, ch, N, C, S, splits, cm)] : 0.0;
    double s1 = 0.0, s2 = 0.0;
    for (int e = lo + threadIdx.x; e < hi; e += blockDim.x) {
        const double d = (double)x[bn_group_elem(e, grp, ch, N, C, S, splits, cm)] - shift;
        s1 += d;
        s2 += d * d;
    }
    s1 = block_sum_f64(s1, red);
    s2 = block_sum_f64(s2, red);
    if (threadIdx.x == 0) {
        const long long at = 2 * ((long long)(grp * C + ch) * P + q);
        part[at] = s1;
        part[at + 1] = s2;
    }
}

// mean[k], invstd[k] = mean, 1/sqrt(var+eps) of the P parts of group k (biased var, in double, parts summed in order); stat[2k], stat[2k+1] = mean, var
extern "C" __global__ void bn_stats_finish_f32(float* mean, float* invstd, double* stat, const double* part, const float* x,
                                               int N, int C, int S, int splits, int cm, int P, double eps) {
    const int cnt = (N / splits) * S;
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < splits * C; k += gridDim.x * blockDim.x) {
        const int grp = k / C, ch = k - grp * C;
        double s1 = 0.0, s2 = 0.0;
        for (int q = 0; q < P; q++) {
            s1 += part[2 * ((long long)k * P + q)];
            s2 += part[2 * ((long long)k * P + q) + 1];
        }
        const double shift = cnt > 0 ? (double)x[bn_group_elem(0, grp, ch, N, C, S, splits, cm)] : 0.0;
        const double d = s1 / (double)cnt;
        double v = s2 / (double)cnt - d * d;
        if (v < 0.0) v = 0.0;
        const double mu = shift + d;
        mean[k] = (float)mu;
        invstd[k] = (float)(1.0 / sqrt(v + eps));
        stat[2 * k] = mu;
        stat[2 * k + 1] = v;
    }
}

// rm[ch] = (1-m) rm[ch] + m mean_grp(stat mean); rv[ch] = (1-m) rv[ch] + m mean_grp(var * cnt/(cnt-1)), in double
extern "C" __global__ void bn_running_f32(float* rm, float* rv, const double* stat, int C, int splits, long long cnt,
                                          double momentum) {
    for (int ch = blockIdx.x * blockDim.x + threadIdx.x; ch < C; ch += gridDim.x * blockDim.x) {
        double bm = 0.0, bv = 0.0;
        for (int grp = 0; grp < splits; grp++) {
            const int k = grp * C + ch;
            bm += stat[2 * k] / (double)splits;
            bv += stat[2 * k + 1] * (double)cnt / (double)(cnt - 1) / (double)splits;
        }
        rm[ch] = (float)((1.0 - momentum) * (double)rm[ch] + momentum * bm);
        rv[ch] = (float)((1.0 - momentum) * (double)rv[ch] + momentum * bv);
    }
}

// mean[ch] = rm[ch]; invstd[ch] = 1/sqrt(rv[ch] + eps) (evaluation: the running statistics)
extern "C" __global__ void bn_eval_stats_f32(float* mean, float* invstd, const float* rm, const float* rv, int C, double eps) {
    for (int ch = blockIdx.x * blockDim.x + threadIdx.x; ch < C; ch += gridDim.x * blockDim.x) {
        mean[ch] = rm[ch];
        invstd[ch] = (float)(1.0 / sqrt((double)rv[ch] + eps));
    }
}

// y = (x - mean[k]) * (invstd[k]*gamma[ch]) + beta[ch] (+ res) (then max(., 0) with relu), k = (i % splits)*C + ch
extern "C" __global__ void bn_normalize_f32(float* y, const float* x, const float* res, const float* mean, const float* invstd,
                                            const float* gamma, const float* beta, int N, int C, int S, int splits, int cm,
                                            int hasRes, int relu) {
    const int n = N * C * S;
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x) {
        const int p = e / S;
        const int i = cm ? p % N : p / C, ch = cm ? p / N : p % C;
        const int k = (i % splits) * C + ch;
        const float a = invstd[k] * gamma[ch];
        float v = (x[e] - mean[k]) * a + beta[ch];
        if (hasRes) v += res[e];
        if (relu) v = v > 0.f ? v : 0.f;
        y[e] = v;
    }
}

// part[2(k*P+q)], part[2(k*P+q)+1] = sum of g, sum of g*(x - mean[k]) over part q = blockIdx.z of group grp = blockIdx.y, channel ch = blockIdx.x, g = dy (where mask > 0 with hasMask)
extern "C" __global__ void bn_back_sums_f32(double* part, const float* x, const float* dy, const float* mask, const float* mean,
                                            int N, int C, int S, int splits, int cm, int hasMask) {
    __shared__ double red[32];
    const int ch = blockIdx.x, grp = blockIdx.y, q = blockIdx.z, P = gridDim.z, k = grp * C + ch;
    const int cnt = (N / splits) * S;
    int lo, hi;
    bn_part_range(q, P, cnt, lo, hi);
    const double mu = (double)mean[k];
    double a = 0.0, b = 0.0;
    for (int e = lo + threadIdx.x; e < hi; e += blockDim.x) {
        const int at = bn_group_elem(e, grp, ch, N, C, S, splits, cm);
        if (hasMask && !(mask[at] > 0.f)) continue;
        const double g = (double)dy[at];
        a += g;
        b += g * ((double)x[at] - mu);
    }
    a = block_sum_f64(a, red);
    b = block_sum_f64(b, red);
    if (threadIdx.x == 0) {
        const long long at = 2 * ((long long)k * P + q);
        part[at] = a;
        part[at + 1] = b;
    }
}

// sums[2k] = sum over the P parts of their sum of g; sums[2k+1] = invstd[k] * sum of their sum of g*(x - mean) (parts in order, double)
extern "C" __global__ void bn_back_sums_finish_f32(double* sums, const double* part, const float* invstd, int K, int P) {
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < K; k += gridDim.x * blockDim.x) {
        double a = 0.0, b = 0.0;
        for (int q = 0; q < P; q++) {
            a += part[2 * ((long long)k * P + q)];
            b += part[2 * ((long long)k * P + q) + 1];
        }
        sums[2 * k] = a;
        sums[2 * k + 1] = b * (double)invstd[k];
    }
}

// dgamma[ch] (+)= sum over groups of sums[2k+1]; dbeta[ch] (+)= sum over groups of sums[2k] (k = grp*C+ch)
extern "C" __global__ void bn_back_params_f32(float* dgamma, float* dbeta, const double* sums, int C, int splits, int doGamma,
                                              int accGamma, int doBeta, int accBeta) {
    for (int ch = blockIdx.x * blockDim.x + threadIdx.x; ch < C; ch += gridDim.x * blockDim.x) {
        double sg = 0.0, sb = 0.0;
        for (int grp = 0; grp < splits; grp++) {
            sb += sums[2 * (grp * C + ch)];
            sg += sums[2 * (grp * C + ch) + 1];
        }
        if (doGamma) dgamma[ch] = (accGamma ? dgamma[ch] : 0.f) + (float)sg;
        if (doBeta) dbeta[ch] = (accBeta ? dbeta[ch] : 0.f) + (float)sb;
    }
}

// g = dy (0 where mask <= 0 with hasMask); dres (+)= g; dx (+)= gamma*invstd*(g - mean(g) - xhat*mean(g*xhat)) when training, else gamma*invstd*g
extern "C" __global__ void bn_back_dx_f32(float* dx, float* dres, const float* x, const float* dy, const float* mask,
                                          const float* mean, const float* invstd, const float* gamma, const double* sums,
                                          int N, int C, int S, int splits, int cm, int hasMask, int training, int doDX,
                                          int accDX, int doDRes, int accDRes) {
    const int n = N * C * S;
    const float cnt = (float)((N / splits) * S);
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x) {
        float g = dy[e];
        if (hasMask && !(mask[e] > 0.f)) g = 0.f;
        if (doDRes) dres[e] = accDRes ? dres[e] + g : g;
        if (!doDX) continue;
        const int p = e / S;
        const int i = cm ? p % N : p / C, ch = cm ? p / N : p % C;
        const int k = (i % splits) * C + ch;
        const float is = invstd[k], scale = gamma[ch] * is;
        float v;
        if (training) {
            const float mdy = (float)sums[2 * k] / cnt, mdyx = (float)sums[2 * k + 1] / cnt;
            v = scale * (g - mdy - (x[e] - mean[k]) * is * mdyx);
        } else {
            v = scale * g;
        }
        dx[e] = accDX ? dx[e] + v : v;
    }
}
