// elementwise.cu: strided elementwise kernels of the CUDA tensor backend.
//
// Every kernel walks the n elements of an index space (a shape of up to
// MAXDIM dimensions, row-major) with a grid-stride loop and reads or writes
// up to three strided views of it (Layout.off/stride: view 0 is the
// destination). Values are computed in double and rounded once to float, as
// the float64 reference (tensor/reference) does, so results match it to the
// last bit for + - * / and within an ulp for the transcendental functions.
// Where the space is one dimension of unit stride in every view (every
// contiguous operation), the kernels index without a division per element
// (the strided walk's 64-bit divisions and remainders dominated a
// contiguous add) and move float4s where the views start on 16 bytes.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#define MAXDIM 8

struct Layout {
    long long n;                  // elements in the index space
    long long rank;               // dimensions used (<= MAXDIM)
    long long shape[MAXDIM];      // sizes, outermost first
    long long off[3];             // element offset of each view
    long long stride[3][MAXDIM];  // strides (elements) of each view
};

// offsets sets o[v] to the element offset of index i in view v < nv.
template <int nv>
__device__ __forceinline__ void offsets(const Layout& L, long long i, long long* o) {
#pragma unroll
    for (int v = 0; v < nv; v++) o[v] = L.off[v];
#pragma unroll
    for (int d = MAXDIM - 1; d >= 0; d--) {
        if (d < L.rank) {
            long long s = L.shape[d];
            long long c = i % s;
            i /= s;
#pragma unroll
            for (int v = 0; v < nv; v++) o[v] += c * L.stride[v][d];
        }
    }
}

// The unary operations, numbered as tensor.UnaryOp.
#define OP_COPY 0
#define OP_NEG 1
#define OP_EXP 2
#define OP_LOG 3
#define OP_SQRT 4
#define OP_ABS 5
#define OP_RELU 6
#define OP_TANH 7
#define OP_SIGMOID 8
#define OP_SQUARE 9
#define OP_SIGN 10
#define OP_ADDS 11
#define OP_MULS 12
#define OP_POWS 13

__device__ __forceinline__ double unary(int op, double x, double p) {
    switch (op) {
    case OP_COPY: return x;
    case OP_NEG: return -x;
    case OP_EXP: return exp(x);
    case OP_LOG: return log(x);
    case OP_SQRT: return sqrt(x);
    case OP_ABS: return fabs(x);
    case OP_RELU: return x > 0 ? x : 0.0;  // NaN -> 0
    case OP_TANH: return tanh(x);
    case OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case OP_SQUARE: return x * x;
    case OP_SIGN: return x > 0 ? 1.0 : (x < 0 ? -1.0 : x);  // 0 and NaN stay
    case OP_ADDS: return x + p;
    case OP_MULS: return x * p;
    case OP_POWS: return pow(x, p);
    }
    return __longlong_as_double(0x7ff8000000000000LL);  // unknown op: NaN
}

// The binary operations, numbered as tensor.BinaryOp, and AXPY (a + p*b).
#define OP_ADD 0
#define OP_SUB 1
#define OP_MUL 2
#define OP_DIV 3
#define OP_MAX 4
#define OP_MIN 5
#define OP_AXPY 6

__device__ __forceinline__ double binary(int op, double x, double y, double p) {
    switch (op) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    case OP_DIV: return x / y;
    case OP_MAX:  // NaN propagates; max(-0, +0) = +0 (Go's max)
        if (x != x || y != y) return x + y;
        if (x != y) return x > y ? x : y;
        return signbit(x) ? y : x;
    case OP_MIN:  // NaN propagates; min(-0, +0) = -0 (Go's min)
        if (x != x || y != y) return x + y;
        if (x != y) return x < y ? x : y;
        return signbit(x) ? x : y;
    case OP_AXPY: return x + p * y;
    }
    return __longlong_as_double(0x7ff8000000000000LL);
}

// ew_flat reports whether the index space is one dimension whose nv views
// all have unit stride (every contiguous operation: layout merges the
// dimensions contiguous in every view), so that element i of view v is
// L.off[v] + i: no division per element.
template <int nv>
__device__ __forceinline__ bool ew_flat(const Layout& L) {
    if (L.rank != 1) return false;
#pragma unroll
    for (int v = 0; v < nv; v++)
        if (L.stride[v][0] != 1) return false;
    return true;
}

// ew_a16 reports whether element off of p starts on 16 bytes.
__device__ __forceinline__ bool ew_a16(const float* p, long long off) {
    return ((reinterpret_cast<unsigned long long>(p) + 4ull * (unsigned long long)off) & 15) == 0;
}

// ew_ld4 and ew_st4 read and write the 4 floats at p (16-byte aligned).
__device__ __forceinline__ float4 ew_ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void ew_st4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }

// The flat paths: a grid-stride loop over float4s where every view starts
// on 16 bytes (the caching allocator's buffers do; views at other
// offsets take single floats), the last n % 4 elements one at a time. The
// value of each element is computed as the strided path computes it, so
// the results are the same bits.
template <class Body4, class Body1>
__device__ __forceinline__ void ew_flat_loop(long long n, bool aligned, Body4 body4, Body1 body1) {
    const long long step = (long long)gridDim.x * blockDim.x, first = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long i0 = 0;
    if (aligned) {
        i0 = n & ~3LL;
        for (long long i = 4 * first; i < i0; i += 4 * step) body4(i);
    }
    for (long long i = i0 + first; i < n; i += step) body1(i);
}

// dst[i] = v
extern "C" __global__ void fill_f32(float* dst, float v, Layout L) {
    if (ew_flat<1>(L)) {
        float* d = dst + L.off[0];
        ew_flat_loop(
            L.n, ew_a16(dst, L.off[0]), [&](long long i) { ew_st4(d + i, make_float4(v, v, v, v)); }, [&](long long i) { d[i] = v; });
        return;
    }
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < L.n; i += (long long)gridDim.x * blockDim.x) {
        long long o[1];
        offsets<1>(L, i, o);
        dst[o[0]] = v;
    }
}

// dst[i] = op(src[i], p)
extern "C" __global__ void unary_f32(int op, float p, float* dst, const float* src, Layout L) {
    if (ew_flat<2>(L)) {
        float* d = dst + L.off[0];
        const float* s = src + L.off[1];
        const double q = (double)p;
        ew_flat_loop(
            L.n, ew_a16(dst, L.off[0]) && ew_a16(src, L.off[1]),
            [&](long long i) {
                const float4 x = ew_ld4(s + i);
                ew_st4(d + i, make_float4((float)unary(op, (double)x.x, q), (float)unary(op, (double)x.y, q), (float)unary(op, (double)x.z, q),
                                          (float)unary(op, (double)x.w, q)));
            },
            [&](long long i) { d[i] = (float)unary(op, (double)s[i], q); });
        return;
    }
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < L.n; i += (long long)gridDim.x * blockDim.x) {
        long long o[2];
        offsets<2>(L, i, o);
        dst[o[0]] = (float)unary(op, (double)src[o[1]], (double)p);
    }
}

// dst[i] = op(a[i], b[i]) (AXPY: a[i] + p*b[i])
extern "C" __global__ void binary_f32(int op, float p, float* dst, const float* a, const float* b, Layout L) {
    if (ew_flat<3>(L)) {
        float* d = dst + L.off[0];
        const float *x = a + L.off[1], *y = b + L.off[2];
        const double q = (double)p;
        ew_flat_loop(
            L.n, ew_a16(dst, L.off[0]) && ew_a16(a, L.off[1]) && ew_a16(b, L.off[2]),
            [&](long long i) {
                const float4 u = ew_ld4(x + i), w = ew_ld4(y + i);
                ew_st4(d + i, make_float4((float)binary(op, (double)u.x, (double)w.x, q), (float)binary(op, (double)u.y, (double)w.y, q),
                                          (float)binary(op, (double)u.z, (double)w.z, q), (float)binary(op, (double)u.w, (double)w.w, q)));
            },
            [&](long long i) { d[i] = (float)binary(op, (double)x[i], (double)y[i], q); });
        return;
    }
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < L.n; i += (long long)gridDim.x * blockDim.x) {
        long long o[3];
        offsets<3>(L, i, o);
        dst[o[0]] = (float)binary(op, (double)a[o[1]], (double)b[o[2]], (double)p);
    }
}
