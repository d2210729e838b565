// lib_duel.cpp: duel.cu on the CPU emulator, exported for the Go tests of
// packages cuda and duel/memory/cudaduel (TestConformanceEmulated,
// TestDUELEmulated, through internal/cudatest's Emulator), which load the
// shared library built from the lib_*.cpp files with purego and launch
// kernels through it.
#include "cuda_emu.h"

// __reduce_max_sync is sm_80's warp maximum (REDUX), which duel.cu's
// warpMax uses from sm_80 on (DUEL_REDUX; H100s run that path): every
// lane deposits its value, the warp meets, every lane takes the maximum,
// the warp meets again before the slots are reused (as __ballot_sync).
inline unsigned __reduce_max_sync(unsigned, unsigned v) {
    const unsigned t = emuThread(), w = t / 32;
    emu::blk->slot[t] = v;
    emu::wait(1 + w);
    unsigned m = 0;
    for (unsigned l = 0; l < (unsigned)emu::blk->expected[1 + w]; l++)
        m = std::max(m, (unsigned)emu::blk->slot[32 * w + l]);
    emu::wait(1 + w);
    return m;
}
#define DUEL_REDUX 1

#include "../duel.cu"

EMU_EXPORT(duel_grid)
EMU_EXPORT(duel_scores)
EMU_EXPORT(duel_move)
EMU_EXPORT(duel_batch_sums)
EMU_EXPORT(duel_select_shared)
EMU_EXPORT(duel_select_global)
