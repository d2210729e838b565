// bulk.cuh: sm_90's mbarriers and bulk asynchronous copies (the copy
// engine behind TMA, without tensor maps) as gemm_wg.cu's gemm_wgm
// kernels use them. Shared-memory operands are shared-window addresses
// (smem_u32); an address of the block's own shared memory is also its
// address in the cluster's window. The CPU emulator (emu/bulk_emu.h)
// defines the same names.
#pragma once

#ifdef __CUDA_ARCH__
// mbarInit is mbarrier.init.shared::cta.b64: the mbarrier at off expects
// count arrivals a phase.
__device__ __forceinline__ void mbarInit(unsigned off, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(off), "r"(count) : "memory");
}

// fenceMbarInit is fence.mbarrier_init.release.cluster: the block's
// mbarrier.init are visible to the cluster's other blocks after the next
// cluster barrier.
__device__ __forceinline__ void fenceMbarInit() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

// mbarArriveExpectTx is mbarrier.arrive.expect_tx.shared::cta.b64: the
// current phase of the mbarrier at off expects bytes more of transaction
// (bulk copies completing on it), and one arrival is in.
__device__ __forceinline__ void mbarArriveExpectTx(unsigned off, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(off), "r"(bytes) : "memory");
}

// mbarArrive is one arrival (release, block scope) on the block's own
// mbarrier at off (mbarrier.arrive.shared::cta.b64).
__device__ __forceinline__ void mbarArrive(unsigned off) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(off) : "memory");
}

// mbarArriveCluster is one arrival (release, cluster scope) on the
// mbarrier at off in the shared memory of block rank of the cluster
// (mapa.shared::cluster, then mbarrier.arrive.release.cluster.shared::cluster.b64).
__device__ __forceinline__ void mbarArriveCluster(unsigned off, unsigned rank) {
    asm volatile(
        "{\n.reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}" ::"r"(off),
        "r"(rank)
        : "memory");
}

// mbarWait waits until the phase of the given parity of the mbarrier at
// off has completed (mbarrier.try_wait.parity, acquire at cluster scope,
// in a loop): the bulk copies that completed on it, and the writes the
// arriving threads made before arriving, are visible after it.
__device__ __forceinline__ void mbarWait(unsigned off, unsigned parity) {
    asm volatile(
        "{\n.reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n}" ::"r"(off),
        "r"(parity)
        : "memory");
}

// bulkCopy copies bytes (a multiple of 16, both addresses 16-byte
// aligned) from global src into the shared memory at off of every block
// of the cluster in mask (bit r: rank r; the same offset in each) and
// completes them on the mbarrier at offset mbar of each
// (cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster).
__device__ __forceinline__ void bulkCopy(unsigned off, const void* src, unsigned bytes, unsigned mbar, unsigned mask) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;" ::"r"(off),
        "l"(src), "r"(bytes), "r"(mbar), "h"((unsigned short)mask)
        : "memory");
}

// bulkCopyOwn is bulkCopy into the block's own shared memory alone
// (cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes,
// unicast).
__device__ __forceinline__ void bulkCopyOwn(unsigned off, const void* src, unsigned bytes, unsigned mbar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(off), "l"(src), "r"(bytes),
                 "r"(mbar)
                 : "memory");
}
#endif
