// unarygrad.cu: tensor.UnaryGradBackend, the backward passes of the
// elementwise unary operations in one grid-stride pass each, over dense
// operands of n floats in memory order, with kernels/elemgrad's float32
// arithmetic operation for operation (rn_fmul: products nvcc never
// contracts; IEEE divisions), so the CPU's bits; PowScalar's factor
// p·x^(p-1) in double rounded once (CUDA's pow against Go's math.Pow: equal
// after the rounding to float32 but for rare ties).
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#include "common.cuh"

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

// d[i] = the gradient of op's input from g[i] and in[i] (x for Square, Abs, Log, PowScalar; y for Exp, Sqrt, ReLU, Tanh, Sigmoid)
extern "C" __global__ void unary_grad_f32(int op, float p, float* d, const float* g, const float* in, long long n) {
    const double pp = (double)p;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float v = in[i], gi = g[i];
        float r;
        switch (op) {
        case UG_SQUARE: r = rn_fmul(rn_fmul(2.0f, v), gi); break;
        case UG_ABS: r = v > 0.0f ? gi : (v < 0.0f ? -gi : 0.0f); break;
        case UG_EXP: r = rn_fmul(v, gi); break;
        case UG_LOG: r = gi / v; break;
        case UG_SQRT: r = gi / rn_fmul(2.0f, v); break;
        case UG_POW: r = rn_fmul((float)(pp * pow((double)v, pp - 1.0)), gi); break;
        case UG_RELU: r = v > 0.0f ? gi : 0.0f; break;
        case UG_TANH: r = rn_fmul(1.0f - rn_fmul(v, v), gi); break;
        default: r = rn_fmul(rn_fmul(v, 1.0f - v), gi); break;  // UG_SIGMOID
        }
        d[i] = r;
    }
}
