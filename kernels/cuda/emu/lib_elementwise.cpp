// lib_elementwise.cpp: elementwise.cu on the CPU emulator, exported for the Go test
// TestConformanceEmulated (package cuda), which loads the shared library
// built from the lib_*.cpp files with purego and launches kernels through it.
#include "cuda_emu.h"
#include "../elementwise.cu"

EMU_EXPORT(fill_f32)
EMU_EXPORT(unary_f32)
EMU_EXPORT(binary_f32)
