// lib_duel_rounds8.cpp: duel_rounds8.cu on the CPU emulator, its launches
// run as clusters of CLUSTER blocks (EMU_EXPORT_CLUSTER), exported for the
// Go tests of duel/memory/cudaduel (TestDUELRounds8Emulated, and the fake
// driver's), which compare it with duel_select_shared and memory.DUEL.
#include "cuda_emu.h"

// rounds.cuh takes its sm_80 path (__reduce_max_sync, which cuda_emu.h
// emulates), as on the sm_90 devices that run this kernel.
#define DUEL_REDUX 1

#include "../duel_rounds8.cu"

EMU_EXPORT_CLUSTER(duel_select_rounds8, CLUSTER)
