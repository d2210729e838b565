// lib_duel.cpp: duel.cu on the CPU emulator, exported for the Go tests of
// packages cuda and duel/memory/cudaduel (TestConformanceEmulated,
// TestDUELEmulated, through internal/cudatest's Emulator), which load the
// shared library built from the lib_*.cpp files with purego and launch
// kernels through it.
#include "cuda_emu.h"
#include "../duel.cu"

EMU_EXPORT(duel_grid)
EMU_EXPORT(duel_scores)
EMU_EXPORT(duel_permute)
EMU_EXPORT(duel_gather_rows)
EMU_EXPORT(duel_select_shared)
EMU_EXPORT(duel_select_global)
