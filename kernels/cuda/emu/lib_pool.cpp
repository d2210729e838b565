// lib_pool.cpp: pool.cu on the CPU emulator, exported for the Go tests of
// package cuda (TestPoolEmulated, the fake driver), which load the shared
// library built from the lib_*.cpp files with purego and launch kernels
// through it.
#include "cuda_emu.h"
#include "../pool.cu"

EMU_EXPORT(maxpool2d_f32)
EMU_EXPORT(maxpool2d_back_f32)
EMU_EXPORT(adaptive_avgpool2d_f32)
EMU_EXPORT(adaptive_avgpool2d_back_f32)
