// sgemm.cu: batched single-precision matrix product, row-major.
//
//   C[b] = alpha*op(A[b])*op(B[b]) + beta*C[b],   op(X) = X or X^T
//
// op(A) is M x K, op(B) is K x N, C is M x N; matrix b of X starts at
// X + b*strideX (0 broadcasts one matrix). Each 256-thread block computes a
// 64 x 64 tile of C (blockIdx.x: columns, blockIdx.y: rows, blockIdx.z:
// batch, grid-stride), staging 16-deep panels of op(A) and op(B) in shared
// memory; each thread accumulates a 4 x 4 sub-tile in registers, rows
// ty + 16*i and columns tx + 16*j, so that a warp reads shared memory
// without bank conflicts. Accumulation is in float (FMA), as in cuBLAS.
// beta == 0 means C is not read (it may hold NaN).
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#include "tile.cuh"

#define TILE 64   // tile.cuh's tile
#define DEPTH 16  // and panel depth

// C[b] = alpha*op(A[b])*op(B[b]) + beta*C[b], 64 x 64 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256) sgemm_f32(
    int transA, int transB, int M, int N, int K, float alpha,
    const float* A, long long lda, long long strideA,
    const float* B, long long ldb, long long strideB,
    float beta, float* C, long long ldc, long long strideC, int batch) {
    __shared__ float As[DEPTH][TILE + 1];
    __shared__ float Bs[DEPTH][TILE + 1];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;

    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        const float* a = A + bz * strideA;
        const float* b = B + bz * strideB;
        float* c = C + bz * strideC;
        float acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) acc[i][j] = 0.f;

        for (int k0 = 0; k0 < K; k0 += DEPTH) {
            // Each thread loads 4 elements of each panel (64 x 16 = 1024).
#pragma unroll
            for (int l = 0; l < 4; l++) {
                int e = tid + 256 * l;
                // op(A) panel: row m0+mm, column k0+kk.
                int kk = transA ? (e >> 6) : (e & 15);
                int mm = transA ? (e & 63) : (e >> 4);
                int gm = m0 + mm, gk = k0 + kk;
                float v = 0.f;
                if (gm < M && gk < K) v = transA ? a[gk * lda + gm] : a[gm * lda + gk];
                As[kk][mm] = v;
                // op(B) panel: row k0+kk, column n0+nn.
                int kb = transB ? (e & 15) : (e >> 6);
                int nb = transB ? (e >> 4) : (e & 63);
                int hk = k0 + kb, hn = n0 + nb;
                float w = 0.f;
                if (hk < K && hn < N) w = transB ? b[hn * ldb + hk] : b[hk * ldb + hn];
                Bs[kb][nb] = w;
            }
            __syncthreads();
            tileFMA(As, Bs, ty, tx, acc);
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int gm = m0 + ty + 16 * i;
            if (gm >= M) continue;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int gn = n0 + tx + 16 * j;
                if (gn >= N) continue;
                float* p = c + gm * ldc + gn;
                float v = alpha * acc[i][j];
                if (beta != 0.f) v = fmaf(beta, *p, v);
                *p = v;
            }
        }
    }
}
