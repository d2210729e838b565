// lib_conv.cpp: conv.cu on the CPU emulator, exported for the Go tests of
// package cuda (TestConvEmulated), which load the shared library built from
// the lib_*.cpp files with purego and launch kernels through it.
#include "cuda_emu.h"
#include "../conv.cu"

EMU_EXPORT(conv_fwd_f32)
EMU_EXPORT(conv_dgrad_f32)
EMU_EXPORT(conv_wgrad_f32)
EMU_EXPORT(conv_wgrad_reduce_f32)
EMU_EXPORT(conv_bias_grad_f32)
EMU_EXPORT(conv_fwd_wide_f32)
EMU_EXPORT(conv_dgrad_wide_f32)
EMU_EXPORT(conv_wgrad_wide_f32)
EMU_EXPORT(conv_wt_f32)
EMU_EXPORT(conv_col2im_f32)
EMU_EXPORT(conv_col2im_taps1_f32)
EMU_EXPORT(conv_col2im_taps2_f32)
EMU_EXPORT(conv_col2im_taps3_f32)
EMU_EXPORT(conv_col2im_taps4_f32)
EMU_EXPORT(conv_wt_phase_f32)
EMU_EXPORT(conv_phase_gather_f32)
