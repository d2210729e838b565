// lib_linear.cpp: linear.cu on the CPU emulator, exported for the Go tests of
// package cuda (the emulated and fake-driver tests), which load the shared
// library built from the lib_*.cpp files with purego and launch kernels
// through it.
#include "cuda_emu.h"
#include "../linear.cu"

EMU_EXPORT(linear_bias_f32)
EMU_EXPORT(linear_bias_grad_f32)
