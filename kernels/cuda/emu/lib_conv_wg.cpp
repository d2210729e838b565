// lib_conv_wg.cpp: conv_wg.cu on the CPU emulator, exported for the Go
// tests of package cuda (the backend's TF32 convolutions under TCWG
// through cudatest.Emulator and the fake driver).
#include "cuda_emu.h"
#include "../conv_wg.cu"

EMU_EXPORT(conv_fwd_wg_tf32)
EMU_EXPORT(conv_fwd_wg64_tf32)
EMU_EXPORT(conv_dgrad_wg_tf32)
EMU_EXPORT(conv_dgrad_wg64_tf32)
EMU_EXPORT(conv_wgrad_wg_tf32)
EMU_EXPORT(conv_wgrad_wg64_tf32)
EMU_EXPORT(conv_dgradp_wg_tf32)
EMU_EXPORT(conv_dgradp_wg64_tf32)
