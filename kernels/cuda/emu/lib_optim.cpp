// lib_optim.cpp: optim.cu on the CPU emulator, exported for the Go tests
// of package cuda (TestOptimizerEmulated, the fake driver), which load the
// shared library built from the lib_*.cpp files with purego and launch
// kernels through it.
#include "cuda_emu.h"
#include "../optim.cu"

EMU_EXPORT(sgd_step_f32)
EMU_EXPORT(lars_norms_f32)
EMU_EXPORT(lars_step_f32)
EMU_EXPORT(adam_step_f32)
EMU_EXPORT(ema_f32)
EMU_EXPORT(sgd_multi_f32)
EMU_EXPORT(adam_multi_f32)
EMU_EXPORT(ema_multi_f32)
EMU_EXPORT(zero_multi_f32)
