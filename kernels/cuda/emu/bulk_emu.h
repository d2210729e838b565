// bulk_emu.h: sm_90's mbarriers and bulk asynchronous copies on the CPU
// emulator, under the names kernels/cuda/bulk.cuh gives them on a GPU
// (gemm_wg.cu's gemm_wgm kernels use them). Included by cuda_emu.h.
//
// An mbarrier (emu::MBar, kept aside by its shared offset in its block)
// completes a phase when the phase's arrivals are all in and no
// transaction byte is pending; mbarWait(off, parity) waits, as a loop on
// mbarrier.try_wait.parity does, until the phase of that parity has
// completed (at the start, parity 1 counts as completed), switching to
// the scheduler meanwhile, so a wait that can never end shows as a
// deadlock. An arrival beyond a phase's count, or bytes beyond those
// expected, abort.
//
// A bulk copy (cp.async.bulk from global memory into the shared memory of
// the blocks of its cluster mask, completing its bytes on the mbarrier at
// the same offset in each) reads its source when it is issued and lands,
// in alternate clusters of a launch, either at once (so that a copy into
// a stage whose readers have not released it overwrites operands in
// flight: the wgmma checks see it) or only once a thread waits on its
// mbarrier (so that a read of the stage without that wait sees the old
// bytes, and a wgmma on them aborts: a copy not yet landed writes its
// operands). Copies never landed when the cluster ends abort.
#pragma once

namespace emu {
constexpr int mbarWaiting = 1 << 29;  // Fiber::waiting of a thread in mbarWait

// BulkCopy is one bulk copy's bytes for one destination block (its rank
// in the cluster), not yet landed.
struct BulkCopy {
    unsigned rank, dst, mbar;
    std::vector<unsigned char> data;
};
inline std::vector<BulkCopy> bulkPending;
inline bool bulkLazy = false;    // this cluster's copies land at their mbarrier's wait
inline unsigned bulkClusters = 0;  // clusters run so far (bulkLazy alternates)

// clusterBlock returns block rank of the running cluster (the running
// block, rank 0, outside a cluster launch); it aborts if every thread of
// that block has exited (on a GPU its shared memory may belong to another
// block by then).
inline Block& clusterBlock(unsigned rank, const char* what) {
    const unsigned n = cluster ? cluster->size() : 1;
    if (rank >= n) {
        std::fprintf(stderr, "emu: %s to block %u of a cluster of %u\n", what, rank, n);
        std::exit(2);
    }
    Block& b = cluster ? (*cluster)[rank] : *blk;
    bool left = true;
    for (const Fiber& f : b.fibers) left = left && f.done;
    if (left) {
        std::fprintf(stderr, "emu: %s to block %u of the cluster after it has exited (a cluster barrier missing before its end?)\n", what, rank);
        std::exit(2);
    }
    return b;
}

inline MBar& mbarAt(Block& b, unsigned off, const char* what) {
    auto it = b.mbars.find(off);
    if (it == b.mbars.end()) {
        std::fprintf(stderr, "emu: %s at shared byte %u of block (%u,%u,%u): no mbarrier initialised there\n", what, off, b.idx.x, b.idx.y,
                     b.idx.z);
        std::exit(2);
    }
    return it->second;
}

// mbarSettle completes m's phase (m at offset off of block b) when no
// arrival and no byte is pending, waking the threads waiting for it; in a
// cluster, one block in turn then stalls for a while, as after a cluster
// barrier, so that the blocks' orders vary (a block may finish while the
// other still arrives on its mbarriers).
inline void mbarSettle(Block& b, unsigned off, MBar& m) {
    if (m.pending < 0 || (m.pending == 0 && m.tx < 0)) {
        std::fprintf(stderr, "emu: mbarrier at shared byte %u of block (%u,%u,%u): %s beyond its phase's\n", off, b.idx.x, b.idx.y, b.idx.z,
                     m.pending < 0 ? "an arrival" : "transaction bytes");
        std::exit(2);
    }
    if (m.pending > 0 || m.tx != 0) return;
    m.phase++;
    m.pending = (int)m.count;
    if (cluster) {  // then one block in turn stalls, as after a cluster barrier (see emu::launch): others run ahead
        clusterStalled = clusterReleases++ % (cluster->size() + 1);
        clusterStallLeft = clusterStallRounds;
    }
    for (Fiber& f : b.fibers)
        if (f.waiting == mbarWaiting && f.mbarOff == off && (m.phase & 1) != f.mbarParity) f.waiting = -1;
}

// bulkLand writes c into its block's shared memory and completes its
// bytes on its mbarrier.
inline void bulkLand(const BulkCopy& c) {
    Block& b = clusterBlock(c.rank, "cp.async.bulk");
    std::memcpy(reinterpret_cast<unsigned char*>(b.shared.data()) + c.dst, c.data.data(), c.data.size());
    MBar& m = mbarAt(b, c.mbar, "cp.async.bulk's complete_tx");
    m.tx -= (long long)c.data.size();
    mbarSettle(b, c.mbar, m);
}

// bulkLandFor lands the pending copies that complete on the mbarrier at
// offset off of block rank, oldest first.
inline void bulkLandFor(unsigned rank, unsigned off) {
    std::vector<BulkCopy> kept;
    std::vector<BulkCopy> now;
    for (BulkCopy& c : bulkPending) (c.rank == rank && c.mbar == off ? now : kept).push_back(std::move(c));
    bulkPending = std::move(kept);
    for (const BulkCopy& c : now) bulkLand(c);
}

// bulkStart readies a cluster's (or lone block's) run: no copy pending,
// and every other one lazy.
inline void bulkStart() {
    bulkPending.clear();
    bulkLazy = (bulkClusters++ & 1) != 0;
}

// bulkFinish aborts if a copy never landed (no thread waited on its
// mbarrier before the cluster ended).
inline void bulkFinish() {
    if (!bulkPending.empty()) {
        std::fprintf(stderr, "emu: %zu bulk copies never waited for (their mbarrier at shared byte %u)\n", bulkPending.size(),
                     bulkPending[0].mbar);
        std::exit(2);
    }
}

// bulkOverlaps reports whether a copy not yet landed writes the shared
// byte range [lo, hi) of the running block.
inline bool bulkOverlaps(unsigned long lo, unsigned long hi) {
    const unsigned rank = blk->rank;
    for (const BulkCopy& c : bulkPending)
        if (c.rank == rank && c.dst < hi && lo < c.dst + c.data.size()) return true;
    return false;
}
}  // namespace emu

// mbarInit is mbarrier.init.shared::cta.b64 [off], count.
inline void mbarInit(unsigned off, unsigned count) {
    if (off % 8 != 0 || off + 8 > emu::sharedBytes || count == 0 || count >= 1u << 20) {
        std::fprintf(stderr, "emu: mbarrier.init at shared byte %u (of %u) with count %u\n", off, emu::sharedBytes, count);
        std::exit(2);
    }
    emu::MBar& m = emu::blk->mbars[off];
    m = emu::MBar{count, (int)count, 0, 0};
}

// fenceMbarInit is fence.mbarrier_init.release.cluster: nothing to order
// on the emulator (a cluster barrier must still follow it before other
// blocks use the mbarriers).
inline void fenceMbarInit() {}

// mbarArriveExpectTx is mbarrier.arrive.expect_tx.shared::cta.b64 _,
// [off], bytes: the phase expects bytes more, and one arrival is in.
inline void mbarArriveExpectTx(unsigned off, unsigned bytes) {
    emu::MBar& m = emu::mbarAt(*emu::blk, off, "mbarrier.arrive.expect_tx");
    m.tx += bytes;
    m.pending--;
    emu::mbarSettle(*emu::blk, off, m);
}

// mbarArrive is mbarrier.arrive.shared::cta.b64 _, [off]: one arrival on
// the running block's mbarrier at offset off.
inline void mbarArrive(unsigned off) {
    emu::MBar& m = emu::mbarAt(*emu::blk, off, "mbarrier.arrive");
    m.pending--;
    emu::mbarSettle(*emu::blk, off, m);
}

// mbarArriveCluster is mapa.shared::cluster + mbarrier.arrive.shared::cluster.b64:
// one arrival on the mbarrier at offset off of block rank of the cluster.
inline void mbarArriveCluster(unsigned off, unsigned rank) {
    emu::Block& b = emu::clusterBlock(rank, "mbarrier.arrive.shared::cluster");
    emu::MBar& m = emu::mbarAt(b, off, "mbarrier.arrive.shared::cluster");
    m.pending--;
    emu::mbarSettle(b, off, m);
}

// mbarWait loops on mbarrier.try_wait.parity.shared::cta.b64 until the
// phase of the given parity of the mbarrier at off has completed.
inline void mbarWait(unsigned off, unsigned parity) {
    emu::Block& b = *emu::blk;
    emu::mbarAt(b, off, "mbarrier.try_wait.parity");
    emu::bulkLandFor(b.rank, off);
    if ((emu::mbarAt(b, off, "mbarrier.try_wait.parity").phase & 1) != (parity & 1)) return;
    emu::Fiber& f = emu::self();
    f.waiting = emu::mbarWaiting;
    f.mbarOff = off;
    f.mbarParity = parity & 1;
    if (!_setjmp(f.jb)) _longjmp(b.sched, 1);
}

// bulkCopy is cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
// (with .multicast::cluster): the bytes at global src into the shared
// memory at offset dst of each block of the cluster in mask (bit r: block
// rank r), completing them on the mbarrier at offset mbar of each.
inline void bulkCopy(unsigned dst, const void* src, unsigned bytes, unsigned mbar, unsigned mask) {
    if (dst % 16 != 0 || reinterpret_cast<uintptr_t>(src) % 16 != 0 || bytes == 0 || bytes % 16 != 0 || dst + bytes > emu::sharedBytes ||
        mask == 0 || mask >= 1u << 16) {
        std::fprintf(stderr, "emu: cp.async.bulk of %u bytes from %p to shared byte %u (of %u), mask %#x: misaligned or bad size\n", bytes, src,
                     dst, emu::sharedBytes, mask);
        std::exit(2);
    }
    for (unsigned r = 0; r < 16; r++) {
        if (!(mask >> r & 1)) continue;
        emu::Block& b = emu::clusterBlock(r, "cp.async.bulk");
        emu::mbarAt(b, mbar, "cp.async.bulk's complete_tx");
        emu::BulkCopy c{r, dst, mbar, std::vector<unsigned char>(static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes)};
        bool waited = false;
        for (const emu::Fiber& f : b.fibers) waited = waited || (f.waiting == emu::mbarWaiting && f.mbarOff == mbar);
        if (emu::bulkLazy && !waited)
            emu::bulkPending.push_back(std::move(c));
        else
            emu::bulkLand(c);
    }
}

// bulkCopyOwn is bulkCopy into the running block's shared memory alone
// (the unicast form).
inline void bulkCopyOwn(unsigned dst, const void* src, unsigned bytes, unsigned mbar) { bulkCopy(dst, src, bytes, mbar, 1u << emu::blk->rank); }
