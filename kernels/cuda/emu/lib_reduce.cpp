// lib_reduce.cpp: reduce.cu on the CPU emulator, exported for the Go test
// TestConformanceEmulated (package cuda), which loads the shared library
// built from the lib_*.cpp files with purego and launches kernels through it.
#include "cuda_emu.h"
#include "../reduce.cu"

EMU_EXPORT(reduce_rows_f32)
EMU_EXPORT(argmax_rows_f32)
