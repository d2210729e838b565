// contrastive.cu: the row-wise part of tensor.ContrastiveBackend (InfoNCE
// and NT-Xent, kernels/loss's contrast). The logits s = x·cᵀ/τ (rows x
// cands) and e = x·negᵀ/τ (rows x n) are products the backend computes
// with its Gemm; contrast_rows_f32 then runs one block per anchor row
// (grid-stride over rows; blockDim.x a multiple of 32, at most 1024) and,
// in kernels/loss's arithmetic, computes the row's term
// -s⁺ + log(ε·exp(s⁺) + Σ exp(s⁻)) in double (a stable log-sum-exp
// relative to the row's largest candidate, the exponentials in double)
// and replaces the logits in place by the derivatives of the mean loss
// with respect to them: exp(s⁻)/Z/rows for the negatives (rounded to
// float32, then scaled by the float32 (1/rows)/Z, as the CPU does),
// (ε·exp(s⁺)/Z - 1)/rows for the positive, 0 elsewhere (the anchor
// itself, and the other keys without batch negatives). The positive of
// anchor r is candidate r (InfoNCE) or r ± half (NT-Xent, whose anchor r
// is not its own negative). rows.cu's rows_mean_f64 averages the terms.
// The gradients are again Gemm products of the derivatives, scaled on the
// device by contrast_scale_f32 with the incoming gradient over τ (the
// seed stays on the device).
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#include "common.cuh"

// The row kernel reduces through block_sum_f64 (common.cuh) and ctr_block_max, outside
// its body: the marker contrast_rows_f32_warps gives it a launcher that
// insists on whole warps (see kernels/cuda/gen).

// ctr_neg_inf returns -Inf
__device__ __forceinline__ double ctr_neg_inf() { return -__longlong_as_double(0x7ff0000000000000LL); }

// ctr_max returns the larger of a and b, a NaN b never being larger (the CPU's v > mx)
__device__ __forceinline__ double ctr_max(double a, double b) { return b > a ? b : a; }

// ctr_block_max returns the maximum of v over the block to every thread (NaNs ignored; part: 32 doubles).
__device__ __forceinline__ double ctr_block_max(double v, double* part) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int s = 16; s > 0; s >>= 1) v = ctr_max(v, __shfl_down_sync(0xffffffffu, v, s));
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? part[lane] : ctr_neg_inf();
        for (int s = 16; s > 0; s >>= 1) v = ctr_max(v, __shfl_down_sync(0xffffffffu, v, s));
        if (lane == 0) part[0] = v;
    }
    __syncthreads();
    v = part[0];
    __syncthreads();
    return v;
}

// term[r] = max + log(eps exp(s+ - max) + sum exp(s- - max)) - s+ per anchor r; s (rows x cands), e (rows x n) replaced by the loss's derivatives (kernels/loss.contrast)
extern "C" __global__ void contrast_rows_f32(double* term, float* s, float* e, int rows, int cands, int n, int half,
                                             double eps, int batch_neg) {
    __shared__ double part[32];
    const double log_eps = eps > 0.0 ? log(eps) : ctr_neg_inf();
    const double inv = 1.0 / (double)rows;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        float* srow = s + (long long)r * cands;
        float* erow = e + (long long)r * n;
        const int pos = half > 0 ? (r + half) % rows : r;  // NT-Xent: r ± half; InfoNCE: r
        const int me = half > 0 ? r : -1;
        const double lp = (double)srow[pos];
        double m = ctr_neg_inf();
        if (batch_neg)
            for (int j = threadIdx.x; j < cands; j += blockDim.x)
                if (j != pos && j != me) m = ctr_max(m, (double)srow[j]);
        for (int j = threadIdx.x; j < n; j += blockDim.x) m = ctr_max(m, (double)erow[j]);
        m = ctr_block_max(m, part);
        const double mx = ctr_max(lp + log_eps, m);  // lp + log_eps unless a candidate is larger
        const double ep = eps > 0.0 ? exp(lp + log_eps - mx) : 0.0;
        double z = 0.0;
        for (int j = threadIdx.x; j < cands; j += blockDim.x) {
            double ev = 0.0;
            if (batch_neg && j != pos && j != me) {
                ev = exp((double)srow[j] - mx);
                z += ev;
            }
            srow[j] = (float)ev;
        }
        for (int j = threadIdx.x; j < n; j += blockDim.x) {
            const double ev = exp((double)erow[j] - mx);
            z += ev;
            erow[j] = (float)ev;
        }
        z = ep + block_sum_f64(z, part);
        if (threadIdx.x == 0) term[r] = mx + log(z) - lp;
        const float scale = (float)(inv / z);
        for (int j = threadIdx.x; j < cands; j += blockDim.x)
            srow[j] = j == pos ? (float)((ep / z - 1.0) * inv) : rn_fmul(srow[j], scale);
        for (int j = threadIdx.x; j < n; j += blockDim.x) erow[j] = rn_fmul(erow[j], scale);
    }
}

// x[i] *= seed[0] / (float)tau (float32: the incoming gradient over the temperature)
extern "C" __global__ void contrast_scale_f32(float* x, const float* seed, long long n, double tau) {
    const float alpha = seed[0] / (float)tau;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        x[i] = rn_fmul(x[i], alpha);
}
