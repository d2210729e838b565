// linear.cu: the elementwise parts of tensor.LinearBackend (nn's Linear,
// y = x Wᵀ + b over the rows of x; the products are the backend's Gemm):
// the bias added to every row, and the bias gradient summed down the rows
// in float32 in row order, one thread per column (kernels/linear's loops:
// the CPU's bits). Grid-stride loops.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

// y[r, j] += b[j] over the rows x out matrix y (float32)
extern "C" __global__ void linear_bias_f32(float* y, const float* b, long long rows, int out) {
    const long long total = rows * out;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x)
        y[i] = y[i] + b[i % out];
}

// db[j] += dy[r, j] for r = 0, 1, ... in order (float32), one thread per column j
extern "C" __global__ void linear_bias_grad_f32(float* db, const float* dy, long long rows, int out) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < out; j += gridDim.x * blockDim.x) {
        float s = db[j];
        for (long long r = 0; r < rows; r++) s = s + dy[r * out + j];
        db[j] = s;
    }
}
