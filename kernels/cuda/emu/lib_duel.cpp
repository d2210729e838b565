// lib_duel.cpp: duel.cu on the CPU emulator, exported for the Go tests of
// packages cuda and duel/memory/cudaduel (TestConformanceEmulated,
// TestDUELEmulated, through internal/cudatest's Emulator), which load the
// shared library built from the lib_*.cpp files with purego and launch
// kernels through it.
#include "cuda_emu.h"

// duel.cu takes its sm_80 path (__reduce_max_sync, which cuda_emu.h emulates).
#define DUEL_REDUX 1

#include "../duel.cu"

EMU_EXPORT(duel_grid)
EMU_EXPORT(duel_scores)
EMU_EXPORT(duel_int_block)
EMU_EXPORT(duel_move)
EMU_EXPORT(duel_gather)
EMU_EXPORT(duel_dots)
EMU_EXPORT(duel_select_shared)
EMU_EXPORT(duel_select_global)
