// tile.cuh: the inner loop of the FP32 tiled products (sgemm.cu's
// sgemm_f32, duel.cu's duel_dots): 256 threads a 64 x 64 tile, 16-deep
// panels in shared memory, a 4 x 4 sub-tile a thread.
#pragma once

// tileFMA adds the product of the panels As (16 k x 64 rows, padded to
// 65) and Bs (16 k x 64 columns) to the thread's sub-tile acc: rows ty +
// 16i, columns tx + 16j (a warp reads shared memory without bank
// conflicts), one FMA a k each, k in order.
__device__ __forceinline__ void tileFMA(const float (&As)[16][65], const float (&Bs)[16][65], int ty, int tx, float (&acc)[4][4]) {
#pragma unroll
    for (int kk = 0; kk < 16; kk++) {
        float ra[4], rb[4];
#pragma unroll
        for (int i = 0; i < 4; i++) ra[i] = As[kk][ty + 16 * i];
#pragma unroll
        for (int j = 0; j < 4; j++) rb[j] = Bs[kk][tx + 16 * j];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
}
