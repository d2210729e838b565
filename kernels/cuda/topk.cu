// topk.cu: tensor.TopKBackend, the k largest elements of each row of a
// dense m x n matrix and their columns, in kernels/topk's order: a larger
// value first, equal values (-0 equal to +0) by increasing column, NaN below
// every number. Every element has a distinct 64-bit key (kernels/topk.Key):
// the value's order-preserving 32-bit key above, 2^32-1 minus the column
// below, so the k first elements are the k largest keys and the result is
// the CPU's bit for bit, ties included.
//
// One block per row (grid-stride over rows; any blockDim.x up to 1024),
// k <= TOPK_MAX. A radix select finds the k-th largest key a byte at a time
// from the top: per pass, a histogram in shared memory of the next byte of
// the keys still matching the prefix chosen so far, and one thread picks the
// byte holding the k-th; it stops as soon as that bucket holds exactly the
// elements still needed (usually after two to four passes over the row; the
// column bytes are visited only for ties straddling the k-th, and only those
// that vary below n). A last pass gathers the k keys at or above the
// threshold into shared memory (slots by an atomic counter: the order is
// restored next), a bitonic sort puts them in descending order, and the
// values (their bits as read) and columns are written out. The histogram
// counts are integers, so the selection does not depend on the order in
// which threads add them.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#define TOPK_MAX 1024

// topk_bits reinterprets a float's bits; topk_inc adds one to a shared
// counter and returns its old value (atomically on the GPU; the emulator's
// threads switch only at barriers, so a plain increment is atomic there).
#ifdef __CUDACC__
__device__ __forceinline__ unsigned topk_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned topk_inc(unsigned* c) { return atomicAdd(c, 1u); }
#else
__device__ __forceinline__ unsigned topk_bits(float v) { return __builtin_bit_cast(unsigned, v); }
__device__ __forceinline__ unsigned topk_inc(unsigned* c) { return (*c)++; }
#endif

// topk_key returns kernels/topk.Key(v, col): NaN's value key 0, -0 as +0
__device__ __forceinline__ unsigned long long topk_key(float v, long long col) {
    unsigned u = topk_bits(v);
    if (v != v) u = 0u;
    else if (v == 0.0f) u = 0x80000000u;
    else u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)u << 32) | (unsigned long long)(0xFFFFFFFFu - (unsigned)col);
}

// vals[r*k + j] = the row's j-th element in the order, idx[r*k + j] its column (0 < k <= min(n, TOPK_MAX), n < 2^31)
extern "C" __global__ void topk_rows_f32(float* vals, int* idx, const float* x, long long m, long long n, int k) {
    __shared__ unsigned long long cand[TOPK_MAX];
    __shared__ unsigned hist[256];
    __shared__ unsigned long long prefix, mask;
    __shared__ unsigned rem, done, count;
    const int tid = threadIdx.x, bd = blockDim.x;
    // column bytes that vary below n: the ones above are 0xFF in every key
    int cb = 0;
    for (unsigned long long t = (unsigned long long)(n - 1); t > 0; t >>= 8) cb++;
    const unsigned long long fixedLow = cb == 4 ? 0ull : (0xFFFFFFFFull >> (8 * cb)) << (8 * cb);
    int kp = 1;
    while (kp < k) kp <<= 1;
    for (long long r = blockIdx.x; r < m; r += gridDim.x) {
        const float* xr = x + r * n;
        if (tid == 0) {
            prefix = fixedLow;
            mask = fixedLow;
            rem = (unsigned)k;
            done = k >= n;  // every element: no selection
            count = 0;
        }
        __syncthreads();
        for (int pass = 0; pass < 4 + cb; pass++) {
            if (done) break;  // the same value in every thread
            const int shift = pass < 4 ? 56 - 8 * pass : 8 * (cb - 1 - (pass - 4));
            for (int i = tid; i < 256; i += bd) hist[i] = 0;
            __syncthreads();
            const unsigned long long p = prefix, mk = mask;
            for (long long j = tid; j < n; j += bd) {
                const unsigned long long key = topk_key(xr[j], j);
                if ((key & mk) == p) topk_inc(&hist[(key >> shift) & 255]);
            }
            __syncthreads();
            if (tid == 0) {
                unsigned need = rem, above = 0;
                int b = 255;
                for (; b > 0; b--) {
                    if (above + hist[b] >= need) break;
                    above += hist[b];
                }
                need -= above;
                prefix = p | ((unsigned long long)b << shift);
                mask = mk | (255ull << shift);
                rem = need;
                done = hist[b] == need;  // the bucket is wholly in
            }
            __syncthreads();
        }
        // the k keys whose bytes chosen so far are at or above the prefix
        const unsigned long long p = prefix, mk = mask;
        for (long long j = tid; j < n; j += bd) {
            const unsigned long long key = topk_key(xr[j], j);
            if ((key & mk) >= p) cand[topk_inc(&count)] = key;
        }
        for (int i = k + tid; i < kp; i += bd) cand[i] = 0ull;  // below every key
        __syncthreads();
        // bitonic sort of cand[0..kp), descending
        for (int size = 2; size <= kp; size <<= 1) {
            for (int stride = size >> 1; stride > 0; stride >>= 1) {
                for (int i = tid; i < kp; i += bd) {
                    const int j = i ^ stride;
                    if (j > i) {
                        const unsigned long long a = cand[i], b = cand[j];
                        if ((i & size) == 0 ? a < b : a > b) {
                            cand[i] = b;
                            cand[j] = a;
                        }
                    }
                }
                __syncthreads();
            }
        }
        for (int i = tid; i < k; i += bd) {
            const unsigned col = 0xFFFFFFFFu - (unsigned)cand[i];
            vals[r * k + i] = xr[col];
            idx[r * k + i] = (int)col;
        }
        __syncthreads();  // cand and the shared state are reused by the next row
    }
}
