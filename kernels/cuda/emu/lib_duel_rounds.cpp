// lib_duel_rounds.cpp: duel_rounds.cu on the CPU emulator, exported for
// the Go tests of duel/memory/cudaduel (TestDUELRoundsEmulated, through
// internal/cudatest's Emulator, and the fake driver).
#include "cuda_emu.h"

// duel_rounds.cu takes its sm_80 path (__reduce_max_sync, which cuda_emu.h emulates).
#define DUEL_REDUX 1

#include "../duel_rounds.cu"

EMU_EXPORT(duel_select_rounds)
