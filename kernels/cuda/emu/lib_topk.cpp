// lib_topk.cpp: topk.cu on the CPU emulator, exported for the Go tests of
// package cuda (TestTopKEmulated, the fake driver), which load the shared
// library built from the lib_*.cpp files with purego and launch kernels
// through it.
#include "cuda_emu.h"
#include "../topk.cu"

EMU_EXPORT(topk_rows_f32)
