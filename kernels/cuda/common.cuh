// common.cuh: device helpers shared by several kernel families (rows.cu,
// contrastive.cu, losses.cu, batchnorm.cu, optim.cu, unarygrad.cu, conv.cu), each
// including it with #include "common.cuh" (found next to the .cu file, by
// nvcc and by the emulator's g++ alike). It is not a module of its own:
// go run ./kernels/cuda/gen compiles only .cu files, but stamps each with
// the SHA-256 of its text and of the headers it includes, so editing this
// file makes TestGeneratedUpToDate fail until the PTX is regenerated.
#pragma once

#ifndef DYNAMIC_SHARED
// DYNAMIC_SHARED declares the block's dynamic shared memory (the CPU
// emulator defines its own).
#define DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#endif

// rn_fmul, rn_dmul, rn_fadd and rn_dadd are correctly rounded products and
// sums that nvcc never contracts into FMAs (the CPU rounds each on its own);
// on the emulator (no __CUDACC__) they are the plain operations.
#ifdef __CUDACC__
__device__ __forceinline__ float rn_fmul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double rn_dmul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float rn_fadd(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double rn_dadd(double a, double b) { return __dadd_rn(a, b); }
#else
__device__ __forceinline__ float rn_fmul(float a, float b) { return a * b; }
__device__ __forceinline__ double rn_dmul(double a, double b) { return a * b; }
__device__ __forceinline__ float rn_fadd(float a, float b) { return a + b; }
__device__ __forceinline__ double rn_dadd(double a, double b) { return a + b; }
#endif

// block_sum_f64 returns the sum of v over the block to every thread: each
// warp's 32 values by __shfl_down_sync, then the warps' sums (through part:
// 32 doubles of shared memory) by the first warp. blockDim.x must be a
// multiple of 32 (at most 1024); every thread of the block must call it.
// A kernel reducing through it should carry a <kernel>_warps marker, since
// the shuffles are outside its body (see kernels/cuda/gen).
__device__ __forceinline__ double block_sum_f64(double v, double* part) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int s = 16; s > 0; s >>= 1) v += __shfl_down_sync(0xffffffffu, v, s);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? part[lane] : 0.0;
        for (int s = 16; s > 0; s >>= 1) v += __shfl_down_sync(0xffffffffu, v, s);
        if (lane == 0) part[0] = v;
    }
    __syncthreads();
    v = part[0];
    __syncthreads();  // part is reused by the next reduction
    return v;
}
