// elementwise.cu: strided elementwise kernels of the CUDA tensor backend.
//
// Every kernel walks the n elements of an index space (a shape of up to
// MAXDIM dimensions, row-major) with a grid-stride loop and reads or writes
// up to three strided views of it (Layout.off/stride: view 0 is the
// destination). Values are computed in double and rounded once to float, as
// the float64 reference (tensor/reference) does, so results match it to the
// last bit for + - * / and within an ulp for the transcendental functions.
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

// dst[i] = v
extern "C" __global__ void fill_f32(float* dst, float v, Layout L) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < L.n; i += (long long)gridDim.x * blockDim.x) {
        long long o[1];
        offsets<1>(L, i, o);
        dst[o[0]] = v;
    }
}

// dst[i] = op(src[i], p)
extern "C" __global__ void unary_f32(int op, float p, float* dst, const float* src, Layout L) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < L.n; i += (long long)gridDim.x * blockDim.x) {
        long long o[2];
        offsets<2>(L, i, o);
        dst[o[0]] = (float)unary(op, (double)src[o[1]], (double)p);
    }
}

// dst[i] = op(a[i], b[i]) (AXPY: a[i] + p*b[i])
extern "C" __global__ void binary_f32(int op, float p, float* dst, const float* a, const float* b, Layout L) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < L.n; i += (long long)gridDim.x * blockDim.x) {
        long long o[3];
        offsets<3>(L, i, o);
        dst[o[0]] = (float)binary(op, (double)a[o[1]], (double)b[o[2]], (double)p);
    }
}
