// batchnorm.cu: the passes of tensor.BatchNormBackend. An activation is
// N x C planes of S floats, sample-major (cm = 0: plane i*C+ch) or
// channel-major (cm = 1: plane ch*N+i); a ghost BatchNorm cuts the batch
// into `splits` groups (sample i in group i % splits), the statistics of
// group grp, channel ch at grp*C+ch. The reductions run one block per
// (channel, group) (grid C x splits, blockDim.x a multiple of 32, at most
// 1024; N*C*S below 2^31: 32-bit indices), accumulated in double and combined with __shfl_down_sync, then
// through shared memory between warps; the elementwise passes are
// grid-stride loops in float32. The results match the CPU backend's
// (kernels/batchnorm) to float32 rounding, not bit for bit.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

// bn_plane returns the memory plane of sample i, channel ch.
__device__ __forceinline__ int bn_plane(int i, int ch, int N, int C, int cm) {
    return cm ? ch * N + i : i * C + ch;
}

// bn_group_elem returns the memory index of element e (of ng*S) of group grp, channel ch.
__device__ __forceinline__ int bn_group_elem(int e, int grp, int ch, int N, int C, int S, int splits, int cm) {
    const int j = e / S, r = e - j * S;
    return bn_plane(grp + j * splits, ch, N, C, cm) * S + r;
}

// The reductions shuffle through bn_block_sum, outside their bodies: the
// markers bn_stats_f32_warps and bn_back_sums_f32_warps give them launchers
// that insist on whole warps (see kernels/cuda/gen).
// bn_block_sum returns the sum of v over the block to every thread (part: 32 doubles of shared memory).
__device__ __forceinline__ double bn_block_sum(double v, double* part) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int s = 16; s > 0; s >>= 1) v += __shfl_down_sync(0xffffffffu, v, s);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? part[lane] : 0.0;
        for (int s = 16; s > 0; s >>= 1) v += __shfl_down_sync(0xffffffffu, v, s);
        if (lane == 0) part[0] = v;
    }
    __syncthreads();
    v = part[0];
    __syncthreads();  // part is reused by the next sum
    return v;
}

// mean[k], invstd[k] = mean, 1/sqrt(var+eps) of group grp = blockIdx.y, channel ch = blockIdx.x (k = grp*C+ch); stat[2k], stat[2k+1] = mean, biased var in double
extern "C" __global__ void bn_stats_f32(float* mean, float* invstd, double* stat, const float* x, int N, int C, int S,
                                        int splits, int cm, double eps) {
    __shared__ double part[32];
    const int ch = blockIdx.x, grp = blockIdx.y;
    const int cnt = (N / splits) * S;
    double sum = 0.0;
    for (int e = threadIdx.x; e < cnt; e += blockDim.x) sum += (double)x[bn_group_elem(e, grp, ch, N, C, S, splits, cm)];
    const double mu = bn_block_sum(sum, part) / (double)cnt;
    double sq = 0.0;
    for (int e = threadIdx.x; e < cnt; e += blockDim.x) {
        const double d = (double)x[bn_group_elem(e, grp, ch, N, C, S, splits, cm)] - mu;
        sq += d * d;
    }
    const double v = bn_block_sum(sq, part) / (double)cnt;
    if (threadIdx.x == 0) {
        const int k = grp * C + ch;
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

// sums[2k] = sum of g, sums[2k+1] = invstd[k] * sum of g*(x - mean[k]) over group grp = blockIdx.y, channel ch = blockIdx.x, g = dy (where mask > 0 with hasMask)
extern "C" __global__ void bn_back_sums_f32(double* sums, const float* x, const float* dy, const float* mask, const float* mean,
                                            const float* invstd, int N, int C, int S, int splits, int cm, int hasMask) {
    __shared__ double part[32];
    const int ch = blockIdx.x, grp = blockIdx.y, k = grp * C + ch;
    const int cnt = (N / splits) * S;
    const double mu = (double)mean[k];
    double a = 0.0, b = 0.0;
    for (int e = threadIdx.x; e < cnt; e += blockDim.x) {
        const int at = bn_group_elem(e, grp, ch, N, C, S, splits, cm);
        if (hasMask && !(mask[at] > 0.f)) continue;
        const double g = (double)dy[at];
        a += g;
        b += g * ((double)x[at] - mu);
    }
    a = bn_block_sum(a, part);
    b = bn_block_sum(b, part);
    if (threadIdx.x == 0) {
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
