// lib_index.cpp: index.cu on the CPU emulator, exported for the Go tests of
// package cuda (the emulated and fake-driver tests), which load the shared
// library built from the lib_*.cpp files with purego and launch kernels
// through it.
#include "cuda_emu.h"
#include "../index.cu"

EMU_EXPORT(take_along_f32)
EMU_EXPORT(put_along_f32)
