// optim.cu: tensor.OptimizerBackend, fused optimizer steps over one
// parameter of n floats (the parameter, its gradient and its state dense
// and in the same order), one launch per step (LARS: two, the first
// reducing the norms), and tensor.MultiOptimizerBackend, the same SGD,
// Adam and EMA steps and the zeroing of gradients over many parameters
// in one launch (the *_multi_f32, see "The multi-tensor kernels"). The arithmetic is kernels/optim's, operation for
// operation: float64 per element with every product and sum rounded on its
// own (rn_dmul, rn_dadd: no contraction into FMAs, which kernels/optim does
// not do either), rounded once to float32 when stored; the EMA is float32.
// LARS's norms are float64 sums of squares over P contiguous parts, each a
// block's threads in a fixed order and then the block's partials summed in
// order by one thread, and the parts summed in order: deterministic, but
// not kernels/optim.Norm's sequential order, so the norms may differ from
// the CPU's in the last bits of a double. Every kernel is a grid-stride
// loop over the elements.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#include "common.cuh"

// opt_sgd_elem applies kernels/optim's SGD/LARS update to element j: d = (g + decay*w)*scale, momentum, w -= lr*d
__device__ __forceinline__ void opt_sgd_elem(float* w, const float* g, float* buf, long long j, double lr, double decay,
                                             double scale, double mom, double damp, int nesterov, int first) {
    const double wj = (double)w[j];
    double d = rn_dmul(rn_dadd((double)g[j], rn_dmul(decay, wj)), scale);
    if (mom != 0.0) {
        double v = d;
        if (!first) v = rn_dadd(rn_dmul(mom, (double)buf[j]), rn_dmul(damp, d));
        buf[j] = (float)v;
        d = nesterov ? rn_dadd(d, rn_dmul(mom, v)) : v;
    }
    w[j] = (float)rn_dadd(wj, -rn_dmul(lr, d));
}

// SGD: d = g + wd*w; buf = d (first) or mom*buf + damp*d; d = d + mom*buf (nesterov) or buf; w = w - lr*d (scale 1: kernels/optim.SGDStep)
extern "C" __global__ void sgd_step_f32(float* w, const float* g, float* buf, long long n, double lr, double wd, double mom,
                                        double damp, int nesterov, int first) {
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n; j += (long long)gridDim.x * blockDim.x)
        opt_sgd_elem(w, g, buf, j, lr, wd, 1.0, mom, damp, nesterov, first);
}

// part[2q], part[2q+1] = sum of w*w, g*g in double over part q = blockIdx.x of P = gridDim.x contiguous parts of n
extern "C" __global__ void __launch_bounds__(1024) lars_norms_f32(double* part, const float* w, const float* g, long long n) {
    __shared__ double red[2][1024];
    const long long P = gridDim.x, chunk = (n + P - 1) / P;
    long long lo = blockIdx.x * chunk, hi = lo + chunk;
    if (lo > n) lo = n;
    if (hi > n) hi = n;
    double sw = 0.0, sg = 0.0;
    for (long long j = lo + threadIdx.x; j < hi; j += blockDim.x) {
        const double wj = (double)w[j], gj = (double)g[j];
        sw = rn_dadd(sw, rn_dmul(wj, wj));
        sg = rn_dadd(sg, rn_dmul(gj, gj));
    }
    red[0][threadIdx.x] = sw;
    red[1][threadIdx.x] = sg;
    __syncthreads();
    if (threadIdx.x == 0) {
        sw = 0.0;
        sg = 0.0;
        for (unsigned t = 0; t < blockDim.x; t++) {
            sw += red[0][t];
            sg += red[1][t];
        }
        part[2 * blockIdx.x] = sw;
        part[2 * blockIdx.x + 1] = sg;
    }
}

// LARS: the norms from the P parts (summed in order); unless excluded and when both are non-zero, scale = eta*pn/(gn + pn*wd + eps) (clip: min(scale/lr, 1)), decay = wd, else scale 1, decay 0; then SGD's update (kernels/optim.LARSStep)
extern "C" __global__ void __launch_bounds__(1024) lars_step_f32(float* w, const float* g, float* buf, const double* part, int P,
                                                                 long long n, double lr, double wd, double mom, double damp,
                                                                 double eta, double eps, int nesterov, int first, int clip,
                                                                 int excluded) {
    __shared__ double coef[2];
    if (threadIdx.x == 0) {
        double scale = 1.0, decay = 0.0;
        if (!excluded) {
            double sw = 0.0, sg = 0.0;
            for (int q = 0; q < P; q++) {
                sw += part[2 * q];
                sg += part[2 * q + 1];
            }
            const double pn = sqrt(sw), gn = sqrt(sg);
            if (pn != 0.0 && gn != 0.0) {
                scale = rn_dmul(eta, pn) / rn_dadd(rn_dadd(gn, rn_dmul(pn, wd)), eps);
                if (clip) {
                    scale = scale / lr;
                    if (!(scale < 1.0)) scale = scale != scale ? scale : 1.0;  // math.Min(scale, 1)
                }
                decay = wd;
            }
        }
        coef[0] = scale;
        coef[1] = decay;
    }
    __syncthreads();
    const double scale = coef[0], decay = coef[1];
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n; j += (long long)gridDim.x * blockDim.x)
        opt_sgd_elem(w, g, buf, j, lr, decay, scale, mom, damp, nesterov, first);
}

// opt_adam_elem applies kernels/optim's Adam/AdamW update to element j (c1 = 1 - b1, c2 = 1 - b2)
__device__ __forceinline__ void opt_adam_elem(float* w, const float* g, float* m, float* v, long long j, double b1,
                                              double b2, double c1, double c2, double eps, double step,
                                              double inv_sqrt_bc2, double decay, double l2) {
    const double x = rn_dmul((double)w[j], decay);
    const double gj = rn_dadd((double)g[j], rn_dmul(l2, x));
    const double mj = rn_dadd(rn_dmul(b1, (double)m[j]), rn_dmul(c1, gj));
    const double vj = rn_dadd(rn_dmul(b2, (double)v[j]), rn_dmul(rn_dmul(c2, gj), gj));
    m[j] = (float)mj;
    v[j] = (float)vj;
    w[j] = (float)rn_dadd(x, -(rn_dmul(step, mj) / rn_dadd(rn_dmul(sqrt(vj), inv_sqrt_bc2), eps)));
}

// Adam: x = w*decay; g' = g + l2*x; m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'*g'; w = x - step*m/(sqrt(v)*inv_sqrt_bc2 + eps) (kernels/optim.adamUpdate)
extern "C" __global__ void adam_step_f32(float* w, const float* g, float* m, float* v, long long n, double b1, double b2,
                                         double eps, double step, double inv_sqrt_bc2, double decay, double l2) {
    const double c1 = 1.0 - b1, c2 = 1.0 - b2;
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n; j += (long long)gridDim.x * blockDim.x)
        opt_adam_elem(w, g, m, v, j, b1, b2, c1, c2, eps, step, inv_sqrt_bc2, decay, l2);
}

// target = mf*target + of*online in float32 (kernels/optim.EMA)
extern "C" __global__ void ema_f32(float* target, const float* online, long long n, float mf, float of) {
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n; j += (long long)gridDim.x * blockDim.x)
        target[j] = rn_fadd(rn_fmul(mf, target[j]), rn_fmul(of, online[j]));
}

// ---- The multi-tensor kernels (*_multi_f32) ----
//
// One launch updates T tensors, where one launch per tensor would cost
// more than its arithmetic (a ResNet-50 has 161 parameters, most of them
// batch norm vectors of 64-2048 floats). Their table, in device memory,
// is 64-bit words: P columns of T addresses (column p of tensor t at
// tab[p*T + t]: the kernel's operands, in its parameters' order), then
// the T sizes, then T+1 chunk starts: tensor t owns the chunks
// start[t]..start[t+1]-1 of `chunk` elements (its last one partial; an
// empty tensor none). A block takes chunks blockIdx.x, + gridDim.x, ...,
// finds each one's tensor by a binary search of the starts and runs the
// single-tensor kernel's update on its elements, thread by thread: each
// element gets exactly the arithmetic of the single-tensor kernel.

// multiSpan returns the tensor of chunk c of a multi-tensor table of P columns and its elements [*lo, *hi)
__device__ __forceinline__ int multiSpan(const long long* tab, int T, int P, long long chunk, long long c, long long* lo,
                                         long long* hi) {
    const long long* start = tab + (long long)(P + 1) * T;
    int a = 0, b = T - 1;  // the largest t with start[t] <= c (then start[t+1] > c: t is not empty)
    while (a < b) {
        const int m = (a + b + 1) >> 1;
        if (start[m] <= c)
            a = m;
        else
            b = m - 1;
    }
    const long long n = tab[(long long)P * T + a];
    *lo = (c - start[a]) * chunk;
    *hi = *lo + chunk < n ? *lo + chunk : n;
    return a;
}

// multiPtr returns column p of tensor t of a multi-tensor table as a float pointer
__device__ __forceinline__ float* multiPtr(const long long* tab, int T, int p, int t) {
    return (float*)tab[(long long)p * T + t];
}

// SGD over T tensors (columns w, g, buf): sgd_step_f32's update of each element
extern "C" __global__ void sgd_multi_f32(const long long* tab, int T, long long chunk, long long chunks, double lr, double wd,
                                         double mom, double damp, int nesterov, int first) {
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
        long long lo, hi;
        const int t = multiSpan(tab, T, 3, chunk, c, &lo, &hi);
        float *w = multiPtr(tab, T, 0, t), *g = multiPtr(tab, T, 1, t), *buf = multiPtr(tab, T, 2, t);
        for (long long j = lo + threadIdx.x; j < hi; j += blockDim.x)
            opt_sgd_elem(w, g, buf, j, lr, wd, 1.0, mom, damp, nesterov, first);
    }
}

// Adam over T tensors (columns w, g, m, v): adam_step_f32's update of each element
extern "C" __global__ void adam_multi_f32(const long long* tab, int T, long long chunk, long long chunks, double b1, double b2,
                                          double eps, double step, double inv_sqrt_bc2, double decay, double l2) {
    const double c1 = 1.0 - b1, c2 = 1.0 - b2;
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
        long long lo, hi;
        const int t = multiSpan(tab, T, 4, chunk, c, &lo, &hi);
        float *w = multiPtr(tab, T, 0, t), *g = multiPtr(tab, T, 1, t);
        float *m = multiPtr(tab, T, 2, t), *v = multiPtr(tab, T, 3, t);
        for (long long j = lo + threadIdx.x; j < hi; j += blockDim.x)
            opt_adam_elem(w, g, m, v, j, b1, b2, c1, c2, eps, step, inv_sqrt_bc2, decay, l2);
    }
}

// target = mf*target + of*online in float32 over T tensors (columns target, online): ema_f32's update of each element
extern "C" __global__ void ema_multi_f32(const long long* tab, int T, long long chunk, long long chunks, float mf, float of) {
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
        long long lo, hi;
        const int t = multiSpan(tab, T, 2, chunk, c, &lo, &hi);
        float *target = multiPtr(tab, T, 0, t), *online = multiPtr(tab, T, 1, t);
        for (long long j = lo + threadIdx.x; j < hi; j += blockDim.x)
            target[j] = rn_fadd(rn_fmul(mf, target[j]), rn_fmul(of, online[j]));
    }
}

// x = 0 over T tensors (column x: the gradients an optimizer zeroes)
extern "C" __global__ void zero_multi_f32(const long long* tab, int T, long long chunk, long long chunks) {
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
        long long lo, hi;
        const int t = multiSpan(tab, T, 1, chunk, c, &lo, &hi);
        float* x = multiPtr(tab, T, 0, t);
        for (long long j = lo + threadIdx.x; j < hi; j += blockDim.x) x[j] = 0.f;
    }
}
