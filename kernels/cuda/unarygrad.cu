// unarygrad.cu: tensor.UnaryGradBackend, the backward passes of the
// elementwise unary operations in one grid-stride pass each, over dense
// operands of n floats in memory order, with kernels/elemgrad's float32
// arithmetic operation for operation (ug_fmul: products nvcc never
// contracts; IEEE divisions), so the CPU's bits; PowScalar's factor
// p·x^(p-1) in double rounded once (CUDA's pow against Go's math.Pow: equal
// after the rounding to float32 but for rare ties).
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

// The operations, numbered as tensor.UnaryOp.
#define UG_EXP 2
#define UG_LOG 3
#define UG_SQRT 4
#define UG_ABS 5
#define UG_RELU 6
#define UG_TANH 7
#define UG_SIGMOID 8
#define UG_SQUARE 9
#define UG_POW 13

// ug_fmul is a correctly rounded float product that nvcc never contracts
#ifdef __CUDACC__
__device__ __forceinline__ float ug_fmul(float a, float b) { return __fmul_rn(a, b); }
#else
__device__ __forceinline__ float ug_fmul(float a, float b) { return a * b; }
#endif

// d[i] = the gradient of op's input from g[i] and in[i] (x for Square, Abs, Log, PowScalar; y for Exp, Sqrt, ReLU, Tanh, Sigmoid)
extern "C" __global__ void unary_grad_f32(int op, float p, float* d, const float* g, const float* in, long long n) {
    const double pp = (double)p;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float v = in[i], gi = g[i];
        float r;
        switch (op) {
        case UG_SQUARE: r = ug_fmul(ug_fmul(2.0f, v), gi); break;
        case UG_ABS: r = v > 0.0f ? gi : (v < 0.0f ? -gi : 0.0f); break;
        case UG_EXP: r = ug_fmul(v, gi); break;
        case UG_LOG: r = gi / v; break;
        case UG_SQRT: r = gi / ug_fmul(2.0f, v); break;
        case UG_POW: r = ug_fmul((float)(pp * pow((double)v, pp - 1.0)), gi); break;
        case UG_RELU: r = v > 0.0f ? gi : 0.0f; break;
        case UG_TANH: r = ug_fmul(1.0f - ug_fmul(v, v), gi); break;
        default: r = ug_fmul(ug_fmul(v, 1.0f - v), gi); break;  // UG_SIGMOID
        }
        d[i] = r;
    }
}
