// flags.cuh: blocks that wait for each other's progress through counters
// in global memory (gemm_wg.cu's gemm_wgp_*, whose blocks wait for the
// chunks of the packing that any block's packer warps may have done): a
// barrier of some of a block's warps, the acquire load of a counter and a
// pause between two polls. The CPU emulator (emu/cuda_emu.h) defines the
// same names. The writer's side is CUDA's own: a barrier of the writing
// threads, then one of them __threadfence() and atomicAdd on the counter.
#pragma once

#ifdef __CUDA_ARCH__
// bar_named is bar.sync id, n: a barrier of n threads (a multiple of 32)
// of the block, those that use barrier id (1 to 15; 0 is __syncthreads's).
__device__ __forceinline__ void bar_named(unsigned id, unsigned n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }

// ld_acquire_gpu loads *p with acquire semantics at GPU scope: the writes
// a releasing thread made before the value it reads are visible after it.
__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
    int v;
    asm volatile("ld.acquire.gpu.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// pollLimit is the number of pauses after which a poll gives up: at 200
// ns or more each, more than 13 seconds, where the counters it waits for
// are raised within microseconds.
constexpr unsigned pollLimit = 1u << 26;

// poll_pause waits a little between two polls of a counter; polls counts
// the pauses of this wait. A wait that reaches pollLimit traps: the
// launch fails (the host sees CUDA_ERROR_LAUNCH_FAILED and the context is
// lost) instead of hanging the process on a counter that never reaches
// its value.
__device__ __forceinline__ void poll_pause(unsigned& polls) {
    if (++polls == pollLimit) __trap();
    __nanosleep(200);
}
#endif
