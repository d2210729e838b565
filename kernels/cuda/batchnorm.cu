// batchnorm.cu: the passes of tensor.BatchNormBackend. An activation is
// N x C planes of S floats, sample-major (cm = 0: plane i*C+ch) or
// channel-major (cm = 1: plane ch*N+i); a ghost BatchNorm cuts the batch
// into `splits` groups (sample i in group i % splits), the statistics of
// group grp, channel ch at grp*C+ch (N*C*S below 2^31: 32-bit indices).
// The reductions (statistics, the backward pass's sums) run one block per
// (channel, group, part) (grid C x splits x P: each group's elements cut
// into P ranges of equal length, a multiple of 4, so that small C still
// fills the GPU; blockDim.x a multiple of 32, at most 1024), accumulated
// in double and combined with
// __shfl_down_sync, then through shared memory between warps; a second
// kernel sums each group's P partial sums in order (deterministic for a
// given P), a thread per channel, and goes on with what needs every group
// of the channel: the running statistics, the weight and bias gradients
// (one launch each way instead of two). The variance is one pass over x
// shifted by the group's first element (in double: no cancellation when
// |mean| >> std). The elementwise
// passes are grid-stride loops in float32. The results match the CPU backend's
// (kernels/batchnorm) to float32 rounding, not bit for bit.
//
// The four passes over whole activations (bn_stats_f32, bn_normalize_f32,
// bn_back_sums_f32, bn_back_dx_f32) are memory-bound: where planes hold a
// multiple of 4 floats and every array they touch starts on 16 bytes
// (bn_vec: the same for every thread, so no divergence), they move float4s
// (BN_UNROLL of them in flight a thread in the reductions) and find an
// element's channel once per 4; each element's arithmetic is the scalar
// path's (the elementwise results are the same bits either way). With one
// 4-byte load in flight a thread, 2048 threads an SM, an H100 keeps about
// 1 MB in flight against ~0.7 us of DRAM latency: ~1.5 TB/s, what these
// passes measured in the ResNet-50 step (bench/RESULTS.md), against the
// 3.35 TB/s of its HBM3.
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
// bn_part_range sets [lo, hi) to part q of P of the cnt elements of a
// group: ranges of ceil(cnt/P) rounded up to a multiple of 4 (so that a
// float4 never straddles two parts; the last parts may be empty).
__device__ __forceinline__ void bn_part_range(int q, int P, int cnt, int& lo, int& hi) {
    const long long chunk = (((long long)cnt + P - 1) / P + 3) & ~3LL;
    lo = (int)(q * chunk < cnt ? q * chunk : cnt);
    hi = (int)(lo + chunk < cnt ? lo + chunk : cnt);
}

#define BN_UNROLL 4  // float4 loads in flight a thread in the reductions' vector path

// bn_a16 reports whether p starts on 16 bytes.
__device__ __forceinline__ bool bn_a16(const void* p) { return ((unsigned long long)p & 15) == 0; }

// bn_vec reports whether the float4 paths apply: planes of a multiple of
// 4 floats and every pointer given on 16 bytes (pass the unused ones as
// nullptr).
__device__ __forceinline__ bool bn_vec(int S, const void* a, const void* b, const void* c, const void* d, const void* e) {
    return (S & 3) == 0 && bn_a16(a) && bn_a16(b) && bn_a16(c) && bn_a16(d) && bn_a16(e);
}

// bn_ld4 reads the 4 floats at p (16-byte aligned) as one vector load.
__device__ __forceinline__ float4 bn_ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }

// bn_st4 writes v to the 4 floats at p (16-byte aligned).
__device__ __forceinline__ void bn_st4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }

// bn_at returns element j (0..3) of v.
__device__ __forceinline__ float bn_at(const float4& v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }

// bn_set sets element j (0..3) of v to f.
__device__ __forceinline__ void bn_set(float4& v, int j, float f) {
    if (j == 0) v.x = f;
    else if (j == 1) v.y = f;
    else if (j == 2) v.z = f;
    else v.w = f;
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
    if (bn_vec(S, x, nullptr, nullptr, nullptr, nullptr)) {
        // lo and hi are multiples of 4 (so is cnt), and so are the planes.
        const unsigned step = 4u * BN_UNROLL * blockDim.x;
        for (unsigned e = lo + 4u * threadIdx.x; e < (unsigned)hi; e += step) {
            float4 v[BN_UNROLL];
#pragma unroll
            for (int u = 0; u < BN_UNROLL; u++) {
                const unsigned f = e + 4u * u * blockDim.x;
                if (f < (unsigned)hi) v[u] = bn_ld4(x + bn_group_elem((int)f, grp, ch, N, C, S, splits, cm));
            }
#pragma unroll
            for (int u = 0; u < BN_UNROLL; u++) {
                if (e + 4u * u * blockDim.x >= (unsigned)hi) break;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const double d = (double)bn_at(v[u], j) - shift;
                    s1 += d;
                    s2 += d * d;
                }
            }
        }
    } else {
        for (int e = lo + threadIdx.x; e < hi; e += blockDim.x) {
            const double d = (double)x[bn_group_elem(e, grp, ch, N, C, S, splits, cm)] - shift;
            s1 += d;
            s2 += d * d;
        }
    }
    s1 = block_sum_f64(s1, red);
    s2 = block_sum_f64(s2, red);
    if (threadIdx.x == 0) {
        const long long at = 2 * ((long long)(grp * C + ch) * P + q);
        part[at] = s1;
        part[at + 1] = s2;
    }
}

// mean[k], invstd[k] = mean, 1/sqrt(var+eps) of the P parts of group k = grp*C+ch (biased var, in double, parts summed in order); rm[ch] = (1-m) rm[ch] + m mean_grp(mean); rv[ch] = (1-m) rv[ch] + m mean_grp(var * cnt/(cnt-1)), in double; *batches += 1 when count
extern "C" __global__ void bn_stats_finish_f32(float* mean, float* invstd, float* rm, float* rv, const double* part, const float* x,
                                               int N, int C, int S, int splits, int cm, int P, double eps, double momentum,
                                               float* batches, int count) {
    const int cnt = (N / splits) * S;
    if (count && blockIdx.x == 0 && threadIdx.x == 0) *batches += 1.f;  // num_batches_tracked
    for (int ch = blockIdx.x * blockDim.x + threadIdx.x; ch < C; ch += gridDim.x * blockDim.x) {
        double bm = 0.0, bv = 0.0;  // the running statistics' batch terms, groups in order
        for (int grp = 0; grp < splits; grp++) {
            const int k = grp * C + ch;
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
            bm += mu / (double)splits;
            bv += v * (double)cnt / (double)(cnt - 1) / (double)splits;
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

// bn_norm1 is bn_normalize_f32 on one element: (x - m) * a + b (+ r) (then max(., 0) with relu).
__device__ __forceinline__ float bn_norm1(float x, float m, float a, float b, float r, int hasRes, int relu) {
    float v = (x - m) * a + b;
    if (hasRes) v += r;
    if (relu) v = v > 0.f ? v : 0.f;
    return v;
}

// y = (x - mean[k]) * (invstd[k]*gamma[ch]) + beta[ch] (+ res) (then max(., 0) with relu), k = (i % splits)*C + ch
extern "C" __global__ void bn_normalize_f32(float* y, const float* x, const float* res, const float* mean, const float* invstd,
                                            const float* gamma, const float* beta, int N, int C, int S, int splits, int cm,
                                            int hasRes, int relu) {
    const int n = N * C * S;
    if (bn_vec(S, y, x, hasRes ? res : nullptr, nullptr, nullptr)) {
        for (int e = 4 * (blockIdx.x * blockDim.x + threadIdx.x); e < n; e += 4 * gridDim.x * blockDim.x) {
            const int p = e / S;
            const int i = cm ? p % N : p / C, ch = cm ? p / N : p % C;
            const int k = (i % splits) * C + ch;
            const float a = invstd[k] * gamma[ch], m = mean[k], b = beta[ch];
            const float4 xv = bn_ld4(x + e), rv = hasRes ? bn_ld4(res + e) : make_float4(0.f, 0.f, 0.f, 0.f);
            float4 v;
#pragma unroll
            for (int j = 0; j < 4; j++) bn_set(v, j, bn_norm1(bn_at(xv, j), m, a, b, bn_at(rv, j), hasRes, relu));
            bn_st4(y + e, v);
        }
        return;
    }
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x) {
        const int p = e / S;
        const int i = cm ? p % N : p / C, ch = cm ? p / N : p % C;
        const int k = (i % splits) * C + ch;
        y[e] = bn_norm1(x[e], mean[k], invstd[k] * gamma[ch], beta[ch], hasRes ? res[e] : 0.f, hasRes, relu);
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
    if (bn_vec(S, x, dy, hasMask ? mask : nullptr, nullptr, nullptr)) {
        const unsigned step = 4u * BN_UNROLL * blockDim.x;
        for (unsigned e = lo + 4u * threadIdx.x; e < (unsigned)hi; e += step) {
            float4 xv[BN_UNROLL], gv[BN_UNROLL], mv[BN_UNROLL];
#pragma unroll
            for (int u = 0; u < BN_UNROLL; u++) {
                const unsigned f = e + 4u * u * blockDim.x;
                if (f < (unsigned)hi) {
                    const int at = bn_group_elem((int)f, grp, ch, N, C, S, splits, cm);
                    xv[u] = bn_ld4(x + at);
                    gv[u] = bn_ld4(dy + at);
                    mv[u] = hasMask ? bn_ld4(mask + at) : make_float4(1.f, 1.f, 1.f, 1.f);
                }
            }
#pragma unroll
            for (int u = 0; u < BN_UNROLL; u++) {
                if (e + 4u * u * blockDim.x >= (unsigned)hi) break;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    if (hasMask && !(bn_at(mv[u], j) > 0.f)) continue;
                    const double g = (double)bn_at(gv[u], j);
                    a += g;
                    b += g * ((double)bn_at(xv[u], j) - mu);
                }
            }
        }
    } else {
        for (int e = lo + threadIdx.x; e < hi; e += blockDim.x) {
            const int at = bn_group_elem(e, grp, ch, N, C, S, splits, cm);
            if (hasMask && !(mask[at] > 0.f)) continue;
            const double g = (double)dy[at];
            a += g;
            b += g * ((double)x[at] - mu);
        }
    }
    a = block_sum_f64(a, red);
    b = block_sum_f64(b, red);
    if (threadIdx.x == 0) {
        const long long at = 2 * ((long long)k * P + q);
        part[at] = a;
        part[at + 1] = b;
    }
}

// sums[2k] = sum over the P parts of their sum of g; sums[2k+1] = invstd[k] * sum of their sum of g*(x - mean) (parts in order, double; k = grp*C+ch); dgamma[ch] (+)= sum over groups of sums[2k+1]; dbeta[ch] (+)= sum over groups of sums[2k]
extern "C" __global__ void bn_back_sums_finish_f32(double* sums, float* dgamma, float* dbeta, const double* part, const float* invstd,
                                                   int C, int splits, int P, int doGamma, int accGamma, int doBeta, int accBeta) {
    for (int ch = blockIdx.x * blockDim.x + threadIdx.x; ch < C; ch += gridDim.x * blockDim.x) {
        double sg = 0.0, sb = 0.0;
        for (int grp = 0; grp < splits; grp++) {
            const int k = grp * C + ch;
            double a = 0.0, b = 0.0;
            for (int q = 0; q < P; q++) {
                a += part[2 * ((long long)k * P + q)];
                b += part[2 * ((long long)k * P + q) + 1];
            }
            sums[2 * k] = a;
            sums[2 * k + 1] = b * (double)invstd[k];
            sb += sums[2 * k];
            sg += sums[2 * k + 1];
        }
        if (doGamma) dgamma[ch] = (accGamma ? dgamma[ch] : 0.f) + (float)sg;
        if (doBeta) dbeta[ch] = (accBeta ? dbeta[ch] : 0.f) + (float)sb;
    }
}

// bn_dx1 is bn_back_dx_f32's input gradient of one element with gradient
// g (masked), input xv: gamma*invstd*(g - mdy - (x - m)*invstd*mdyx) when
// training, else gamma*invstd*g.
__device__ __forceinline__ float bn_dx1(float g, float xv, float m, float is, float scale, float mdy, float mdyx, int training) {
    return training ? scale * (g - mdy - (xv - m) * is * mdyx) : scale * g;
}

// g = dy (0 where mask <= 0 with hasMask); dres (+)= g; dx (+)= gamma*invstd*(g - mean(g) - xhat*mean(g*xhat)) when training, else gamma*invstd*g
extern "C" __global__ void bn_back_dx_f32(float* dx, float* dres, const float* x, const float* dy, const float* mask,
                                          const float* mean, const float* invstd, const float* gamma, const double* sums,
                                          int N, int C, int S, int splits, int cm, int hasMask, int training, int doDX,
                                          int accDX, int doDRes, int accDRes) {
    const int n = N * C * S;
    const float cnt = (float)((N / splits) * S);
    if (bn_vec(S, dy, hasMask ? mask : nullptr, doDRes ? dres : nullptr, doDX ? dx : nullptr, doDX && training ? x : nullptr)) {
        for (int e = 4 * (blockIdx.x * blockDim.x + threadIdx.x); e < n; e += 4 * gridDim.x * blockDim.x) {
            float4 g = bn_ld4(dy + e);
            if (hasMask) {
                const float4 mv = bn_ld4(mask + e);
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (!(bn_at(mv, j) > 0.f)) bn_set(g, j, 0.f);
            }
            if (doDRes) {
                float4 r = g;
                if (accDRes) {
                    const float4 old = bn_ld4(dres + e);
#pragma unroll
                    for (int j = 0; j < 4; j++) bn_set(r, j, bn_at(old, j) + bn_at(g, j));
                }
                bn_st4(dres + e, r);
            }
            if (!doDX) continue;
            const int p = e / S;
            const int i = cm ? p % N : p / C, ch = cm ? p / N : p % C;
            const int k = (i % splits) * C + ch;
            const float is = invstd[k], scale = gamma[ch] * is, m = mean[k];
            const float mdy = training ? (float)sums[2 * k] / cnt : 0.f, mdyx = training ? (float)sums[2 * k + 1] / cnt : 0.f;
            const float4 xv = training ? bn_ld4(x + e) : make_float4(0.f, 0.f, 0.f, 0.f);
            float4 v;
#pragma unroll
            for (int j = 0; j < 4; j++) bn_set(v, j, bn_dx1(bn_at(g, j), bn_at(xv, j), m, is, scale, mdy, mdyx, training));
            if (accDX) {
                const float4 old = bn_ld4(dx + e);
#pragma unroll
                for (int j = 0; j < 4; j++) bn_set(v, j, bn_at(old, j) + bn_at(v, j));
            }
            bn_st4(dx + e, v);
        }
        return;
    }
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x) {
        float g = dy[e];
        if (hasMask && !(mask[e] > 0.f)) g = 0.f;
        if (doDRes) dres[e] = accDRes ? dres[e] + g : g;
        if (!doDX) continue;
        const int p = e / S;
        const int i = cm ? p % N : p / C, ch = cm ? p / N : p % C;
        const int k = (i % splits) * C + ch;
        const float is = invstd[k], scale = gamma[ch] * is;
        const float mdy = training ? (float)sums[2 * k] / cnt : 0.f, mdyx = training ? (float)sums[2 * k + 1] / cnt : 0.f;
        const float v = bn_dx1(g, training ? x[e] : 0.f, mean[k], is, scale, mdy, mdyx, training);
        dx[e] = accDX ? dx[e] + v : v;
    }
}
