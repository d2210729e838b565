// lib_losses.cpp: losses.cu on the CPU emulator, exported for the Go tests
// of package cuda (TestLossesEmulated, the fake driver), which load the
// shared library built from the lib_*.cpp files with purego and launch
// kernels through it.
#include "cuda_emu.h"
#include "../losses.cu"

EMU_EXPORT(loss_total_f64)
EMU_EXPORT(byol_rows_f32)
EMU_EXPORT(byol_grad_f32)
EMU_EXPORT(barlow_norm_f32)
EMU_EXPORT(barlow_loss_f32)
EMU_EXPORT(barlow_grad_f32)
