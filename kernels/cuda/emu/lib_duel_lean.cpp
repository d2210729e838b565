// lib_duel_lean.cpp: duel_lean.cu on the CPU emulator, exported for the
// Go tests of duel/memory/cudaduel (TestDUELLeanEmulated, through
// internal/cudatest's Emulator, and the fake driver).
#include "cuda_emu.h"

// duel_lean.cu takes its sm_80 path (__reduce_max_sync, which cuda_emu.h emulates).
#define DUEL_REDUX 1

#include "../duel_lean.cu"

EMU_EXPORT(duel_select_lean128)
EMU_EXPORT(duel_select_lean512)
EMU_EXPORT(duel_select_lean1024)
