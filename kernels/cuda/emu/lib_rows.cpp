// lib_rows.cpp: rows.cu on the CPU emulator, exported for the Go tests of
// package cuda (TestRowsEmulated, the fake driver), which load the shared
// library built from the lib_*.cpp files with purego and launch kernels
// through it.
#include "cuda_emu.h"
#include "../rows.cu"

EMU_EXPORT(softmax_f32)
EMU_EXPORT(log_softmax_f32)
EMU_EXPORT(softmax_back_f32)
EMU_EXPORT(log_softmax_back_f32)
EMU_EXPORT(l2norm_f32)
EMU_EXPORT(l2norm_back_f32)
EMU_EXPORT(cross_entropy_f32)
EMU_EXPORT(rows_mean_f64)
EMU_EXPORT(cross_entropy_back_f32)
