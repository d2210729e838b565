// lib_contrastive.cpp: contrastive.cu on the CPU emulator, exported for the
// Go tests of package cuda (TestContrastiveEmulated, the fake driver),
// which load the shared library built from the lib_*.cpp files with purego
// and launch kernels through it.
#include "cuda_emu.h"
#include "../contrastive.cu"

EMU_EXPORT(contrast_rows_f32)
EMU_EXPORT(contrast_scale_f32)
