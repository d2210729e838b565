// activation.cu: tensor.ActivationBackend, the ReLU of nn's ReLU layer and
// the fused add+ReLU ending a residual block, forward and backward, over
// dense operands of n floats taken in memory order (the layout of the
// activations does not matter). Every kernel is a grid-stride loop with the
// bit operations of kernels/vecmath (relu32, ReLUGrad), so the results are
// the CPU backend's bit for bit: max(v, 0) clears v when its sign bit is
// set (NaN with the sign bit clear passes through), and the sum of AddReLU
// is one float32 addition.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

// act_bits and act_float reinterpret a float's bits (CUDA's intrinsics; on
// the emulator, compiled by g++ as C++20, __builtin_bit_cast).
#ifdef __CUDACC__
__device__ __forceinline__ unsigned act_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ float act_float(unsigned u) { return __uint_as_float(u); }
#else
__device__ __forceinline__ unsigned act_bits(float v) { return __builtin_bit_cast(unsigned, v); }
__device__ __forceinline__ float act_float(unsigned u) { return __builtin_bit_cast(float, u); }
#endif

// act_relu32 returns v with its bits cleared when its sign bit is set (kernels/vecmath's relu32)
__device__ __forceinline__ float act_relu32(float v) {
    const int b = (int)act_bits(v);
    return act_float((unsigned)(b & ~(b >> 31)));
}

// y[i] = max(x[i], 0)
extern "C" __global__ void relu_f32(float* y, const float* x, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = act_relu32(x[i]);
}

// y[i] = max(a[i] + b[i], 0), the sum rounded to float32
extern "C" __global__ void add_relu_f32(float* y, const float* a, const float* b, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = act_relu32(a[i] + b[i]);  // one add: nothing to contract
}

// dx[i] = (acc ? dx[i] : 0) + (y[i] > 0 ? dy[i] : 0)
extern "C" __global__ void relu_back_f32(float* dx, const float* dy, const float* y, long long n, int acc) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const unsigned g = act_bits(dy[i]);
        if (acc) {
            // vecmath.ReLUGrad's mask: -bits(y) >> 31 (arithmetic), wrapping
            const unsigned m = (unsigned)((int)(0u - act_bits(y[i])) >> 31);
            dx[i] = dx[i] + act_float(g & m);
        } else {
            dx[i] = act_float(y[i] > 0.f ? g : 0u);  // vecmath.MaskPositive
        }
    }
}
