// cluster.cuh: thread-block clusters (sm_90) as duel_cluster.cu and
// duel_rounds8.cu use them: the block's rank, the cluster barrier, and
// stores into another block's shared memory. The CPU emulator
// (emu/cuda_emu.h) defines the same names.
#pragma once

#ifdef __CUDA_ARCH__
// clusterRank is %cluster_ctarank: the block's rank in its cluster.
__device__ __forceinline__ unsigned clusterRank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// clusterSync is barrier.cluster.arrive (release, PTX 7.8's default)
// then barrier.cluster.wait (acquire): every thread of the cluster.
__device__ __forceinline__ void clusterSync() {
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}

// clusterAddress is the address of *p (this block's shared memory) in the
// shared memory of block rank of the cluster (mapa.shared::cluster).
__device__ __forceinline__ unsigned clusterAddress(const void* p, unsigned rank) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p), r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}

// storeCluster64 stores v at the address of *p (this block's shared
// memory) in the shared memory of block rank of the cluster.
__device__ __forceinline__ void storeCluster64(unsigned long long* p, unsigned rank, unsigned long long v) {
    asm volatile("st.shared::cluster.u64 [%0], %1;" ::"r"(clusterAddress(p, rank)), "l"(v) : "memory");
}

// storeCluster32 is storeCluster64 for an int.
__device__ __forceinline__ void storeCluster32(int* p, unsigned rank, int v) {
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(clusterAddress(p, rank)), "r"(v) : "memory");
}
#endif
