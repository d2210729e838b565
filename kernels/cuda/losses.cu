// losses.cu: tensor.LossBackend, BYOL and Barlow Twins (kernels/loss's
// arithmetic) on contiguous b x d views, one sample per row.
//
// BYOL: byol_rows_f32 runs one block per row (grid-stride over rows;
// blockDim.x a multiple of 32, at most 1024) and reduces the row's
// squared norms and dot product in double (warp shuffles, then shared
// memory); byol_grad_f32 forms each gradient element in double from them,
// rounded once, the incoming gradient read on the device.
//
// Barlow Twins: barlow_norm_f32 normalises each column with its batch mean
// and biased variance, one thread per column summing down the rows in
// order (kernels/loss.BarlowNorm's order: the same double sums); the
// cross-correlation C = ẑ1ᵀ ẑ2 / b is the backend's Gemm; barlow_loss_f32
// turns C into ∂L/∂C in place, one block per row of C, and sums the row's
// terms in double; barlow_grad_f32 takes the product of the other view
// and G (again a Gemm), scales it by seed/b in float32 and applies the
// normalisation's backward pass, one thread per column in row order.
// loss_total_f64 adds the per-row terms (one block) into the loss.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#include "common.cuh"

// The block reductions shuffle in block_sum_f64 (common.cuh), outside the kernels'
// bodies: the markers byol_rows_f32_warps, barlow_loss_f32_warps and
// loss_total_f64_warps give them launchers that insist on whole warps.

// out[0] = (float)(sum of v[0..n) / div) (one block)
extern "C" __global__ void loss_total_f64(float* out, const double* v, int n, double div) {
    __shared__ double part[32];
    double s = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
    s = block_sum_f64(s, part);
    if (threadIdx.x == 0) out[0] = (float)(s / div);
}

// stat[3i..3i+2] = max(|p_i|, eps), max(|z_i|, eps), cos(p_i, z_i); term[i] = 2 - 2 cos (double)
extern "C" __global__ void byol_rows_f32(double* term, double* stat, const float* p, const float* z, int b, int d, double eps) {
    __shared__ double part[32];
    for (int i = blockIdx.x; i < b; i += gridDim.x) {
        const float* pr = p + (long long)i * d;
        const float* zr = z + (long long)i * d;
        double pp = 0.0, zz = 0.0, pz = 0.0;
        for (int j = threadIdx.x; j < d; j += blockDim.x) {
            const double x = (double)pr[j], y = (double)zr[j];
            pp += rn_dmul(x, x);
            zz += rn_dmul(y, y);
            pz += rn_dmul(x, y);
        }
        pp = block_sum_f64(pp, part);
        zz = block_sum_f64(zz, part);
        pz = block_sum_f64(pz, part);
        if (threadIdx.x == 0) {
            const double np = fmax(sqrt(pp), eps), nz = fmax(sqrt(zz), eps);
            const double c = pz / rn_dmul(np, nz);
            stat[3 * (long long)i] = np;
            stat[3 * (long long)i + 1] = nz;
            stat[3 * (long long)i + 2] = c;
            term[i] = 2.0 - rn_dmul(2.0, c);
        }
    }
}

// g = s/(nx ny) y - s cos/(nx nx) x per row, s = -2 seed[0]/b, (nx, ny) = the norms of (p, z) (wrt_z = 0) or (z, p) (wrt_z = 1)
extern "C" __global__ void byol_grad_f32(float* g, const float* x, const float* y, const double* stat, const float* seed, int b,
                                         int d, int wrt_z) {
    const double scale = -2.0 * (double)seed[0] / (double)b;
    const long long total = (long long)b * d;
    for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < total; k += (long long)gridDim.x * blockDim.x) {
        const long long i = k / d;
        const double nx = stat[3 * i + wrt_z], ny = stat[3 * i + 1 - wrt_z], c = stat[3 * i + 2];
        const double a = scale / rn_dmul(nx, ny), cc = rn_dmul(scale, c) / rn_dmul(nx, nx);
        g[k] = (float)(rn_dmul(a, (double)y[k]) - rn_dmul(cc, (double)x[k]));
    }
}

// per column j of x (b x d): std[j] = sqrt(biased var + eps) and, when write_h, h = (x - mean)/std (double, rows summed in order)
extern "C" __global__ void barlow_norm_f32(float* h, double* std, const float* x, int b, int d, double eps, int write_h) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < d; j += gridDim.x * blockDim.x) {
        double mean = 0.0;
        for (int r = 0; r < b; r++) mean += (double)x[(long long)r * d + j];
        mean /= (double)b;
        double sq = 0.0;
        for (int r = 0; r < b; r++) {
            const double dv = (double)x[(long long)r * d + j] - mean;
            sq += rn_dmul(dv, dv);
        }
        const double sd = sqrt(sq / (double)b + eps);
        std[j] = sd;
        if (write_h)
            for (int r = 0; r < b; r++) h[(long long)r * d + j] = (float)(((double)x[(long long)r * d + j] - mean) / sd);
    }
}

// row i of the d x d cross-correlation c becomes dL/dC (2(C_ii - 1), 2 lambda C_ij); term[i] = (C_ii - 1)^2 + lambda sum_j!=i C_ij^2 (double)
extern "C" __global__ void barlow_loss_f32(double* term, float* c, int d, double lambda) {
    __shared__ double part[32];
    for (int i = blockIdx.x; i < d; i += gridDim.x) {
        float* row = c + (long long)i * d;
        double t = 0.0;
        for (int j = threadIdx.x; j < d; j += blockDim.x) {
            const double v = (double)row[j];
            if (j == i) {
                t += rn_dmul(v - 1.0, v - 1.0);
                row[j] = (float)rn_dmul(2.0, v - 1.0);
            } else {
                t += rn_dmul(rn_dmul(lambda, v), v);
                row[j] = (float)rn_dmul(rn_dmul(2.0, lambda), v);
            }
        }
        t = block_sum_f64(t, part);
        if (threadIdx.x == 0) term[i] = t;
    }
}

// per column j: gh *= seed[0]/b (float32, in place); dz = (gh - mean(gh) - h mean(gh h)) / std (double, rows in order)
extern "C" __global__ void barlow_grad_f32(float* dz, float* gh, const float* h, const double* std, const float* seed, int b, int d) {
    const float alpha = seed[0] / (float)b;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < d; j += gridDim.x * blockDim.x) {
        double mg = 0.0, mgh = 0.0;
        for (int r = 0; r < b; r++) {
            const long long k = (long long)r * d + j;
            const float v = rn_fmul(gh[k], alpha);
            gh[k] = v;
            mg += (double)v;
            mgh += rn_dmul((double)v, (double)h[k]);
        }
        for (int r = 0; r < b; r++) {
            const long long k = (long long)r * d + j;
            const double hv = (double)h[k];
            dz[k] = (float)(((double)gh[k] - mg / (double)b - rn_dmul(hv, mgh) / (double)b) / std[j]);
        }
    }
}
