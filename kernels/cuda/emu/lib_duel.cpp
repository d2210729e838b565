// lib_duel.cpp: duel.cu on the CPU emulator, exported for the Go test
// TestConformanceEmulated (package cuda), which loads the shared library
// built from the lib_*.cpp files with purego and launches kernels through it.
#include "cuda_emu.h"
#include "../duel.cu"

EMU_EXPORT(duel_update)
