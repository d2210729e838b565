// index.cu: tensor.IndexBackend, the gather and scatter of one element per
// lane along an axis of a contiguous operand of shape outer x n x inner
// (lane r = o*inner + j, its index idx[r] in [0, n) copied to the device as
// int32 by the backend): one thread per lane, grid-stride, plain copies
// (the CPU's bits).
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

// dst[r] = src[(o*n + idx[r])*inner + j] for the lanes r = o*inner + j
extern "C" __global__ void take_along_f32(float* dst, const float* src, const int* idx, long long lanes, long long n,
                                          long long inner) {
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < lanes; r += (long long)gridDim.x * blockDim.x) {
        const long long o = r / inner, j = r - o * inner;
        dst[r] = src[(o * n + idx[r]) * inner + j];
    }
}

// dst[(o*n + idx[r])*inner + j] = src[r] for the lanes r = o*inner + j (each lane writes its own element)
extern "C" __global__ void put_along_f32(float* dst, const float* src, const int* idx, long long lanes, long long n,
                                         long long inner) {
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < lanes; r += (long long)gridDim.x * blockDim.x) {
        const long long o = r / inner, j = r - o * inner;
        dst[(o * n + idx[r]) * inner + j] = src[r];
    }
}
