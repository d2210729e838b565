// lib_sgemm.cpp: sgemm.cu on the CPU emulator, exported for the Go test
// TestConformanceEmulated (package cuda), which loads the shared library
// built from the lib_*.cpp files with purego and launches kernels through it.
#include "cuda_emu.h"
#include "../sgemm.cu"

EMU_EXPORT(sgemm_f32)
