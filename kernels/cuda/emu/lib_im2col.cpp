// lib_im2col.cpp: im2col.cu on the CPU emulator, exported for the Go test
// TestConformanceEmulated (package cuda), which loads the shared library
// built from the lib_*.cpp files with purego and launches kernels through it.
#include "cuda_emu.h"
#include "../im2col.cu"

EMU_EXPORT(im2col_f32)
EMU_EXPORT(col2im_f32)
