// reduce.cu: reductions along the last axis of a contiguous rows x len
// matrix, one block per row (grid-stride over rows), accumulated in double
// and combined across the block with __shfl_down_sync, then through shared
// memory between warps. blockDim.x must be a multiple of 32 (<= 1024).
//
// Other axes are brought last by the backend with a strided copy first.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

// The reductions, numbered as tensor.ReduceOp.
#define RED_SUM 0
#define RED_MEAN 1
#define RED_MAX 2
#define RED_MIN 3

__device__ __forceinline__ double combine(int op, double a, double b) {
    switch (op) {
    case RED_MAX: return (a != a || b != b) ? a + b : fmax(a, b);  // NaN propagates
    case RED_MIN: return (a != a || b != b) ? a + b : fmin(a, b);
    }
    return a + b;
}

__device__ __forceinline__ double identity(int op) {
    switch (op) {
    case RED_MAX: return -__longlong_as_double(0x7ff0000000000000LL);  // -Inf
    case RED_MIN: return __longlong_as_double(0x7ff0000000000000LL);   // +Inf
    }
    return 0.0;
}

// dst[r] = op over j of src[r*len + j]   (Sum, Mean, Max, Min)
extern "C" __global__ void reduce_rows_f32(int op, float* dst, const float* src, long long rows, long long len) {
    __shared__ double part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* row = src + r * len;
        double acc = identity(op);
        for (long long j = threadIdx.x; j < len; j += blockDim.x) acc = combine(op, acc, (double)row[j]);
        for (int s = 16; s > 0; s >>= 1) acc = combine(op, acc, __shfl_down_sync(0xffffffffu, acc, s));
        if (lane == 0) part[warp] = acc;
        __syncthreads();
        if (warp == 0) {
            acc = lane < nwarps ? part[lane] : identity(op);
            for (int s = 16; s > 0; s >>= 1) acc = combine(op, acc, __shfl_down_sync(0xffffffffu, acc, s));
            if (lane == 0) dst[r] = (float)(op == RED_MEAN ? acc / (double)len : acc);
        }
        __syncthreads();  // part is reused by the next row
    }
}

// better reports whether (v, j) replaces (bv, bj) as the running argmax of a
// row scanned left to right with "replace when greater": NaN is never
// greater, ties keep the lower index, and a NaN in the first position stays
// (what the sequential scan of tensor/reference does).
__device__ __forceinline__ bool better(float v, long long j, float bv, long long bj) {
    if (bj < 0) return j >= 0;
    if (j < 0) return false;
    if (bj == 0 && bv != bv) return false;
    if (j == 0 && v != v) return true;
    if (v != v) return false;
    if (bv != bv) return true;
    if (v != bv) return v > bv;
    return j < bj;
}

// dst[r] = first j maximising src[r*len + j] (NaN smallest)
extern "C" __global__ void argmax_rows_f32(int* dst, const float* src, long long rows, long long len) {
    __shared__ float pv[32];
    __shared__ long long pj[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* row = src + r * len;
        float bv = 0;
        long long bj = -1;
        for (long long j = threadIdx.x; j < len; j += blockDim.x)
            if (better(row[j], j, bv, bj)) bv = row[j], bj = j;
        for (int s = 16; s > 0; s >>= 1) {
            float v = __shfl_down_sync(0xffffffffu, bv, s);
            long long j = __shfl_down_sync(0xffffffffu, bj, s);
            if (better(v, j, bv, bj)) bv = v, bj = j;
        }
        if (lane == 0) pv[warp] = bv, pj[warp] = bj;
        __syncthreads();
        if (warp == 0) {
            bv = lane < nwarps ? pv[lane] : 0;
            bj = lane < nwarps ? pj[lane] : -1;
            for (int s = 16; s > 0; s >>= 1) {
                float v = __shfl_down_sync(0xffffffffu, bv, s);
                long long j = __shfl_down_sync(0xffffffffu, bj, s);
                if (better(v, j, bv, bj)) bv = v, bj = j;
            }
            if (lane == 0) dst[r] = (int)bj;
        }
        __syncthreads();
    }
}
