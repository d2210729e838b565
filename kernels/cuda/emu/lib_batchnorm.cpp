// lib_batchnorm.cpp: batchnorm.cu on the CPU emulator, exported for the Go
// tests of package cuda (TestBatchNormEmulated, the fake driver), which
// load the shared library built from the lib_*.cpp files with purego and
// launch kernels through it.
#include "cuda_emu.h"
#include "../batchnorm.cu"

EMU_EXPORT(bn_stats_f32)
EMU_EXPORT(bn_stats_finish_f32)
EMU_EXPORT(bn_eval_stats_f32)
EMU_EXPORT(bn_normalize_f32)
EMU_EXPORT(bn_back_sums_f32)
EMU_EXPORT(bn_back_sums_finish_f32)
EMU_EXPORT(bn_back_dx_f32)
