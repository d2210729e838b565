// lib_conv_tc_rl.cpp: conv_tc_rl.cu on the CPU emulator, exported for the Go
// tests of package cuda (the backend's convolutions in precisions tf32 and
// bf16 through cudatest.Emulator).
#include "cuda_emu.h"
#include "../conv_tc_rl.cu"

EMU_EXPORT(conv_fwd_tc_tf32rl)
EMU_EXPORT(conv_fwd_tc64_tf32rl)
EMU_EXPORT(conv_dgrad_tc_tf32rl)
EMU_EXPORT(conv_dgrad_tc64_tf32rl)
EMU_EXPORT(conv_wgrad_tc_tf32rl)
EMU_EXPORT(conv_wgrad_tc64_tf32rl)
EMU_EXPORT(conv_dgradp_tc_tf32rl)
EMU_EXPORT(conv_dgradp_tc64_tf32rl)
